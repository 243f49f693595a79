"""Decisions → the seven blocks: lays a `RuleOutcome` out as a `Briefing`.

Nothing is decided here that the chain did not decide; this module only orders, groups and words
(every phrase from `agent.core.labels`). Typed facts travel into the briefing beside the prose — an
arXiv row's anchoring date, an increment's relation to its anchor — so nothing downstream parses
the prose back.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agent.core.arxiv import find_ids, id_keys, key_of, validate
from agent.core.dates import month_day
from agent.core.labels import ZH, Labels
from agent.core.text import similarity, subject_head
from agent.plan.anchors import normalise_url
from agent.rules.chain import RuleOutcome
from agent.rules.claims import REL_RANK, Candidate, DocResult, Finding, Group, Selection
from agent.rules.edit import NumberConflict
from agent.rules.merge import short_subject
from agent.rules.priority import LEVEL_ORDER, Level
from agent.rules.verify import Doubt, InvalidId, Stopped
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


@dataclass(frozen=True)
class Composed:
    """The briefing, the findings that explain it, and the typed facts it was laid out from."""

    briefing: Briefing
    findings: list[Finding]
    outcome: RuleOutcome
    secondary_rows: tuple[int, ...]  # the row of 六 of each secondary anchor, for the trace

    @property
    def conflict_items(self) -> tuple[tuple[NumberConflict, int], ...]:
        """(disagreement, number of the 三 item that states it), for the page to mark the figures."""
        return _conflict_items(self.outcome)


def lay_out(o: RuleOutcome, footer: str = "", labels: Labels = ZH, siblings: Sequence[SourceRow] = ()) -> Composed:
    """The seven blocks of one evening, in the seed's order. `siblings`: rows of 一 for the other
    topics' briefings the same run writes (listed as adjacent; no rule reads them)."""
    s = o.scope
    verify = [verify_item(d, i, labels) for i, d in enumerate(o.to_verify, 1)]
    priorities, secondary_rows = _priorities(o, labels)
    item_of = {id(c): n for c, n in _conflict_items(o)}
    increments = [_increment(i, g, s.topic, labels, item_of) for i, g in enumerate(o.selection.increments, 1)]
    rows, new_keys = _arxiv_rows(o, labels)
    lim, n = s.limits, len(increments)
    if not s.results:  # a quiet evening is news too: said, so it does not read as a run that failed
        note = labels.quiet_evening
    elif n < lim.min_increments:  # said plainly; select never pads and never exceeds the maximum
        note = labels.count_under.format(min=lim.min_increments, n=n)
    else:
        note = labels.count_within.format(min=lim.min_increments, max=lim.max_increments)
    floor = [NoIncrementNote(source=labels.floor_source, note=labels.floor_note.format(why=o.floor))] if o.floor else []
    if floor:
        note += labels.list_sep + floor[0].note
    briefing = Briefing(
        topic=s.topic,
        date=s.date,
        summary=StatusSummary(
            increment_count=n,
            count_note=note,
            under_target=n < lim.min_increments,
            window=s.window,
            headlines=[i.title for i in increments],
            new_arxiv=new_keys,
            continued_arxiv=str(o.continued_total),
        ),
        sources=_source_rows(o, labels, siblings),
        increments=increments,
        to_verify=verify,
        arxiv_rows=rows,
        no_increment_intro=labels.no_increment_intro.format(topic=s.topic),
        no_increment=[*_no_increment(o, labels), *(_stopped(x, labels) for x in o.stopped), *floor],
        priorities=priorities,
        footer=footer,
    )
    return Composed(mark_invalid_ids(briefing, s.date, labels), o.findings, o, secondary_rows)


def _conflict_items(o: RuleOutcome) -> tuple[tuple[NumberConflict, int], ...]:
    return tuple((d.note, i) for i, d in enumerate(o.to_verify, 1) if isinstance(d.note, NumberConflict))


# --- 二 -----------------------------------------------------------------------------------------------


def _increment(number: int, g: Group, topic: str, labels: Labels, item_of: dict[int, int]) -> Increment:
    lead = g.lead.claim
    arx = g.arxiv
    keys = {key_of(a.arxiv_id) for a in arx}
    links = [u for c in g.members for u in c.claim.urls if not (id_keys(u) & keys)]  # the ID names the paper
    sources = [*_file_refs(g, labels), *(SourceRef(ref=u) for u in links)]
    sources += [SourceRef(ref=f"arXiv {a.arxiv_id}") for a in arx]
    points = (
        [p.point for p in g.points] if g.points or g.disputes else [p for c in g.members for p in c.claim.key_points]
    )
    for conflict in () if g.by_editor else g.disputes:  # neither figure is stated; the point says where 三 asks
        item = item_of.get(id(conflict))
        text = (
            labels.disputed_point.format(measure=conflict.measure, item=labels.circled(item))
            if item
            else labels.disputed_point_unlisted.format(measure=conflict.measure)
        )
        points.append(KeyPoint(text=text))
    relation = lead.relation_note
    anchor = g.lead.anchor
    if g.lead.relation == "supplement" and anchor is not None and not _says_supplement(relation, anchor.when, labels):
        relation += labels.supplement_note.format(when=anchor.when, topic=topic, anchor=_anchor_name(anchor.label))
    return Increment(
        number=number,
        title=g.headline,
        stars=g.stars,
        sources=_unique_refs(sources),
        arxiv_line=f"arXiv:{arx[0].arxiv_id} {arx[0].title}" if arx else "",
        key_points=points,
        credibility=Credibility(level=g.credibility, reason=g.reason or lead.credibility_reason),
        relation=relation,
        relation_kind="supplement" if g.lead.relation == "supplement" else "new",
        suggested_section=lead.suggested_section,
    )


def _anchor_name(label: str) -> str:
    """An anchor as a relation line names it: its subject when the label runs long, never cut mid-word."""
    head = subject_head(label)
    return label if len(label) <= 40 or not head else head


def _file_refs(g: Group, labels: Labels) -> list[SourceRef]:
    """Each document once, with every § section its claims came from."""
    sections: dict[str, dict[str, None]] = {}
    for c in g.members:
        parts = (p.strip() for p in re.split(r"[；;]", c.claim.section_ref))
        sections.setdefault(c.doc.path, {}).update(dict.fromkeys(p for p in parts if p))
    return [SourceRef(ref=doc, section=labels.section_join.join(secs)) for doc, secs in sections.items()]


def _says_supplement(note: str, when: str, labels: Labels) -> bool:
    """Whether the model's own note already says which anchor this supplements. The date alone
    is not enough ("9-20 锚点只有摘要；本条补上…"): unless the relation is stated, tomorrow's reader
    sees an anchored paper presented as if it were new."""
    return when in note and labels.supplement_word in note


def _unique_refs(refs: list[SourceRef]) -> list[SourceRef]:
    first: dict[tuple[str, str], SourceRef] = {}
    for r in refs:
        first.setdefault((normalise_url(r.ref) if "/" in r.ref and not r.section else r.ref, r.section), r)
    return list(first.values())


# --- 三 -----------------------------------------------------------------------------------------------


def verify_item(d: Doubt, number: int, labels: Labels) -> VerifyItem:
    """One question an editor can act on, under a short title that names its subject."""
    n = d.note
    if isinstance(n, VerifyItem):  # carried as it was written: by an earlier briefing, or the living document
        said = {} if n.problem else {"problem": labels.living_mark_problem.format(doc=d.doc)}
        said |= {} if n.suggestion else {"suggestion": labels.living_mark_suggestion}
        return n.model_copy(update={"number": number, "carried_from": d.carried, **said})
    if isinstance(n, NumberConflict):
        values = labels.conflict_or.join(f"{' / '.join(s.values)}{n.unit}" for s in n.sides)
        sides = labels.list_comma.join(
            labels.conflict_side.format(doc=s.doc, values=" / ".join(s.values), unit=n.unit) for s in n.sides
        )
        title = labels.conflict_title.format(subject=d.subject, measure=n.measure, values=values)
        problem = labels.conflict_problem.format(sides=sides, measure=n.measure)
        suggestion = labels.conflict_suggestion.format(measure=n.measure)
    elif isinstance(n, InvalidId):
        title = labels.invalid_id_title.format(subject=d.subject, id=n.arxiv_id)
        problem = labels.invalid_id_problem.format(doc=n.doc, id=n.arxiv_id, subject=d.subject)
        suggestion = labels.invalid_id_suggestion
    else:
        title = n.title if names_subject(n.title, d.subject) else d.subject + labels.subject_sep + n.title
        problem, suggestion = n.problem, n.suggestion
        if len(title) > labels.max_verify_title:  # the note names its subject well enough alone
            title = n.title
    title = _fit(title, d.subject, labels)
    return VerifyItem(number=number, title=title, risk=d.risk, problem=problem, suggestion=suggestion)


def _fit(title: str, subject: str, labels: Labels) -> str:
    """The title within `labels.max_verify_title`: a long subject in front cut to its first words
    ('MCP Python SDK 会话劫持 …' -> 'MCP Python SDK'), then the title itself."""
    limit = labels.max_verify_title
    words = subject.split(" ")
    while len(title) > limit and subject and title.startswith(subject) and len(words) > 1:
        words.pop()
        shorter = " ".join(words)
        title, subject = shorter + title[len(subject) :], shorter
    if len(title) <= limit:
        return title
    cut = title[: limit - len(labels.title_cut)]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip() + labels.title_cut


def names_subject(title: str, subject: str) -> bool:
    """Whether a note's title already says what it is about (shares a name with the subject, or
    reads much like it), so that prefixing the subject would only repeat it."""
    names = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*", subject) if len(w) > 1}
    mine = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*", title) if len(w) > 1}
    return bool(names & mine) or similarity(title, subject) >= 0.5


# --- invalid arXiv IDs, wherever they are named -------------------------------------------------------


def mark_invalid_ids(b: Briefing, date: dt.date, labels: Labels) -> Briefing:
    """Every arXiv ID that cannot exist marked invalid right after it, in every block (a source's
    words in 一 and 五, a model's note in 三), so that none reads as a citation."""
    return b.model_validate(_marked(b.model_dump(), date, labels))


def _marked(value: object, date: dt.date, labels: Labels) -> object:
    if isinstance(value, str):
        return _mark(value, date, labels.invalid_id_mark)
    if isinstance(value, list):
        return [_marked(v, date, labels) for v in value]
    if isinstance(value, dict):
        return {k: _marked(v, date, labels) for k, v in value.items()}
    return value


def _mark(text: str, date: dt.date, mark: str) -> str:
    for m in reversed(find_ids(text)):
        if not validate(m.id, not_after=date).ok and not text[m.end :].startswith(mark):
            text = text[: m.end] + mark + text[m.end :]
    return text


# --- 四 -----------------------------------------------------------------------------------------------


def _arxiv_rows(o: RuleOutcome, labels: Labels) -> tuple[list[ArxivRow], list[str]]:
    sel, reg = o.selection, o.scope.registry
    rows: list[ArxivRow] = []
    new_keys: dict[str, None] = {}  # in order
    for g in [*sel.increments, *sel.secondary]:
        for a in g.arxiv:
            key = key_of(a.arxiv_id) or a.arxiv_id
            if reg.arxiv(key) is not None or key in new_keys:
                continue
            new_keys[key] = None
            relation = f"{labels.arxiv_new_relation} → {g.lead.claim.suggested_section}"
            rows.append(ArxivRow(arxiv_id=a.arxiv_id, title=a.title, credibility=g.credibility, relation=relation))
    for anchor, again in o.continued:
        told = labels.list_sep + labels.reconfirmed if again else ""
        rows.append(
            ArxivRow(
                arxiv_id=anchor.display_id or anchor.key,
                title=anchor.label,
                credibility=anchor.credibility or "高",
                relation=f"{anchor.when}{labels.anchored_suffix}{told}",
                anchored_on=anchor.first_date,
            )
        )
    return rows, list(new_keys)


# --- 一 -----------------------------------------------------------------------------------------------


def _source_rows(o: RuleOutcome, labels: Labels, siblings: Sequence[SourceRow]) -> list[SourceRow]:
    """Grouped as the seed groups them: tonight's reports, the baselines (newest first), the
    adjacent briefings, one row for the paper cards, one for the queue."""
    s = o.scope
    rows = [_doc_row(r, o.relevance, labels) for r in s.results if r.doc.kind == "report"]
    labels_by_source: dict[str, list[str]] = {}
    for a in s.registry.anchors:
        if a.kind == "subject":
            labels_by_source.setdefault(a.source, []).append(a.label)
    for b in sorted(s.baselines, key=lambda d: d.path, reverse=True):
        subjects = [short_subject(label) for label in labels_by_source.get(b.path, ())]
        when = b.timestamp.date() if b.timestamp else s.date
        yesterday = when == s.date - dt.timedelta(days=1)
        label = labels.last_night if yesterday else labels.baseline_of.format(when=month_day(when))
        held = labels.baseline_held.format(label=label, n=len(subjects), subjects=" · ".join(subjects))
        key = b.name.removesuffix(".md")
        rows.append(SourceRow(directory=b.directory, key_file=key, held=held, relevance=labels.baseline_level))
    rows += [_doc_row(r, o.relevance, labels) for r in s.results if r.doc.kind == "adjacent"]
    rows += siblings
    cards = [r for r in s.results if r.doc.kind == "paper_card"]
    if cards:
        rows.append(_cards_row(cards, o.selection, s.topic, labels))
    for r in s.results:
        if r.doc.kind == "queue" and (t := r.doc.timestamp):
            row = _doc_row(r, o.relevance, labels)
            rows.append(row.model_copy(update={"directory": f"{r.doc.directory} {month_day(t)} {t:%H:%M}"}))
    return rows


def _cards_row(cards: list[DocResult], sel: Selection, topic: str, labels: Labels) -> SourceRow:
    """One row for the card folder; cards the model found related are named in the cell, as the
    seed names its adjacent cards."""
    listed = [r for r in cards if r.extraction and r.extraction.relevance != "参考"]
    cells = [
        labels.named.format(name=r.doc.name.removesuffix(".md"), what=r.extraction.held) for r in listed if r.extraction
    ]
    if rest := len(cards) - len(listed):
        cells.append(labels.other_cards.format(n=rest, topic=topic))
    used = {c.doc.path for g in [*sel.increments, *sel.secondary] for c in g.members}
    # The folder's label says how much it mattered tonight: a card that fed the briefing lends
    # its relevance; otherwise the cards were background.
    rel = max(
        (r.extraction.relevance for r in cards if r.extraction and r.doc.path in used),
        key=lambda x: REL_RANK[x],
        default="参考",
    )
    return SourceRow(directory=f"paper_cards {_span(cards)}", key_file=labels.list_sep.join(cells), relevance=rel)


def _doc_row(r: DocResult, labels_of: dict[str, str], labels: Labels) -> SourceRow:
    ex = r.extraction
    if ex is None:
        return SourceRow(directory=r.doc.directory, key_file=r.doc.name, held=r.error, relevance="参考")
    held, rel = ex.held, labels_of.get(r.doc.path, ex.relevance)
    if r.doc.kind == "adjacent" and ex.relevance_reason:  # another topic's briefing: say why it matters here
        held = f"{ex.held}{labels.list_sep}{ex.relevance_reason}"
    return SourceRow(directory=r.doc.directory, key_file=r.doc.name, held=held, relevance=rel)


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


# --- 五 -----------------------------------------------------------------------------------------------


def _no_increment(o: RuleOutcome, labels: Labels) -> list[NoIncrementNote]:
    """Why each source gave no (or not only) increments, and which open item it settled, since
    that item leaves 三 tonight."""
    s = o.scope
    increments_of = _increment_numbers(o.selection.increments)
    before, settled = _said_of(o, increments_of, labels)
    in_frame, _ = _said_of(o, increments_of, labels, covered=False)  # what the editor's line goes with
    notes: list[NoIncrementNote] = []
    card_notes: list[str] = []
    for r in s.results:
        if r.doc.kind == "adjacent":
            continue
        if r.extraction is None:
            parts = [r.error]
        elif line := o.doc_lines.get(r.doc.path):  # the editor's words, in the rules' frame
            parts = [*in_frame.get(r.doc.path, []), line, *settled.get(r.doc.path, [])]
        else:  # the seed's order: what is said of its claims, its own skipped items, what it settled
            skipped = [f"{x.subject} {x.reason}" for x in r.extraction.skipped]
            parts = [*before.get(r.doc.path, []), *skipped, *settled.get(r.doc.path, [])]
            parts = parts or [r.extraction.relevance_reason or labels.nothing_new.format(topic=s.topic)]
        if r.doc.path in increments_of and len(parts) == 1:
            continue  # everything it held is in the increments
        note = labels.list_sep.join(p.rstrip("。") for p in parts)
        if r.doc.kind == "paper_card":
            card_notes.append(labels.named.format(name=r.doc.name.removesuffix(".md"), what=note))
        else:
            notes.append(NoIncrementNote(source=r.doc.path, note=note))
    if card_notes:  # one line for the card folder, as the sources table has one row for it
        cards = [r for r in s.results if r.doc.kind == "paper_card"]
        notes.append(NoIncrementNote(source=f"paper_cards {_span(cards)}", note=labels.list_sep.join(card_notes)))
    return notes


def _increment_numbers(increments: Sequence[Group]) -> dict[str, dict[int, None]]:
    """Document -> the numbers of the increments its claims are in, each once and in order (a
    dict as an ordered set)."""
    numbers: dict[str, dict[int, None]] = {}
    for i, g in enumerate(increments, 1):
        for c in g.members:
            numbers.setdefault(c.doc.path, {})[i] = None
    return numbers


def _said_of(
    o: RuleOutcome, increments_of: dict[str, dict[int, None]], labels: Labels, *, covered: bool = True
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Document -> what 五 says of its claims (the increments they are in, by `increments_of`, those
    covered, those secondary), and document -> the open items it settled. `covered=False`: the rules'
    frame around an editor's line for the document, which says itself what was covered."""
    before = {d: [labels.in_increments.format(numbers="+".join(map(str, ns)))] for d, ns in increments_of.items()}
    for c in o.covered if covered else ():
        what = labels.named.format(name=c.claim.title, what=_covered_by(c, o.scope.topic, labels))
        before.setdefault(c.doc.path, []).append(what)
    for g in o.selection.secondary:
        for c in g.members:
            before.setdefault(c.doc.path, []).append(labels.secondary.format(title=c.claim.title))
    settled: dict[str, list[str]] = {}
    for x in o.resolved:
        settled.setdefault(x.doc.path, []).append(labels.settled.format(title=x.title, how=x.how))
    return before, settled


def _covered_by(c: Candidate, topic: str, labels: Labels) -> str:
    a = c.anchor
    if a is None or a.first_date is None:
        return labels.covered_by_living
    return labels.covered_by_briefing.format(when=a.when, topic=topic)


def _stopped(x: Stopped, labels: Labels) -> NoIncrementNote:
    """A carried item that stops being carried says so in 五, or it would vanish silently."""
    if x.why == "aged":
        note = labels.aged_out.format(title=x.title, since=x.since, evenings=x.evenings)
    else:
        note = labels.over_budget.format(title=x.title, since=x.since, budget=x.budget)
    return NoIncrementNote(source=x.source, note=note)


# --- 六 -----------------------------------------------------------------------------------------------


def _priorities(o: RuleOutcome, labels: Labels) -> tuple[list[PriorityRow], tuple[int, ...]]:
    """六: the increments, the secondary anchors and the settled questions neither carries, at the
    chain's levels, most urgent first, else in 二's order. A settled question is E2's too (the
    living document still marks it 待核实): said on the row that settles it, else on its own.
    Also returns the row of each secondary anchor, in select's order."""
    sel, resolved, levels = o.selection, o.resolved, o.levels
    word = {"high": labels.level_high, "mid": labels.level_mid, "low": labels.level_low}
    groups = [*sel.increments, *sel.secondary]
    rows: list[tuple[Level, PriorityRow]] = []
    for i, (g, level) in enumerate(zip(groups, levels.rows, strict=True)):
        secondary = i >= len(sel.increments)
        ids = " / ".join(f"arXiv {a.arxiv_id}" for a in g.arxiv) if secondary else ""
        mine = [x for x, on in zip(resolved, levels.settled_on, strict=True) if on == i]
        content = f"{ids} {g.lead.claim.title if secondary else g.headline}".strip()
        content += "".join(labels.settled_note.format(origin=x.origin) for x in mine)
        action = labels.write_into.format(section=g.lead.claim.suggested_section)
        action += labels.and_drop_mark if mine else ""
        rows.append((level, PriorityRow(level=word[level], content=content, action=action)))
    for x, on, level in zip(resolved, levels.settled_on, levels.settled, strict=True):
        if on is None:
            content = x.title + labels.settled_note.format(origin=x.origin)
            rows.append((level, PriorityRow(level=word[level], content=content, action=labels.drop_verify_mark)))
    order = sorted(range(len(rows)), key=lambda k: LEVEL_ORDER[rows[k][0]])  # stable: 二's order within a level
    secondary_rows = tuple(order.index(k) for k in range(len(sel.increments), len(groups)))
    return [rows[k][1] for k in order], secondary_rows


__all__ = ["Composed", "lay_out", "names_subject", "verify_item"]
