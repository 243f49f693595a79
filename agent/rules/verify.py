"""Rule 6: block 三 as an editor writes it — one question an item, the ones that matter first.

Candidates are the figures two documents state differently (`agent.rules.edit`), the open
items that tonight did not settle, arXiv IDs a source cites that cannot exist, and the model's
notes. Each is its own item: several doubts about one increment are several items, ranked, never
one item of clauses. A note asking what a dispute or an open item already asks is folded into it.

What is carried depends on where it was raised (`OpenKind`): the living document's open questions
and the disputes of earlier evenings stay until a document settles them; a briefing's own doubt is
carried for `carry_evenings` at most when its risk is 高, a lesser one to the next evening only, or an
evening's lesser doubts would fill 三 for days; a question naming an arXiv ID that cannot exist is
said the evening it appears and not carried. Within the budget (`max_to_verify`), disputes, carried
items and impossible IDs come before the model's notes of equal risk or one level above; a carried
item the budget drops is said in 五.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from agent.core.arxiv import find_ids, validate
from agent.core.dates import read_day
from agent.core.text import similarity
from agent.plan.anchors import AnchorRegistry, OpenItem
from agent.rules.claims import Candidate, Finding, Selection
from agent.rules.edit import NumberConflict
from agent.rules.merge import short_subject
from schemas.briefing import VerifyItem
from schemas.extraction import VerifyNote

RISK_RANK = {"高": 2, "中": 1, "低": 0}
CARRIED_RISK = "高"  # the risk at which a briefing's own doubt is carried for `carry_evenings`
LESSER_EVENINGS = 1  # a lesser doubt is asked again the next evening (an editor's follow-up), then let go
SAME_QUESTION = 0.5
Kind = Literal["dispute", "carried", "model", "invalid id"]


@dataclass(frozen=True)
class InvalidId:
    """A source cites an arXiv ID that cannot exist: the paper's real ID is worth asking for."""

    arxiv_id: str
    subject: str  # the claim's title
    doc: str
    risk: str = "低"


Note = VerifyNote | VerifyItem | NumberConflict | InvalidId


@dataclass(frozen=True)
class Doubt:
    """One item of block 三: one question."""

    subject: str  # what it is about: its increment's short subject, or the carried item's title
    note: Note
    kind: Kind
    stars: int  # of its increment; 0 for a carried item, whose increment was another evening's
    position: int  # its increment's place in 二; later for questions with no increment tonight
    doc: str
    carried: str = ""  # 'M-D' it was first raised, for a carried item
    seq: int = 0  # its place among its increment's questions, riskiest first

    @property
    def risk(self) -> str:
        return self.note.risk

    def rank(self) -> tuple[int, int, int, int, int]:
        """Riskier first. A dispute, a carried item or an impossible ID weighs one risk level more
        than a model's note, and comes first at equal weight: an editor keeps those promises
        before taking up new doubts. Then each increment's first question before any second."""
        own = self.kind != "model"
        return (-(RISK_RANK.get(self.risk, -1) + own), 0 if own else 1, self.seq, -self.stars, self.position)


@dataclass(frozen=True)
class Stopped:
    """A carried item that leaves 三 unverified tonight: too old, or past the budget."""

    title: str
    source: str
    since: str  # 'M-D' it was first raised
    why: Literal["aged", "budget"]
    evenings: int = 0  # for 'aged': evenings it was carried
    budget: int = 0  # for 'budget': the size of 三


def to_verify(
    sel: Selection,
    registry: AnchorRegistry,
    rejected: Sequence[tuple[Candidate, str]],
    resolved: set[str],
    date: dt.date,
    *,
    budget: int,
    carry_evenings: int,
) -> tuple[list[Doubt], list[Stopped], list[NumberConflict], list[Finding]]:
    """At most `budget` items, ranked, in display order; the rest dropped with a finding, and a
    carried item among them said in 五 (`Stopped`), since leaving 三 ends its carrying. Also the
    disputes raised, and the findings."""
    carried, stopped, findings = _carried(registry, resolved, date, carry_evenings)
    doubts, conflicts, f = _doubts(sel, [d.subject for d in carried])
    findings += f
    doubts += _invalid(sel, rejected, len(sel.increments))
    ranked = sorted([*doubts, *(replace(d, position=10_000 + i) for i, d in enumerate(carried))], key=Doubt.rank)
    kept, over = ranked[:budget], ranked[budget:]
    for k, d in enumerate(over, budget + 1):
        why = f"ranked {k} ({d.risk} risk, {d.stars}★) past the budget of {budget}"
        findings.append(Finding("to-verify", _title(d), d.doc, "dropped by budget", why))
        if d.carried:
            stopped.append(Stopped(d.subject, d.doc, d.carried, "budget", budget=budget))
    return sorted(kept, key=lambda d: (d.position, d.seq)), stopped, conflicts, findings


def evenings_since(origin: str, date: dt.date) -> int | None:
    """Evenings from 'M-D' (the briefing that first raised an item) to `date`, the day read as
    `read_day` reads every briefing date; None if unreadable. An origin after `date` — an earlier
    evening re-run against a briefing written since — counts 0: the item is no older than tonight's."""
    first = read_day(origin, date)
    return None if first is None else max(0, (date - first).days)


def _carried(
    registry: AnchorRegistry, resolved: set[str], date: dt.date, carry_evenings: int
) -> tuple[list[Doubt], list[Stopped], list[Finding]]:
    """The open items tonight did not settle and 三 still carries (`_not_carried` says which are
    not). A doubt older than `carry_evenings` is stopped; one whose origin is unreadable, or after
    tonight (`evenings_since` counts it 0), is carried: nothing says it has aged. The living
    document's questions and disputes do not age: they wait for a document to settle them."""
    carried: list[Doubt] = []
    stopped: list[Stopped] = []
    findings: list[Finding] = []
    for o in registry.open_items:
        if o.item.title in resolved:
            continue
        if why := _not_carried(o, date):
            findings.append(Finding("carry", o.item.title, o.source, "not carried", why))
            continue
        age = evenings_since(o.origin, date)
        if o.kind == "doubt" and age is not None and age > carry_evenings:
            why = f"open since {o.origin}, {age} evenings"
            findings.append(Finding("to-verify", o.item.title, o.source, "dropped unverified", why))
            stopped.append(Stopped(o.item.title, o.source, o.origin, "aged", evenings=age))
            continue
        why = f"open since {o.origin}" + ("" if o.kind == "doubt" else f" ({_RAISED_BY[o.kind]})")
        findings.append(Finding("carry", o.item.title, o.source, "carried over", why))
        carried.append(Doubt(o.item.title, o.item, "carried", 0, 0, o.source, o.origin))
    return carried, stopped, findings


_RAISED_BY = {"living": "the living document holds it open", "dispute": "two documents disagree"}


def _not_carried(o: OpenItem, date: dt.date) -> str:
    """Why an open item is not carried tonight, or '': a briefing's doubt below `CARRIED_RISK` past
    the next evening, or
    a question (not the living document's) naming an arXiv ID that could not exist the evening it
    was raised — that evening said so, and no later one can find the paper by it."""
    if o.kind != "living":
        raised = read_day(o.origin, date) or date
        for m in find_ids(f"{o.item.title} {o.item.problem}"):
            if not validate(m.id, not_after=raised).ok:
                return f"names arXiv {m.id.display}, which cannot exist: said on {o.origin}, not carried"
    age = evenings_since(o.origin, date)
    if o.kind == "doubt" and o.item.risk != CARRIED_RISK and age is not None and age > LESSER_EVENINGS:
        risk = o.item.risk or "unrated"
        return (
            f"a {risk}-risk doubt of {o.origin}: a briefing's own doubt is carried past the next evening only at "
            f"{CARRIED_RISK} risk"
        )
    return ""


def _doubts(sel: Selection, open_titles: list[str]) -> tuple[list[Doubt], list[NumberConflict], list[Finding]]:
    """Each increment's questions, one item each, riskiest first; a note asking what an open item,
    a dispute or another note asks is folded into it."""
    doubts: list[Doubt] = []
    conflicts: list[NumberConflict] = []
    findings: list[Finding] = []
    for pos, g in enumerate([*sel.increments, *sel.secondary]):
        subject, doc = short_subject(g.headline), g.lead.doc.path
        mine: list[Doubt] = []
        for conflict in g.disputes:
            says = ", ".join(f"{s.doc} says {' / '.join(s.values)}{conflict.unit}" for s in conflict.sides)
            why = f"{conflict.measure}: {says}"
            findings.append(Finding("contradiction", conflict.subject, doc, "to verify", why))
            conflicts.append(conflict)
            mine.append(Doubt(subject, conflict, "dispute", g.stars, pos, doc, seq=len(mine)))
        for c in g.members:
            for v in c.claim.to_verify:
                if same := _asked(v, open_titles, mine):
                    why = f"same question as {same!r}"
                    findings.append(Finding("to-verify", v.title, c.doc.path, "folded", why, c.ref, same))
                else:
                    mine.append(Doubt(subject, v, "model", g.stars, pos, c.doc.path, seq=len(mine)))
        # an increment's first question is its weightiest: its riskiest, the evening's own first
        mine = [replace(d, seq=i) for i, d in enumerate(sorted(mine, key=lambda d: (*d.rank()[:2], d.seq)))]
        if pos >= len(sel.increments):
            why = f"about {subject!r}, which is not an increment tonight"
            findings += [Finding("to-verify", _title(d), d.doc, "dropped", why) for d in mine]
            continue
        doubts += mine
    return doubts, conflicts, findings


def _asked(v: VerifyNote, open_titles: list[str], mine: list[Doubt]) -> str:
    """The question `v` repeats: an open item, a dispute whose figures it names, or another note."""
    for t in open_titles:
        if similarity(v.title, t) >= SAME_QUESTION:
            return t
    for d in mine:
        if isinstance(d.note, NumberConflict) and (d.note.states(v.title) or d.note.states(v.problem)):
            return _title(d)
        if isinstance(d.note, VerifyNote) and similarity(v.title, d.note.title) >= SAME_QUESTION:
            return d.note.title
    return ""


def _invalid(sel: Selection, rejected: Sequence[tuple[Candidate, str]], after: int) -> list[Doubt]:
    """One low-risk question per impossible arXiv ID, beside its claim's increment if any."""
    where = {c.ref: i for i, g in enumerate(sel.increments) for c in g.members}
    first: dict[str, Candidate] = {}
    for c, arxiv_id in rejected:
        first.setdefault(arxiv_id, c)
    out: list[Doubt] = []
    for arxiv_id, c in first.items():
        subject, pos = short_subject(c.claim.title), where.get(c.ref, after)
        note = InvalidId(arxiv_id, subject, c.doc.path)
        out.append(Doubt(subject, note, "invalid id", c.claim.stars, pos, c.doc.path, seq=99))
    return out


def _title(d: Doubt) -> str:
    n = d.note
    if isinstance(n, NumberConflict):
        return f"{d.subject} {n.measure}"
    if isinstance(n, InvalidId):
        return f"{d.subject} arXiv {n.arxiv_id}"
    return n.title
