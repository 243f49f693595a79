"""Rules → Briefing: runs the rule chain and lays its results out as the seven blocks.

Everything here is derived from the extractions and the anchors; nothing is asked of the model.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Limits:
    min_increments: int = 3
    max_increments: int = 8
    min_stars: int = 4
    secondary_min_stars: int = 3


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
    cands, f = check_arxiv(cands, date)
    findings += f
    kept, covered, f = dedupe(cands, registry)
    findings += f
    groups, f = merge(kept)
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
    verify, f = _to_verify(sel, registry, {x.title for x in resolved})
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
        sources=_source_rows(results, baselines, registry, sel, topic, date),
        increments=increments,
        to_verify=verify,
        arxiv_rows=rows,
        no_increment_intro=labels.no_increment_intro.format(topic=topic),
        no_increment=_no_increment(results, sel, covered, resolved, topic),
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


def _to_verify(sel: Selection, reg: AnchorRegistry, resolved: set[str]) -> tuple[list[VerifyItem], list[Finding]]:
    """New doubts of tonight's increments, figures that disagree between documents, then the
    open items of the last briefing that tonight did not resolve, carried over. A new note on
    the subject of a carried item does not duplicate it."""
    items: list[VerifyItem] = []
    findings: list[Finding] = []

    def add(title: str, risk: str, problem: str, suggestion: str, carried: str = "") -> None:
        items.append(
            VerifyItem(
                number=len(items) + 1,
                title=title,
                risk=risk,
                carried_from=carried,
                problem=problem,
                suggestion=suggestion,
            )
        )

    carried = [o for o in reg.open_items if o.item.title not in resolved]
    for g in sel.increments:
        for v in (v for c in g.members for v in c.claim.to_verify):
            if not any(
                similarity(v.title, t) >= 0.5 for t in [*(o.item.title for o in carried), *(i.title for i in items)]
            ):
                add(v.title, v.risk, v.problem, v.suggestion)
        for conflict in number_conflicts(g):
            add(f"{g.lead.claim.title} 数字不一致", "中", conflict, "读两份原文，确认以哪个数字为准再写入活文档")
            findings.append(Finding("contradiction", g.lead.claim.title, g.lead.doc.path, "to verify", conflict))
    for o in carried:
        add(o.item.title, o.item.risk, o.item.problem, o.item.suggestion, o.origin)
        findings.append(Finding("carry", o.item.title, o.source, "carried over", f"open since {o.origin}"))
    return items, findings


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
) -> list[SourceRow]:
    """Grouped as the seed groups them: tonight's reports, the baselines (newest first), the
    adjacent briefings, one row for the paper cards, one for the queue."""
    rows = [_doc_row(r) for r in results if r.doc.kind == "report"]
    for b in sorted(baselines, key=lambda d: d.path, reverse=True):
        subjects = [_short(a.label) for a in reg.anchors if a.kind == "subject" and a.source == b.path]
        when = b.timestamp.date() if b.timestamp else date
        label = "昨夜基线" if when == date - dt.timedelta(days=1) else f"{when.month}-{when.day} 基线"
        held = f"{label}；{len(subjects)}条锚定：{' · '.join(subjects)}"
        rows.append(SourceRow(directory=b.directory, key_file=b.name.removesuffix(".md"), held=held, relevance="基线"))
    rows += [_doc_row(r) for r in results if r.doc.kind == "adjacent"]
    cards = [r for r in results if r.doc.kind == "paper_card"]
    if cards:
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
            row = _doc_row(r)
            rows.append(row.model_copy(update={"directory": f"{r.doc.directory} {r.doc.timestamp:%-m-%-d %H:%M}"}))
    return rows


def _doc_row(r: DocResult) -> SourceRow:
    ex = r.extraction
    if ex is None:
        return SourceRow(directory=r.doc.directory, key_file=r.doc.name, held=r.error, relevance="参考")
    held, rel = ex.held, ex.relevance
    if r.doc.kind == "adjacent":  # another topic's briefing is a reference, whatever the model said
        held, rel = (f"{ex.held}；{ex.relevance_reason}" if ex.relevance_reason else ex.held), "邻接"
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
