"""After the rules: tie every line of the briefing back to the sentences it rests on.

The rules keep what they learnt on the data (each group its claims, each claim where its quotes
were found, each key point its claim, each to-verify item its increment); this stage reads those
and looks nothing up again, except the quotes of a claim the rules removed, which no stage kept.
The result is the `RunRecord`, the run's JSON, from which the page is built.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from agent.core.errors import PredigestError, first_problem
from agent.core.text import Alignment, Folded, facts, locate
from agent.rules.claims import Candidate, ClaimRef, DocResult, Finding, Group
from agent.rules.compose import Composed
from agent.rules.edit import NumberConflict
from agent.rules.grounding import DocText
from agent.rules.verify import Doubt
from agent.write.living import text_hash
from schemas.briefing import Increment, KeyPoint, SourceRow
from schemas.documents import SourceDoc
from schemas.run import (
    RUN_SCHEMA_VERSION,
    ClaimTrace,
    Conflict,
    ConflictSide,
    Decision,
    Document,
    FindingRecord,
    IncrementTrace,
    LivingRef,
    MatchKind,
    PointTrace,
    Removed,
    Rule,
    RunRecord,
    SecondaryTrace,
    SourceLink,
    Span,
    Supplement,
    TextMark,
    Trace,
    Unread,
    VerifyTrace,
)

# Decisions that keep a claim (or say nothing about removing one); every other decision a rule
# reports removed or demoted something, and goes to the page's last block. A denylist on purpose:
# a rule added later shows up there without a change here.
_KEPT: frozenset[Decision] = frozenset(
    {
        "new",
        "supplement",
        "merged",
        "increment",
        "to verify",
        "carried over",
        "resolved",
        # the claim stays: a quote, a URL or a point of it went, its § was renumbered, its source relabelled
        "quote dropped",
        "quote elided",
        "url dropped",
        "point folded",
        "figure withheld",
        "renumbered",
        "renamed",
        "urgent",  # 六's level: where E2 starts, nothing removed
        "relabelled",
    }
)
# Rules about to-verify notes, not claims: 三 and 五 say what became of them (and --explain why).
_NOT_CLAIMS: frozenset[Rule] = frozenset({"to-verify", "carry"})
Role = Literal["quote", "fact", "figure"]


@dataclass
class _Spans:
    """Every span of the record, each (document, place) once."""

    texts: dict[str, str]
    read: Callable[[str], DocText]  # how the run's rules read a document (`Scope.read`)
    items: list[Span] = field(default_factory=list)
    _seen: dict[tuple[str, str, int, int], str] = field(default_factory=dict)

    def folded(self, doc: str) -> Folded:
        """A document's folded text, as the rules folded it."""
        return self.read(self.texts.get(doc, "")).folded

    def aligned(self, doc: str, quote: str, a: Alignment) -> str:
        """A quote where grounding found it."""
        return self._add(doc, quote, a.start, a.end, a.kind, a.score)

    def at(self, doc: str, start: int, end: int, role: Role) -> str:
        """A span found by its exact place (a figure, a fact)."""
        return self._add(doc, self.texts[doc][start:end], start, end, "exact", 1.0, role)

    def _add(
        self, doc: str, quote: str, start: int, end: int, kind: MatchKind, score: float, role: Role = "quote"
    ) -> str:
        key = (doc, f"{role}:{quote}", start, end)
        if key in self._seen:
            return self._seen[key]
        sid = f"s{len(self.items)}"
        span = Span(id=sid, doc=doc, quote=quote, start=start, end=end, kind=kind, score=round(score, 3), role=role)
        self.items.append(span)
        self._seen[key] = sid
        return sid

    def get(self, sid: str) -> Span:
        return self.items[int(sid[1:])]


def finding_record(f: Finding) -> FindingRecord:
    return FindingRecord(
        rule=f.rule,
        subject=f.subject,
        doc=f.doc,
        decision=f.decision,
        detail=f.detail,
        ref=str(f.ref) if f.ref else "",
        target=f.target,
    )


_PASS_RECORD = "pass the .json written beside a briefing"


def load_record(json_path: Path) -> RunRecord:
    """A run record read back (`view`, `patch`): a file that is not one, or of another schema, says so."""
    try:
        data = json.loads(Path(json_path).read_text(encoding="utf-8"))
    except RecursionError as e:  # `[[[[…` a hundred thousand deep: no record is nested past a few levels
        raise PredigestError(f"{json_path} is nested too deeply to be a run record", hint=_PASS_RECORD) from e
    except (OSError, UnicodeDecodeError, ValueError) as e:
        why = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise PredigestError(f"cannot read {json_path}: {why}", hint=_PASS_RECORD) from e
    if not isinstance(data, dict) or "briefing" not in data:
        raise PredigestError(f"{json_path} is not a predigest run record", hint="pass the .json beside a briefing")
    version = data.get("schema_version")
    if version != RUN_SCHEMA_VERSION:
        raise PredigestError(
            f"{json_path} is a run record of schema {version or 'before 1'}, this one reads {RUN_SCHEMA_VERSION}",
            hint="run the evening again (`predigest run`) to write a record this version reads",
        )
    try:
        return RunRecord.model_validate(data)
    except ValidationError as e:
        msg = f"{json_path} is not a valid run record ({first_problem(e)})"
        raise PredigestError(msg, hint="run the evening again to write a fresh record") from e


def run_record(
    composed: Composed,
    results: Sequence[DocResult],
    docs: Sequence[SourceDoc],
    *,
    prompt: str,
    model: str,
    unread: Sequence[tuple[str, str]] = (),
    workspace: str = "",
) -> RunRecord:
    """The run's JSON: the briefing, the findings, and the trace from each line to its sources."""
    b = composed.briefing
    texts = {d.path: d.text for d in docs if d.read and d.text}
    spans = _Spans(texts, composed.outcome.scope.read)
    findings = [finding_record(f) for f in composed.findings]
    incs, verify = _increments(composed, spans)
    sources = _source_links(b.sources, docs)
    claims = {r.doc.path: r for r in results if r.extraction is not None}
    removed = [
        Removed(finding=i, spans=_removed_spans(claims, f.ref, spans))
        for i, f in enumerate(composed.findings)
        if f.decision not in _KEPT and f.rule not in _NOT_CLAIMS
    ]
    linked = (
        {s.doc for s in spans.items} | {d for s in sources for d in s.docs} | {v.source for v in verify if v.source}
    )
    linked |= {i.supplement.source for i in incs if i.supplement}
    documents = [Document(path=d.path, kind=d.kind, text=d.text) for d in docs if d.path in linked and d.path in texts]
    return RunRecord(
        briefing=b,
        prompt=prompt,
        model=model,
        partial=bool(unread),
        unread=[Unread(doc=d, why=w) for d, w in unread],
        findings=findings,
        documents=documents,
        spans=spans.items,
        trace=Trace(increments=incs, secondary=_secondary(composed), verify=verify, sources=sources, removed=removed),
        living=_living_ref(docs, workspace),
    )


def _secondary(composed: Composed) -> list[SecondaryTrace]:
    """Each secondary anchor with its row of 六, as the layout placed it."""
    out = []
    for row, g in zip(composed.secondary_rows, composed.outcome.selection.secondary, strict=True):
        c, arxiv = g.lead.claim, [a.arxiv_id for a in g.arxiv]
        out.append(
            SecondaryTrace(row=row, title=c.title, section=c.suggested_section, arxiv=arxiv, claim=str(g.lead.ref))
        )
    return out


def _living_ref(docs: Sequence[SourceDoc], workspace: str) -> LivingRef | None:
    """The living document the run read, by content hash: `predigest patch` applies to that text only."""
    living = next((d for d in docs if d.kind == "living" and d.read), None)
    if living is None:
        return None
    return LivingRef(workspace=workspace, path=living.path, sha256=text_hash(living.text))


def _increments(composed: Composed, spans: _Spans) -> tuple[list[IncrementTrace], list[VerifyTrace]]:
    """Each increment's trace, with the 三 items it raises and its disputed figures marked, and 三's."""
    b, o = composed.briefing, composed.outcome
    incs = [_increment(inc, g, spans) for inc, g in zip(b.increments, o.selection.increments, strict=True)]
    verify = _verify(o.to_verify, len(incs))
    for v in verify:
        for n in v.increments:
            incs[n - 1].verify.append(v.number)
    for it, inc, g in zip(incs, b.increments, o.selection.increments, strict=True):
        it.conflicts.extend(_conflicts(it, g, composed.conflict_items, spans))
        _mark_points(it, inc)
    return incs, verify


# --- increments ---------------------------------------------------------------------------------


def _increment(inc: Increment, g: Group, spans: _Spans) -> IncrementTrace:
    """The group's claims with their quotes, and each key point tied to its own claim's quotes."""
    ctraces = {c.ref: _claim_trace(c, spans) for c in g.members}
    points: list[PointTrace] = []
    for i, top in enumerate(inc.key_points):
        owner = ctraces.get(g.points[i].ref) if i < len(g.points) else None  # past them: the disputed-figure notes
        for path, point in [(f"{i}", top), *_walk(top.children, f"{i}.")]:
            points.append(_point(path, point, owner, spans))
    return IncrementTrace(
        number=inc.number,
        claims=list(ctraces.values()),
        points=points,
        supplement=_supplement(inc, g.lead, ctraces[g.lead.ref], spans),
        living=g.living,
    )


def _claim_trace(c: Candidate, spans: _Spans) -> ClaimTrace:
    quotes = [spans.aligned(c.doc.path, q, a) for q, a in zip(c.claim.evidence, c.alignments, strict=True)]
    return ClaimTrace(doc=c.doc.path, section=c.claim.section_ref, title=c.claim.title, spans=quotes, ref=str(c.ref))


def _point(path: str, point: KeyPoint, owner: ClaimTrace | None, spans: _Spans) -> PointTrace:
    """The quotes of its own claim that carry the point's figures, else all of that claim's."""
    if owner is None:
        return PointTrace(path=path)
    found = [s for s in owner.spans if spans.get(s).kind != "none"]
    mine = facts(point.text)
    if mine:
        carrying = [s for s in found if mine & facts(spans.get(s).quote)]
        if carrying:
            return PointTrace(path=path, spans=carrying, by_figures=True, claim=owner.ref)
    return PointTrace(path=path, spans=found or owner.spans, claim=owner.ref)


def _supplement(inc: Increment, lead: Candidate, ctrace: ClaimTrace, spans: _Spans) -> Supplement | None:
    """Where dedupe made the lead a supplement: its anchor, and the facts it adds that the
    increment still states, marked inside the lead's quotes."""
    anchor = lead.anchor
    if lead.relation != "supplement" or anchor is None:
        return None
    stated = set().union(*(facts(p.text) for p in inc.all_points()))
    adds = sorted(set(lead.new_facts) & stated)
    marked = []
    for fact in adds:
        for sid in ctrace.spans:
            quote = spans.get(sid)
            hit = fact_pattern(fact).search(lead.doc.text, quote.start, quote.end) if quote.start >= 0 else None
            if hit is not None:
                marked.append(spans.at(lead.doc.path, hit.start(), hit.end(), "fact"))
                break
    return Supplement(anchor=anchor.label, when=anchor.when, source=anchor.source, adds=adds, spans=marked)


# --- to-verify and conflicts ------------------------------------------------------------------------


def _verify(doubts: Sequence[Doubt], increments: int) -> list[VerifyTrace]:
    """Each item with the increment it concerns, or the briefing it was carried from."""
    out = []
    for number, d in enumerate(doubts, 1):
        if d.carried:
            out.append(VerifyTrace(number=number, carried_from=d.carried, source=d.doc))
        else:
            concerns = [d.position + 1] if d.position < increments else []
            out.append(VerifyTrace(number=number, increments=concerns))
    return out


def _conflicts(
    it: IncrementTrace, g: Group, held: Sequence[tuple[NumberConflict, int]], spans: _Spans
) -> list[Conflict]:
    """The group's disputes that an item of 三 states, with each side's figures found in its own
    document (within the claim's quotes where they are written there)."""
    mine = {id(c) for c in g.disputes}
    out = []
    for c, item in held:
        if id(c) not in mine:
            continue
        sides = [
            ConflictSide(doc=s.doc, values=list(s.values), spans=_figures(s.doc, list(s.values), c.unit, it, spans))
            for s in c.sides
        ]
        out.append(Conflict(verify=item, unit=c.unit, sides=sides))
    return out


def fact_pattern(fact: str) -> re.Pattern[str]:
    """A fact as written, not inside a longer token: "1" is not the 1 of "#27988"."""
    return re.compile(rf"(?<![\w.#-]){re.escape(fact)}(?![\w])", re.I)


def _mark_points(it: IncrementTrace, inc: Increment) -> None:
    """Mark, in the key points' own text, the facts a supplement adds and the disputed figures."""
    texts = dict(_walk(inc.key_points))
    adds = set(it.supplement.adds) if it.supplement else set()
    for pt in it.points:
        text = texts[pt.path].text
        marks: list[TextMark] = []
        for fact in sorted(adds & facts(text)):
            if hit := fact_pattern(fact).search(text):
                marks.append(TextMark(start=hit.start(), end=hit.end(), role="fact"))
        for c in it.conflicts:
            for side in c.sides:
                for v in side.values:
                    if hit := figure_pattern(v, c.unit).search(text):
                        marks.append(TextMark(start=hit.start(), end=hit.end(), role="figure", verify=c.verify))
        marks.sort(key=lambda m: (m.start, -m.end))
        pt.marks = [m for i, m in enumerate(marks) if all(m.start >= o.end for o in marks[:i])]


def figure_pattern(value: str, unit: str) -> re.Pattern[str]:
    """A figure as documents write it: thousands separators allowed, space before the unit."""
    digits = ",?".join(re.escape(c) for c in value)
    return re.compile(rf"(?<![\d.,]){digits}(?![\d])\s*{re.escape(unit)}", re.I)


def _figures(doc: str, values: list[str], unit: str, it: IncrementTrace, spans: _Spans) -> list[str]:
    text = spans.texts.get(doc, "")
    quotes = [spans.get(s) for ct in it.claims if ct.doc == doc for s in ct.spans]
    out = []
    for v in values:
        hits = list(figure_pattern(v, unit).finditer(text))
        inside = [h for h in hits if any(q.start <= h.start() and h.end() <= q.end for q in quotes)]
        for h in (inside or hits)[:1]:
            out.append(spans.at(doc, h.start(), h.end(), "figure"))
    return out


# --- sources and removed claims -------------------------------------------------------------------


def _source_links(rows: Sequence[SourceRow], docs: Sequence[SourceDoc]) -> list[SourceLink]:
    """The documents each row of 一 names: by file name, in the folder the row starts with or below it."""
    links = []
    for i, row in enumerate(rows):
        folder = row.directory.split(" ", 1)[0]
        files = (row.key_file, f"{row.key_file}.md")
        found = [
            d.path
            for d in docs
            if d.text
            and (d.directory == folder or d.directory.startswith(f"{folder}/"))
            and (d.name in files or d.name.removesuffix(".md") in row.key_file)
        ]
        links.append(SourceLink(row=i, docs=found))
    return links


def _removed_spans(claims: dict[str, DocResult], ref: ClaimRef | None, spans: _Spans) -> list[str]:
    """The quotes of a claim the rules removed, located in its document."""
    if ref is None or (r := claims.get(ref.doc)) is None or r.extraction is None:
        return []
    claim = next((c for c, at in zip(r.extraction.claims, r.claim_refs(), strict=True) if at == ref), None)
    if claim is None:  # screened out before the rules: the page has no claim to show it with
        return []
    text = spans.texts.get(ref.doc, "")
    return [spans.aligned(ref.doc, q, locate(q, text, folded=spans.folded(ref.doc))) for q in claim.evidence]


# --- trees ------------------------------------------------------------------------------------------


def _walk(points: list[KeyPoint], prefix: str = "") -> list[tuple[str, KeyPoint]]:
    """Every point with its position ('0', '0.1', …), depth first, as the page numbers them."""
    out = []
    for i, p in enumerate(points):
        path = f"{prefix}{i}"
        out.append((path, p))
        out.extend(_walk(p.children, f"{path}."))
    return out
