"""After the rules: tie every line of the briefing back to the sentences it rests on.

The rule layer decides and explains (`Composed.findings`); this stage only looks things up, so it
can run after it without changing it. For each increment it finds the claims behind it (the
credited document and § of each source), locates their evidence quotes again with the same
`locate` grounding used, ties each key point to the quote carrying its figures, and records what
a reader needs to doubt it well: the to-verify items it raises, the figures two documents state
differently, what a supplement adds to its anchor, and the quotes of every claim the rules
removed. The result is a `RunRecord`, the run's JSON, from which the page is built.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from agent.core.text import facts, locate, similarity
from agent.plan.anchors import AnchorRegistry
from agent.rules import Candidate, DocResult, NumberConflict, claim_facts, match_anchor
from agent.rules.compose import Composed
from schemas.briefing import Increment, KeyPoint, SourceRow, VerifyItem
from schemas.documents import SourceDoc
from schemas.extraction import Claim
from schemas.run import (
    ClaimTrace,
    Conflict,
    ConflictSide,
    Decision,
    Document,
    FindingRecord,
    IncrementTrace,
    MatchKind,
    PointTrace,
    Removed,
    Rule,
    RunRecord,
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
        # the claim stays: one of its quotes was dropped or matched elided, its § renumbered, its source relabelled
        "quote dropped",
        "quote elided",
        "renumbered",
        "renamed",
        "relabelled",
    }
)
# Rules about to-verify notes, not claims: 三 and 五 say what became of them (and --explain why).
_NOT_CLAIMS: frozenset[Rule] = frozenset({"to-verify", "carry"})
_VERIFY_SIMILAR = 0.5
Role = Literal["quote", "fact", "figure"]  # compose folds a new note into an item this alike; so does the link back


@dataclass
class _Spans:
    """Every span of the record, located once per (document, quote)."""

    texts: dict[str, str]
    items: list[Span] = field(default_factory=list)
    _seen: dict[tuple[str, str, int], str] = field(default_factory=dict)
    used: set[str] = field(default_factory=set)

    def quote(self, doc: str, quote: str) -> str:
        key = (doc, quote, -1)
        if key not in self._seen:
            a = locate(quote, self.texts.get(doc, ""))
            self._seen[key] = self._add(doc, quote, a.start, a.end, a.kind, a.score)
        return self._seen[key]

    def at(self, doc: str, start: int, end: int, role: Role) -> str:
        """A span found by other means than locate (a figure, a fact): exact by construction."""
        key = (doc, f"{role}:{end}", start)
        if key not in self._seen:
            self._seen[key] = self._add(doc, self.texts[doc][start:end], start, end, "exact", 1.0, role)
        return self._seen[key]

    def _add(
        self, doc: str, quote: str, start: int, end: int, kind: MatchKind, score: float, role: Role = "quote"
    ) -> str:
        sid = f"s{len(self.items)}"
        span = Span(id=sid, doc=doc, quote=quote, start=start, end=end, kind=kind, score=round(score, 3), role=role)
        self.items.append(span)
        self.used.add(doc)
        return sid

    def region(self, sid: str) -> tuple[int, int]:
        s = self.items[int(sid[1:])]
        return s.start, s.end


def run_record(
    composed: Composed,
    results: Sequence[DocResult],
    registry: AnchorRegistry,
    docs: Sequence[SourceDoc],
    *,
    prompt: str,
    model: str,
    unread: Sequence[tuple[str, str]] = (),
) -> RunRecord:
    """The run's JSON: the briefing, the findings, and the trace from each line to its sources."""
    b = composed.briefing
    texts = {d.path: d.text for d in docs if d.read and d.text}
    spans = _Spans(texts)
    findings = [FindingRecord(**f.__dict__) for f in composed.findings]
    claims = {r.doc.path: r for r in results if r.extraction is not None}

    incs = [_increment(inc, claims, registry, findings, spans) for inc in b.increments]
    verify = _verify(b.to_verify, incs, claims, registry, composed.conflict_items)
    for v in verify:
        for n in v.increments:
            incs[n - 1].verify.append(v.number)
    for it, inc in zip(incs, b.increments, strict=True):
        it.conflicts.extend(_conflicts(it, inc, composed.conflict_items, spans))
        _mark_points(it, inc)
    sources = _source_links(b.sources, docs)
    removed = [
        Removed(finding=i, spans=_claim_spans(claims, f.doc, f.subject, spans))
        for i, f in enumerate(findings)
        if f.decision not in _KEPT and f.rule not in _NOT_CLAIMS
    ]
    linked = spans.used | {d for s in sources for d in s.docs} | {v.source for v in verify if v.source}
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
        trace=Trace(increments=incs, verify=verify, sources=sources, removed=removed),
    )


# --- increments ---------------------------------------------------------------------------------


def _members(inc: Increment, claims: dict[str, DocResult]) -> list[tuple[DocResult, Claim]]:
    """The claims behind an increment: one per credited document, picked by its § reference and,
    where a document has several claims at one §, by shared key points and title."""
    texts = {p.text for p in inc.all_points()}
    out = []
    for ref in inc.sources:
        r = claims.get(ref.ref)
        if r is None or r.extraction is None:
            continue
        pool = [c for c in r.extraction.claims if c.section_ref == ref.section] or r.extraction.claims
        if not pool:
            continue

        def fit(c: Claim) -> tuple[bool, int, float]:
            shared = sum(1 for top in c.key_points for p in top.walk() if p.text in texts)
            return (c.title == inc.title, shared, similarity(c.title, inc.title))

        out.append((r, max(pool, key=fit)))
    return out


def _increment(
    inc: Increment,
    claims: dict[str, DocResult],
    registry: AnchorRegistry,
    findings: list[FindingRecord],
    spans: _Spans,
) -> IncrementTrace:
    members = _members(inc, claims)
    ctraces = [
        ClaimTrace(
            doc=r.doc.path,
            section=c.section_ref,
            title=c.title,
            spans=[spans.quote(r.doc.path, q) for q in c.evidence],
        )
        for r, c in members
    ]
    points = []
    for path, point in _walk(inc.key_points):
        owner = next(
            (ct for (_, c), ct in zip(members, ctraces, strict=True) if any(point.text == p.text for p in _all(c))),
            ctraces[0] if ctraces else None,
        )
        points.append(_point(path, point, owner, spans))
    return IncrementTrace(
        number=inc.number,
        claims=ctraces,
        points=points,
        supplement=_supplement(inc, members, registry, findings, spans, ctraces),
    )


def _point(path: str, point: KeyPoint, owner: ClaimTrace | None, spans: _Spans) -> PointTrace:
    """The quotes that carry the point's own figures, else every quote of its claim."""
    if owner is None:
        return PointTrace(path=path)
    found = [s for s in owner.spans if spans.items[int(s[1:])].kind != "none"]
    mine = facts(point.text)
    if mine:
        carrying = [s for s in found if mine & facts(spans.items[int(s[1:])].quote)]
        if carrying:
            return PointTrace(path=path, spans=carrying, by_figures=True)
    return PointTrace(path=path, spans=found or owner.spans)


def _supplement(
    inc: Increment,
    members: list[tuple[DocResult, Claim]],
    registry: AnchorRegistry,
    findings: list[FindingRecord],
    spans: _Spans,
    ctraces: list[ClaimTrace],
) -> Supplement | None:
    """Only where the dedupe rule said 'supplement' for the lead claim; the anchor is matched
    again with the rule's own function, and the facts it adds are marked inside the quotes."""
    if not members:
        return None
    r, lead = members[0]
    if not any(f.rule == "dedupe" and f.decision == "supplement" and f.subject == lead.title for f in findings):
        return None
    kept = {p.text for p in inc.key_points}
    claim = lead.model_copy(update={"key_points": [p for p in lead.key_points if p.text in kept]})
    anchor = match_anchor(Candidate(claim, r.doc, 0, r.extraction.relevance if r.extraction else ""), registry)
    if anchor is None:
        return None
    adds = sorted(claim_facts(claim) - facts(anchor.text))
    marked = []
    for fact in adds:
        for sid in ctraces[0].spans:
            start, end = spans.region(sid)
            hit = fact_pattern(fact).search(r.doc.text, start, end) if start >= 0 else None
            if hit is not None:
                marked.append(spans.at(r.doc.path, hit.start(), hit.end(), "fact"))
                break
    return Supplement(anchor=anchor.label, when=anchor.when, source=anchor.source, adds=adds, spans=marked)


# --- to-verify and conflicts ------------------------------------------------------------------------


def _verify(
    items: Sequence[VerifyItem],
    incs: list[IncrementTrace],
    claims: dict[str, DocResult],
    registry: AnchorRegistry,
    held: Sequence[tuple[NumberConflict, int]] = (),
) -> list[VerifyTrace]:
    """Each item with the increments whose claims raised it (by its title, or alike enough that
    compose folded the note into it; an item stating a disagreement, by the conflict's subject),
    or the briefing it was carried from."""
    notes: dict[int, list[str]] = {}
    for inc in incs:
        for ct in inc.claims:
            r = claims.get(ct.doc)
            claim = next((c for c in r.extraction.claims if c.title == ct.title), None) if r and r.extraction else None
            notes.setdefault(inc.number, []).extend(v.title for v in (claim.to_verify if claim else []))
    titles = {inc.number: ct.title for inc in incs for ct in inc.claims[:1]}
    disputed = {item: c.subject for c, item in held}  # item number -> lead title of its conflict
    out = []
    for v in items:
        if v.carried_from:
            src = next((o.source for o in registry.open_items if o.item.title == v.title), "")
            out.append(VerifyTrace(number=v.number, carried_from=v.carried_from, source=src))
            continue
        concerned = [
            n
            for n, ts in notes.items()
            if any(t == v.title or similarity(t, v.title) >= _VERIFY_SIMILAR for t in ts)
            or (n in titles and disputed.get(v.number) == titles[n])
        ]
        out.append(VerifyTrace(number=v.number, increments=sorted(set(concerned))))
    return out


def _conflicts(
    it: IncrementTrace, inc: Increment, held: Sequence[tuple[NumberConflict, int]], spans: _Spans
) -> list[Conflict]:
    """The disagreements about this increment that an item of 三 states, with each side's
    figures found in its own document (within the claim's quotes where they are written there)."""
    lead = it.claims[0].title if it.claims else inc.title
    out = []
    for c, item in held:
        if c.subject != lead:
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
    quotes = [spans.region(s) for ct in it.claims if ct.doc == doc for s in ct.spans]
    out = []
    for v in values:
        hits = list(figure_pattern(v, unit).finditer(text))
        inside = [h for h in hits if any(a <= h.start() and h.end() <= b for a, b in quotes)]
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


def _claim_spans(claims: dict[str, DocResult], doc: str, title: str, spans: _Spans) -> list[str]:
    r = claims.get(doc)
    if r is None or r.extraction is None:
        return []
    claim = next((c for c in r.extraction.claims if c.title == title), None)
    return [spans.quote(doc, q) for q in claim.evidence] if claim else []


# --- trees ------------------------------------------------------------------------------------------


def _walk(points: list[KeyPoint], prefix: str = "") -> list[tuple[str, KeyPoint]]:
    """Every point with its position ('0', '0.1', …), depth first, as the page numbers them."""
    out = []
    for i, p in enumerate(points):
        path = f"{prefix}{i}"
        out.append((path, p))
        out.extend(_walk(p.children, f"{path}."))
    return out


def _all(c: Claim) -> list[KeyPoint]:
    return [p for top in c.key_points for p in top.walk()]
