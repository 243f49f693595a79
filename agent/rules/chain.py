"""The rule chain over one evening: extractions and anchors in, decisions out, as typed facts.

It runs the rules of `agent.rules` in order, then decides block 三 (which doubts an editor sees,
which carried items stop being carried). What it returns is what was decided — the selection,
what anchors already cover, what tonight settled, the to-verify items in display order, the
figures that disagree, every finding — never a sentence: `agent.rules.layout` words it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from agent.core.labels import ZH, Labels
from agent.core.text import similarity
from agent.plan.anchors import AnchorRegistry
from agent.rules import (
    Candidate,
    DocResult,
    Finding,
    Group,
    NumberConflict,
    Resolved,
    Selection,
    check_arxiv,
    dedupe,
    ground,
    merge,
    number_conflicts,
    reconcile_sections,
    relevance,
    resolve,
    select,
    short_subject,
)
from schemas.briefing import VerifyItem
from schemas.documents import SourceDoc
from schemas.extraction import VerifyNote


@dataclass(frozen=True)
class Limits:
    min_increments: int = 3
    max_increments: int = 8
    min_stars: int = 4
    secondary_min_stars: int = 3
    max_to_verify: int = 6  # items block 三 may hold
    carry_evenings: int = 3  # evenings an open item is carried before it is dropped unverified


@dataclass(frozen=True)
class Scope:
    """What the chain works on: one evening's answers, what was known before it, and its limits."""

    results: Sequence[DocResult]
    registry: AnchorRegistry
    baselines: Sequence[SourceDoc]
    topic: str
    date: dt.date
    window: str
    limits: Limits

    @property
    def sources(self) -> list[DocResult]:
        """The documents increments may come from: all but other topics' briefings."""
        return [r for r in self.results if r.doc.kind != "adjacent"]


RISK_RANK = {"高": 2, "中": 1, "低": 0}
Note = VerifyNote | VerifyItem | NumberConflict


@dataclass(frozen=True)
class Doubt:
    """One item of block 三: the notes about one subject, or one carried item."""

    subject: str
    notes: tuple[Note, ...]
    stars: int  # of its increment; 0 for a carried item, whose increment was another evening's
    position: int  # its increment's place in 二 (carried items come after)
    doc: str
    carried: str = ""  # 'M-D' it was first raised, for a carried item

    @property
    def risk(self) -> str:
        return max((n.risk for n in self.notes), key=lambda r: RISK_RANK.get(r, -1))

    def rank(self) -> tuple[int, int, int, int]:
        return (-RISK_RANK.get(self.risk, -1), -self.stars, 1 if self.carried else 0, self.position)


@dataclass(frozen=True)
class Stopped:
    """A carried item that leaves 三 unverified tonight: too old, or past the budget."""

    title: str
    source: str
    since: str  # 'M-D' it was first raised
    why: Literal["aged", "budget"]
    evenings: int = 0  # for 'aged': evenings it was carried
    budget: int = 0  # for 'budget': the size of 三


@dataclass(frozen=True)
class RuleOutcome:
    """Everything the chain decided about one evening."""

    scope: Scope
    selection: Selection
    covered: list[Candidate]  # anchored claims with nothing new, for 五
    resolved: list[Resolved]  # open items tonight settled
    to_verify: list[Doubt]  # block 三, in display order
    stopped: list[Stopped]  # carried items that stop being carried, for 五
    conflicts: list[NumberConflict]  # figures two documents state differently (in 三 or dropped)
    relevance: dict[str, str]  # document path -> its 一 label
    findings: list[Finding]

    @property
    def supplements(self) -> list[Group]:
        """Increments that add to an anchor rather than start a subject."""
        return [g for g in self.selection.increments if g.lead.relation == "supplement"]


def run_chain(scope: Scope, labels: Labels = ZH) -> RuleOutcome:
    """Every rule in order; each decision on the way is a finding. `labels` words only the one
    finding whose detail is the briefing's own sentence (a contradiction)."""
    findings = _unread(scope.results)
    cands, f = ground(scope.sources)
    findings += f
    rel, f = _relevance(scope.results, cands)
    findings += f
    cands, f = check_arxiv(cands, scope.date)
    findings += f
    kept, covered, f = dedupe(cands, scope.registry)
    findings += f
    groups, f = merge(kept)
    findings += f
    groups, f = reconcile_sections(groups, scope.registry.sections)
    findings += f
    lim = scope.limits
    sel = select(
        groups,
        min_stars=lim.min_stars,
        secondary_min_stars=lim.secondary_min_stars,
        max_increments=lim.max_increments,
    )
    findings += sel.findings
    resolved, f = resolve(scope.sources, scope.registry)
    findings += f
    verify = _to_verify(sel, scope, {x.title for x in resolved}, labels)
    findings += verify.findings
    return RuleOutcome(scope, sel, covered, resolved, verify.kept, verify.stopped, verify.conflicts, rel, findings)


def _unread(results: Sequence[DocResult]) -> list[Finding]:
    """Failed extractions, and the claims of other topics' briefings, which are only references."""
    findings = [
        Finding("extraction", r.doc.name, r.doc.path, "failed", r.error) for r in results if r.extraction is None
    ]
    for r in results:
        if r.doc.kind == "adjacent" and r.extraction:
            findings += [
                Finding(
                    "adjacent",
                    c.title,
                    r.doc.path,
                    "reference only",
                    "a same-evening briefing of another topic is not a source of increments",
                )
                for c in r.extraction.claims
            ]
    return findings


def _relevance(results: Sequence[DocResult], cands: list[Candidate]) -> tuple[dict[str, str], list[Finding]]:
    on_topic: dict[str, int] = {}
    for c in cands:
        on_topic[c.doc.path] = on_topic.get(c.doc.path, 0) + 1
    labels_of: dict[str, str] = {}
    findings: list[Finding] = []
    for r in results:
        if r.extraction is not None:
            labels_of[r.doc.path], finding = relevance(r.doc, r.extraction, on_topic.get(r.doc.path, 0))
            findings += [finding] if finding else []
    return labels_of, findings


# --- block 三 -------------------------------------------------------------------------------------


def evenings_since(origin: str, date: dt.date) -> int | None:
    """Evenings from 'M-D' (the briefing that first raised an item) to `date`; None if unreadable."""
    m = re.fullmatch(r"\s*(\d{1,2})-(\d{1,2})\s*", origin)
    if not m:
        return None
    try:
        first = dt.date(date.year, int(m[1]), int(m[2]))
    except ValueError:
        return None
    if first > date:  # raised in December, read in January
        first = first.replace(year=date.year - 1)
    return (date - first).days


@dataclass(frozen=True)
class _Verify:
    kept: list[Doubt]
    stopped: list[Stopped]
    conflicts: list[NumberConflict]
    findings: list[Finding]


def _to_verify(sel: Selection, scope: Scope, resolved: set[str], labels: Labels) -> _Verify:
    """Block 三 as an editor can act on it: at most `limits.max_to_verify` items.

    Candidates are the model's notes, figures that disagree between documents, and the open
    items of the last briefing that tonight did not settle. Notes about one increment become
    one item; notes about a claim that is not an increment tonight are dropped (nothing in 二
    to act on); carried items older than `limits.carry_evenings` evenings are dropped
    unverified, and 五 says so. The rest are ranked by risk, then by their increment's stars,
    and what does not fit the budget is dropped — a finding for each, and a 五 note for a
    carried item, since leaving 三 ends its carrying."""
    carried, stopped, findings = _carried(scope, resolved)
    doubts, conflicts, f = _doubts(sel, [d.subject for d in carried], labels)
    findings += f
    budget = scope.limits.max_to_verify
    ranked = sorted([*doubts, *(replace(d, position=len(doubts) + i) for i, d in enumerate(carried))], key=Doubt.rank)
    kept, over = ranked[:budget], ranked[budget:]
    for k, d in enumerate(over, budget + 1):
        why = f"ranked {k} ({d.risk} risk, {d.stars}★) past the budget of {budget}"
        findings.append(Finding("to-verify", d.subject, d.doc, "dropped by budget", why))
        if d.carried:
            stopped.append(Stopped(d.subject, d.doc, d.carried, "budget", budget=budget))
    shown = sorted(kept, key=lambda d: (1 if d.carried else 0, d.position))
    return _Verify(shown, stopped, conflicts, findings)


def _carried(scope: Scope, resolved: set[str]) -> tuple[list[Doubt], list[Stopped], list[Finding]]:
    """The last briefing's open items tonight did not settle: carried on, or stopped when too old."""
    carried: list[Doubt] = []
    stopped: list[Stopped] = []
    findings: list[Finding] = []
    for o in scope.registry.open_items:
        if o.item.title in resolved:
            continue
        age = evenings_since(o.origin, scope.date)
        if age is not None and age > scope.limits.carry_evenings:
            why = f"open since {o.origin}, {age} evenings"
            findings.append(Finding("to-verify", o.item.title, o.source, "dropped unverified", why))
            stopped.append(Stopped(o.item.title, o.source, o.origin, "aged", evenings=age))
            continue
        findings.append(Finding("carry", o.item.title, o.source, "carried over", f"open since {o.origin}"))
        carried.append(Doubt(o.item.title, (o.item,), 0, 0, o.source, o.origin))
    return carried, stopped, findings


def _doubts(
    sel: Selection, open_titles: list[str], labels: Labels
) -> tuple[list[Doubt], list[NumberConflict], list[Finding]]:
    """Tonight's notes and disagreeing figures, one doubt per increment; a question already
    open (or already asked by another member of the group) is folded into it."""
    doubts: list[Doubt] = []
    conflicts: list[NumberConflict] = []
    findings: list[Finding] = []
    for pos, g in enumerate([*sel.increments, *sel.secondary]):
        subject, doc = short_subject(g.lead.claim.title), g.lead.doc.path
        mine: list[Note] = []
        for c in g.members:
            for v in c.claim.to_verify:
                same = next(
                    (
                        t
                        for t in [*open_titles, *(n.title for n in mine if not isinstance(n, NumberConflict))]
                        if similarity(v.title, t) >= 0.5
                    ),
                    None,
                )
                if same is not None:
                    findings.append(Finding("to-verify", v.title, c.doc.path, "merged", f"same question as {same!r}"))
                else:
                    mine.append(v)
        for conflict in number_conflicts(g):
            findings.append(Finding("contradiction", conflict.subject, doc, "to verify", conflict.words(labels)))
            conflicts.append(conflict)
            mine.append(conflict)
        if not mine:
            continue
        if pos >= len(sel.increments):
            why = f"about {subject!r}, which is not an increment tonight"
            findings += [Finding("to-verify", _title(v, labels), doc, "dropped", why) for v in mine]
            continue
        if len(mine) > 1:
            findings.append(Finding("to-verify", subject, doc, "merged", f"{len(mine)} notes about one increment"))
        doubts.append(Doubt(subject, tuple(mine), g.stars, pos, doc))
    return doubts, conflicts, findings


def _title(n: Note, labels: Labels) -> str:
    return labels.conflict_title.format(subject=short_subject(n.subject)) if isinstance(n, NumberConflict) else n.title
