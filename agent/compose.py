"""Rules → Briefing: runs the rule chain and lays its results out as the seven blocks.

Everything here is derived from the extractions and the anchors; nothing is asked of the model.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent.anchors import AnchorRegistry
from agent.arxiv import find_ids, key_of
from agent.labels import ZH, Labels
from agent.rules import (
    REL_RANK,
    Candidate,
    DocResult,
    Finding,
    Group,
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
)
from agent.text import similarity
from schemas.briefing import (
    ArxivRow,
    Briefing,
    Credibility,
    Increment,
    KeyPoint,
    NoIncrementNote,
    PriorityRow,
    SourceRef,
    SourceRow,
    StatusSummary,
    VerifyItem,
)
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
class Composed:
    briefing: Briefing
    findings: list[Finding]


def compose(
    results: Sequence[DocResult],
    registry: AnchorRegistry,
    baselines: Sequence[SourceDoc],
    *,
    topic: str,
    date: dt.date,
    window: str,
    limits: Limits,
    footer: str = "",
    labels: Labels = ZH,
) -> Composed:
    """Run the rule chain over one evening's extractions and lay the result out as the seven
    blocks; every decision on the way is returned as a finding."""
    findings: list[Finding] = []
    for r in results:
        if r.extraction is None:
            findings.append(Finding("extraction", r.doc.name, r.doc.path, "failed", r.error))
    sources = [r for r in results if r.doc.kind != "adjacent"]
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
    cands, f = ground(sources)
    findings += f
    on_topic: dict[str, int] = {}
    for c in cands:
        on_topic[c.doc.path] = on_topic.get(c.doc.path, 0) + 1
    labels_of: dict[str, str] = {}
    for r in results:
        if r.extraction is not None:
            labels_of[r.doc.path], finding = relevance(r.doc, r.extraction, on_topic.get(r.doc.path, 0))
            findings += [finding] if finding else []
    cands, f = check_arxiv(cands, date)
    findings += f
    kept, covered, f = dedupe(cands, registry)
    findings += f
    groups, f = merge(kept)
    findings += f
    groups, f = reconcile_sections(groups, registry.sections)
    findings += f
    sel = select(
        groups,
        min_stars=limits.min_stars,
        secondary_min_stars=limits.secondary_min_stars,
        max_increments=limits.max_increments,
    )
    findings += sel.findings

    increments = [_increment(i, g, topic) for i, g in enumerate(sel.increments, 1)]
    resolved, f = resolve(sources, registry)
    findings += f
    verify, dropped_notes, f = _to_verify(sel, registry, {x.title for x in resolved}, limits, date, labels)
    findings += f
    rows, new_keys = _arxiv_rows(sel, registry, results, labels)
    n = len(increments)
    if n < limits.min_increments:  # said plainly; select never pads and never exceeds the maximum
        note = f"低于 {limits.min_increments} 条目标下限：今晚仅 {n} 条合格增量，未用弱条目补凑"
    else:
        note = f"在 {limits.min_increments}-{limits.max_increments} 目标区间内"
    continued = sum(1 for r in rows if not r.relation.startswith(labels.arxiv_new_relation))
    briefing = Briefing(
        topic=topic,
        date=date,
        summary=StatusSummary(
            increment_count=n,
            count_note=note,
            window=window,
            headlines=[i.title for i in increments],
            new_arxiv=new_keys,
            continued_arxiv=str(continued),
        ),
        sources=_source_rows(results, baselines, registry, sel, topic, date, labels_of),
        increments=increments,
        to_verify=verify,
        arxiv_rows=rows,
        no_increment_intro=labels.no_increment_intro.format(topic=topic),
        no_increment=[*_no_increment(results, sel, covered, resolved, topic), *dropped_notes],
        priorities=_priorities(sel, labels),
        footer=footer,
    )
    return Composed(briefing, findings)


# --- blocks ------------------------------------------------------------------------------------------


def _increment(number: int, g: Group, topic: str) -> Increment:
    lead = g.lead.claim
    sources = [SourceRef(ref=c.doc.path, section=c.claim.section_ref) for c in g.members]
    sources += [SourceRef(ref=u) for c in g.members for u in c.claim.urls]
    arx = g.arxiv
    sources += [SourceRef(ref=f"arXiv {a.arxiv_id}") for a in arx]
    points: list[KeyPoint] = []
    seen: set[str] = set()
    for c in g.members:
        for p in c.claim.key_points:
            if p.text not in seen:
                seen.add(p.text)
                points.append(p)
    relation = lead.relation_note
    anchor = g.lead.anchor
    if g.lead.relation == "supplement" and anchor is not None and not _says_supplement(relation, anchor.when):
        relation = f"{relation}（补充 {anchor.when} {topic} 锚定：{anchor.label[:30]}）"
    reasons = "；".join(dict.fromkeys(c.claim.credibility_reason for c in g.members if c.claim.credibility_reason))
    return Increment(
        number=number,
        title=lead.title,
        stars=g.stars,
        sources=_unique_refs(sources),
        arxiv_line=f"arXiv:{arx[0].arxiv_id} {arx[0].title}" if arx else "",
        key_points=points,
        credibility=Credibility(level=g.credibility, reason=reasons),
        relation=relation,
        suggested_section=lead.suggested_section,
    )


def _says_supplement(note: str, when: str) -> bool:
    """Whether the model's own note already says which anchor this supplements. Naming the date
    is not enough ("9-20 锚点只有摘要；本条补上…" does not say 补充): the briefing must state the
    relation itself, or tomorrow's reader sees an anchored paper presented as if it were new."""
    return when in note and "补充" in note


def _unique_refs(refs: list[SourceRef]) -> list[SourceRef]:
    seen: set[tuple[str, str]] = set()
    out = []
    for r in refs:
        if (r.ref, r.section) not in seen:
            seen.add((r.ref, r.section))
            out.append(r)
    return out


RISK_RANK = {"高": 2, "中": 1, "低": 0}


@dataclass(frozen=True)
class _Doubt:
    """A candidate for block 三: the notes about one subject, or one carried item."""

    subject: str
    notes: tuple[VerifyNote | VerifyItem, ...]
    stars: int  # of its increment; 0 for a carried item, whose increment was another evening's
    position: int  # its increment's place in 二 (carried items come after)
    doc: str
    carried: str = ""  # 'M-D' it was first raised, for a carried item

    @property
    def risk(self) -> str:
        return max((n.risk for n in self.notes), key=lambda r: RISK_RANK.get(r, -1))

    def rank(self) -> tuple[int, int, int, int]:
        return (-RISK_RANK.get(self.risk, -1), -self.stars, 1 if self.carried else 0, self.position)

    def item(self, number: int, labels: Labels) -> VerifyItem:
        """One item an editor can act on: the subject named once, then each question."""
        if self.carried or (len(self.notes) == 1 and names_subject(self.notes[0].title, self.subject)):
            title, problem, suggestion = self.notes[0].title, self.notes[0].problem, self.notes[0].suggestion
        else:
            title = self.subject + labels.subject_sep + labels.list_sep.join(n.title for n in self.notes)
            if len(self.notes) == 1:
                problem, suggestion = self.notes[0].problem, self.notes[0].suggestion
            else:
                problem = labels.list_sep.join(
                    f"{n.title}{labels.subject_sep}{n.problem.rstrip('。')}" for n in self.notes
                )
                suggestion = labels.list_sep.join(n.suggestion.rstrip("。") for n in self.notes)
        return VerifyItem(
            number=number,
            title=title,
            risk=self.risk,
            carried_from=self.carried,
            problem=problem,
            suggestion=suggestion,
        )


def names_subject(title: str, subject: str) -> bool:
    """Whether a note's title already says what it is about (shares a name with the subject, or
    reads much like it), so that prefixing the subject would only repeat it."""
    names = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*", subject) if len(w) > 1}
    mine = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*", title) if len(w) > 1}
    return bool(names & mine) or similarity(title, subject) >= 0.5


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


def _to_verify(
    sel: Selection, reg: AnchorRegistry, resolved: set[str], limits: Limits, date: dt.date, labels: Labels
) -> tuple[list[VerifyItem], list[NoIncrementNote], list[Finding]]:
    """Block 三 as an editor can act on it: at most `limits.max_to_verify` items.

    Candidates are the model's notes, figures that disagree between documents, and the open
    items of the last briefing that tonight did not settle. Notes about one increment become
    one item; notes about a claim that is not an increment tonight are dropped (nothing in 二
    to act on); carried items older than `limits.carry_evenings` evenings are dropped
    unverified, and 五 says so. The rest are ranked by risk, then by their increment's stars,
    and what does not fit the budget is dropped — a finding for each, and a 五 note for a
    carried item, since leaving 三 ends its carrying."""
    findings: list[Finding] = []
    notes: list[NoIncrementNote] = []
    open_items = [o for o in reg.open_items if o.item.title not in resolved]
    carried: list[_Doubt] = []
    for o in open_items:
        age = evenings_since(o.origin, date)
        if age is not None and age > limits.carry_evenings:
            findings.append(
                Finding(
                    "to-verify", o.item.title, o.source, "dropped unverified", f"open since {o.origin}, {age} evenings"
                )
            )
            notes.append(
                NoIncrementNote(
                    source=o.source, note=labels.aged_out.format(title=o.item.title, since=o.origin, evenings=age)
                )
            )
            continue
        findings.append(Finding("carry", o.item.title, o.source, "carried over", f"open since {o.origin}"))
        carried.append(_Doubt(o.item.title, (o.item,), 0, 0, o.source, o.origin))
    open_titles = [d.subject for d in carried]

    doubts: list[_Doubt] = []
    for pos, g in enumerate([*sel.increments, *sel.secondary]):
        subject, doc = _short(g.lead.claim.title), g.lead.doc.path
        mine: list[VerifyNote | VerifyItem] = []
        for c in g.members:
            for v in c.claim.to_verify:
                same = next(
                    (t for t in [*open_titles, *(n.title for n in mine)] if similarity(v.title, t) >= 0.5), None
                )
                if same is not None:
                    findings.append(Finding("to-verify", v.title, c.doc.path, "merged", f"same question as {same!r}"))
                else:
                    mine.append(v)
        for conflict in number_conflicts(g):
            findings.append(Finding("contradiction", g.lead.claim.title, doc, "to verify", conflict))
            title = labels.conflict_title.format(subject=subject)
            mine.append(VerifyNote(title=title, risk="中", problem=conflict, suggestion=labels.conflict_suggestion))
        if not mine:
            continue
        if pos >= len(sel.increments):
            for v in mine:
                findings.append(
                    Finding(
                        "to-verify", v.title, doc, "dropped", f"about {subject!r}, which is not an increment tonight"
                    )
                )
            continue
        if len(mine) > 1:
            findings.append(Finding("to-verify", subject, doc, "merged", f"{len(mine)} notes about one increment"))
        doubts.append(_Doubt(subject, tuple(mine), g.stars, pos, doc))

    ranked = sorted([*doubts, *(replace(d, position=len(doubts) + i) for i, d in enumerate(carried))], key=_Doubt.rank)
    kept, over = ranked[: limits.max_to_verify], ranked[limits.max_to_verify :]
    for k, d in enumerate(over, limits.max_to_verify + 1):
        why = f"ranked {k} ({d.risk} risk, {d.stars}★) past the budget of {limits.max_to_verify}"
        findings.append(Finding("to-verify", d.subject, d.doc, "dropped by budget", why))
        if d.carried:
            note = labels.over_budget.format(title=d.subject, since=d.carried, budget=limits.max_to_verify)
            notes.append(NoIncrementNote(source=d.doc, note=note))
    shown = sorted(kept, key=lambda d: (1 if d.carried else 0, d.position))
    return [d.item(i, labels) for i, d in enumerate(shown, 1)], notes, findings


def _arxiv_rows(
    sel: Selection, reg: AnchorRegistry, results: Sequence[DocResult], labels: Labels
) -> tuple[list[ArxivRow], list[str]]:
    rows: list[ArxivRow] = []
    new_keys: list[str] = []
    for g in [*sel.increments, *sel.secondary]:
        for a in g.arxiv:
            key = key_of(a.arxiv_id) or a.arxiv_id
            if reg.arxiv(key) is not None or key in new_keys:
                continue
            new_keys.append(key)
            rows.append(
                ArxivRow(
                    arxiv_id=a.arxiv_id,
                    title=a.title,
                    credibility=g.credibility,
                    relation=f"{labels.arxiv_new_relation} → {g.lead.claim.suggested_section}",
                )
            )
    tonight = {m.id.key for r in results if r.doc.kind != "adjacent" for m in find_ids(r.doc.text)}
    for anchor in reg.anchors:
        if anchor.kind != "arxiv" or anchor.first_date is None or anchor.key in new_keys:
            continue
        again = f"；{labels.reconfirmed}" if anchor.key in tonight else ""
        rows.append(
            ArxivRow(
                arxiv_id=anchor.display_id or anchor.key,
                title=anchor.label,
                credibility=anchor.credibility or "高",
                relation=f"{anchor.when}{labels.anchored_suffix}{again}",
            )
        )
    return rows, new_keys


def _source_rows(
    results: Sequence[DocResult],
    baselines: Sequence[SourceDoc],
    reg: AnchorRegistry,
    sel: Selection,
    topic: str,
    date: dt.date,
    labels_of: dict[str, str],
) -> list[SourceRow]:
    """Grouped as the seed groups them: tonight's reports, the baselines (newest first), the
    adjacent briefings, one row for the paper cards, one for the queue."""
    rows = [_doc_row(r, labels_of) for r in results if r.doc.kind == "report"]
    for b in sorted(baselines, key=lambda d: d.path, reverse=True):
        subjects = [_short(a.label) for a in reg.anchors if a.kind == "subject" and a.source == b.path]
        when = b.timestamp.date() if b.timestamp else date
        label = "昨夜基线" if when == date - dt.timedelta(days=1) else f"{when.month}-{when.day} 基线"
        held = f"{label}；{len(subjects)}条锚定：{' · '.join(subjects)}"
        rows.append(SourceRow(directory=b.directory, key_file=b.name.removesuffix(".md"), held=held, relevance="基线"))
    rows += [_doc_row(r, labels_of) for r in results if r.doc.kind == "adjacent"]
    cards = [r for r in results if r.doc.kind == "paper_card"]
    if cards:
        # cards the model found related are named in the cell, as the seed names its adjacent cards
        listed = [r for r in cards if r.extraction and r.extraction.relevance != "参考"]
        cells = [f"{r.doc.name.removesuffix('.md')}（{r.extraction.held}）" for r in listed if r.extraction]
        if rest := len(cards) - len(listed):
            cells.append(f"其余 {rest} 张卡主分类非 {topic}")
        used = {c.doc.path for g in [*sel.increments, *sel.secondary] for c in g.members}
        # The folder's label says how much it mattered tonight: a card that fed the briefing lends
        # its relevance; otherwise the cards were background.
        rel = max(
            (r.extraction.relevance for r in cards if r.extraction and r.doc.path in used),
            key=lambda x: REL_RANK[x],
            default="参考",
        )
        rows.append(SourceRow(directory=f"paper_cards {_span(cards)}", key_file="；".join(cells), relevance=rel))
    for r in results:
        if r.doc.kind == "queue" and r.doc.timestamp:
            row = _doc_row(r, labels_of)
            rows.append(row.model_copy(update={"directory": f"{r.doc.directory} {r.doc.timestamp:%-m-%-d %H:%M}"}))
    return rows


def _doc_row(r: DocResult, labels_of: dict[str, str]) -> SourceRow:
    ex = r.extraction
    if ex is None:
        return SourceRow(directory=r.doc.directory, key_file=r.doc.name, held=r.error, relevance="参考")
    held, rel = ex.held, labels_of.get(r.doc.path, ex.relevance)
    if r.doc.kind == "adjacent" and ex.relevance_reason:  # another topic's briefing: say why it matters here
        held = f"{ex.held}；{ex.relevance_reason}"
    return SourceRow(directory=r.doc.directory, key_file=r.doc.name, held=held, relevance=rel)


def _short(title: str) -> str:
    """The subject of an increment title: what comes before its dash, colon or parenthesis."""
    head = re.split(r"\s+[—–-]+\s+|——|：|（|\(", title, maxsplit=1)[0].strip()
    return head[:30]


def _span(cards: Sequence[DocResult]) -> str:
    days = sorted({r.doc.timestamp.date() for r in cards if r.doc.timestamp})
    if not days:
        return ""
    first, last = days[0], days[-1]
    if first == last:
        return f"{first:%b} {first.day}"
    if first.month == last.month:
        return f"{first:%b} {first.day}-{last.day}"
    return f"{first:%b} {first.day}-{last:%b} {last.day}"


def _no_increment(
    results: Sequence[DocResult], sel: Selection, covered: list[Candidate], resolved: list[Resolved], topic: str
) -> list[NoIncrementNote]:
    """Why each source gave no (or not only) increments: covered, secondary, skipped, failed;
    and which open to-verify item it settled, since that item leaves section 三 tonight."""
    inc_of: dict[str, list[int]] = {}
    for i, g in enumerate(sel.increments, 1):
        for c in g.members:
            inc_of.setdefault(c.doc.path, []).append(i)
    sec_of: dict[str, list[str]] = {}
    for g in sel.secondary:
        for c in g.members:
            sec_of.setdefault(c.doc.path, []).append(c.claim.title)
    cov_of: dict[str, list[Candidate]] = {}
    for c in covered:
        cov_of.setdefault(c.doc.path, []).append(c)
    notes: list[NoIncrementNote] = []
    card_notes: list[str] = []
    for r in results:
        if r.doc.kind == "adjacent":
            continue
        parts: list[str] = []
        if r.extraction is None:
            parts.append(r.error)
        else:
            if nums := inc_of.get(r.doc.path):
                parts.append(f"主体已纳入增量 {'+'.join(str(n) for n in dict.fromkeys(nums))}")
            parts += [f"{c.claim.title}（{_covered_by(c, topic)}）" for c in cov_of.get(r.doc.path, [])]
            parts += [f"{t}（列为次要锚点，见四/六）" for t in sec_of.get(r.doc.path, [])]
            parts += [f"{s.subject} {s.reason}" for s in r.extraction.skipped]
            parts += [f"已核实：{x.title}（{x.how}），不再延续" for x in resolved if x.doc.path == r.doc.path]
            if not parts:
                parts.append(r.extraction.relevance_reason or f"无 {topic} 专项净新增")
        if inc_of.get(r.doc.path) and len(parts) == 1:
            continue  # everything it held is in the increments
        if r.doc.kind == "paper_card":
            card_notes.append(f"{r.doc.name.removesuffix('.md')}（{'；'.join(parts)}）")
        else:
            notes.append(NoIncrementNote(source=r.doc.path, note="；".join(parts)))
    if card_notes:  # one line for the card folder, as the sources table has one row for it
        cards = [r for r in results if r.doc.kind == "paper_card"]
        notes.append(NoIncrementNote(source=f"paper_cards {_span(cards)}", note="；".join(card_notes)))
    return notes


def _covered_by(c: Candidate, topic: str) -> str:
    a = c.anchor
    if a is None or a.first_date is None:
        return "活文档已有覆盖"
    return f"{a.when} {topic} e1prep 已有覆盖"


def _priorities(sel: Selection, labels: Labels) -> list[PriorityRow]:
    """Derived: the first half of the increments (in living-document order) are 最高, the rest
    and the secondary anchors 中. A rank, not a second opinion from the model."""
    top = math.ceil(len(sel.increments) / 2)
    rows = []
    for i, g in enumerate(sel.increments):
        level = labels.level_high if i < top else labels.level_mid
        rows.append(
            PriorityRow(level=level, content=g.lead.claim.title, action=f"写入 {g.lead.claim.suggested_section}")
        )
    for g in sel.secondary:
        ids = " / ".join(f"arXiv {a.arxiv_id}" for a in g.arxiv)
        content = f"{ids} {g.lead.claim.title}".strip()
        rows.append(
            PriorityRow(level=labels.level_mid, content=content, action=f"写入 {g.lead.claim.suggested_section}")
        )
    return rows
