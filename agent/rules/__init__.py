"""The deterministic rule layer: no LLM, pure functions, every decision explained.

Each rule takes candidates and returns what it kept plus `Finding`s that say what happened to
every candidate and why. `agent.rules.compose` strings them together into a briefing.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from agent.core.arxiv import find_ids, id_keys, key_of, validate
from agent.core.labels import Labels
from agent.core.text import facts, locate, similarity
from agent.plan.anchors import Anchor, AnchorRegistry, bare_name, normalise_url
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction
from schemas.run import Decision, Rule

CRED_RANK = {"高": 3, "中高": 2, "中": 1, "低": 0}
REL_RANK = {"高": 3, "中": 2, "邻接": 1, "参考": 0}
MERGE_SIMILARITY = 0.6


@dataclass(frozen=True)
class Finding:
    """One decision about one candidate: which rule, what it decided, and why."""

    rule: Rule
    subject: str
    doc: str
    decision: Decision
    detail: str = ""

    def line(self) -> str:
        return f"[{self.rule}] {self.decision}: {self.subject} ({self.doc}) — {self.detail}".rstrip(" —")


@dataclass(frozen=True)
class DocResult:
    """One document's extraction (chunks already merged), or why there is none."""

    doc: SourceDoc
    extraction: FileExtraction | None
    error: str = ""


@dataclass(frozen=True)
class Candidate:
    """A claim on its way to becoming an increment, with what the rules learned about it."""

    claim: Claim
    doc: SourceDoc
    order: int
    relevance: str
    anchor: Anchor | None = None
    relation: str = "new"
    new_facts: tuple[str, ...] = ()

    @cached_property
    def arxiv_keys(self) -> frozenset[str]:
        """Versionless keys of the claim's papers, parsed once (merge compares every pair)."""
        return frozenset(k for a in self.claim.arxiv if (k := key_of(a.arxiv_id)))


@dataclass(frozen=True)
class Group:
    """One subject: the candidates of several documents merged into one increment."""

    members: tuple[Candidate, ...]

    @property
    def lead(self) -> Candidate:
        return self.members[0]

    @property
    def stars(self) -> int:
        return max(c.claim.stars for c in self.members)

    @property
    def credibility(self) -> str:
        return max((c.claim.credibility for c in self.members), key=lambda x: CRED_RANK.get(x, 0))

    @property
    def relevance(self) -> str:
        return max((c.relevance for c in self.members), key=lambda x: REL_RANK.get(x, 0))

    @property
    def arxiv(self) -> list[ArxivRef]:
        """The group's papers, one per key (v1 and v2 are one paper), in the members' order."""
        seen: dict[str, ArxivRef] = {}
        for c in self.members:
            for a in c.claim.arxiv:
                seen.setdefault(key_of(a.arxiv_id) or a.arxiv_id, a)
        return list(seen.values())

    def rank(self) -> tuple[int, int, int, int]:
        return (-self.stars, -CRED_RANK.get(self.credibility, 0), -REL_RANK.get(self.relevance, 0), self.lead.order)


@dataclass(frozen=True)
class Selection:
    increments: list[Group]
    secondary: list[Group]
    findings: list[Finding] = field(default_factory=list)


# --- 1. grounding --------------------------------------------------------------------------------


def ground(results: Sequence[DocResult]) -> tuple[list[Candidate], list[Finding]]:
    """Keep a claim only if its evidence is in its document (by characters, after folding; a
    quote elided in the middle counts when its parts occur in order, close together) and every
    arXiv ID it cites is written there.

    A quote that cannot be found is dropped on its own: the claim stays when its other quotes
    ground it and every figure of its key points is in the document (a model roughens one
    quote far more often than it invents a claim). Otherwise key points whose figures the
    document does not contain are dropped from the claim, and said so."""
    kept: list[Candidate] = []
    findings: list[Finding] = []
    order = 0
    for r in results:
        if r.extraction is None or not r.extraction.claims:
            continue
        doc_facts, doc_ids = document_facts(r.doc.text)
        for claim in r.extraction.claims:
            order += 1
            cand, f = _ground_claim(claim, r, doc_ids, doc_facts, order)
            findings += f
            kept += [cand] if cand else []
    return kept, findings


def document_facts(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What grounding checks every claim of a document against: the facts it states and the
    arXiv keys it writes."""
    return frozenset(facts(text)), id_keys(text)


def _ground_claim(
    claim: Claim, r: DocResult, doc_ids: frozenset[str], doc_facts: frozenset[str], order: int
) -> tuple[Candidate | None, list[Finding]]:
    """One claim through grounding: dropped whole, or kept with what could not be found removed."""
    assert r.extraction is not None
    found = {q: locate(q, r.doc.text) for q in claim.evidence}
    missing = [q for q, a in found.items() if a.kind == "none"]
    bad_ids = [a.arxiv_id for a in claim.arxiv if key_of(a.arxiv_id) not in doc_ids]
    stray = [p for p in claim.key_points if not _point_facts(p) <= doc_facts]
    if not claim.evidence or bad_ids or len(missing) == len(claim.evidence) or (missing and stray):
        why = (
            "no evidence quote"
            if not claim.evidence
            else f"arXiv {bad_ids[0]} is not in the document"
            if bad_ids
            else f"quote not in the document: {missing[0][:40]!r}"
            + ("" if len(missing) == len(claim.evidence) else ", and a key point's figures are not either")
        )
        return None, [Finding("grounding", claim.title, r.doc.path, "dropped", why)]
    findings = [
        Finding(
            "grounding",
            claim.title,
            r.doc.path,
            "quote dropped",
            f"not in the document: {q[:40]!r}; the claim stands on its other quotes",
        )
        for q in missing
    ]
    findings += [
        Finding("grounding", claim.title, r.doc.path, "quote elided", f"parts found in order: {q[:40]!r}")
        for q, a in found.items()
        if a.kind == "elided"
    ]
    for p in stray:
        gone = sorted(_point_facts(p) - doc_facts)
        findings.append(
            Finding(
                "grounding",
                claim.title,
                r.doc.path,
                "key point dropped",
                f"{', '.join(gone[:3])} not in the document: {p.text[:40]!r}",
            )
        )
    evidence = [q for q in claim.evidence if q not in missing]
    points = [p for p in claim.key_points if p not in stray]
    trimmed = claim.model_copy(update={"key_points": points, "evidence": evidence})
    return Candidate(trimmed, r.doc, order, r.extraction.relevance), findings


def _point_facts(p: KeyPoint) -> set[str]:
    return set().union(*(facts(x.text) for x in p.walk()))


def claim_facts(claim: Claim) -> set[str]:
    return set().union(*(_point_facts(p) for p in claim.key_points))


# --- 2. arXiv validation ---------------------------------------------------------------------------


def check_arxiv(cands: list[Candidate], date: dt.date) -> tuple[list[Candidate], list[Finding]]:
    """Drop arXiv IDs that cannot be real (bad month, wrong era, after the briefing date); the
    claim stays, without the ID."""
    out: list[Candidate] = []
    findings: list[Finding] = []
    for c in cands:
        good: list[ArxivRef] = []
        for a in c.claim.arxiv:
            v = validate(a.arxiv_id, not_after=date)
            if v.ok and v.id is not None:
                good.append(a.model_copy(update={"arxiv_id": v.id.display}))
            else:
                findings.append(Finding("arxiv", c.claim.title, c.doc.path, "id rejected", f"{a.arxiv_id}: {v.reason}"))
        out.append(replace(c, claim=c.claim.model_copy(update={"arxiv": good})))
    return out, findings


# --- 3. dedupe against anchors ------------------------------------------------------------------------


def match_anchor(c: Candidate, reg: AnchorRegistry) -> Anchor | None:
    """The anchor a claim is about: by arXiv ID, then URL, then the anchor the model named, then title."""
    for key in sorted(c.arxiv_keys):
        if hit := reg.arxiv(key):
            return hit
    for u in c.claim.urls:
        if hit := reg.url(u):
            return hit
    if c.claim.anchor:
        ids = find_ids(c.claim.anchor)
        if ids and (hit := reg.arxiv(ids[0].id.key)):
            return hit
        if hit := reg.subject(c.claim.anchor, threshold=0.45):
            return hit
    return reg.subject(c.claim.title, threshold=0.6)


def dedupe(cands: list[Candidate], reg: AnchorRegistry) -> tuple[list[Candidate], list[Candidate], list[Finding]]:
    """Split into (kept, covered). Anchored with nothing new → covered; anchored with a new
    figure, flag, version or ID → a supplement, kept. 'Nothing new' is measured, not asked."""
    kept: list[Candidate] = []
    covered: list[Candidate] = []
    findings: list[Finding] = []
    for c in cands:
        anchor = match_anchor(c, reg)
        if anchor is None:
            if c.claim.relation != "new":
                findings.append(
                    Finding(
                        "dedupe",
                        c.claim.title,
                        c.doc.path,
                        "new",
                        f"model said {c.claim.relation} ({c.claim.anchor!r}) but no anchor matches",
                    )
                )
            kept.append(replace(c, relation="new"))
            continue
        new = tuple(sorted(claim_facts(c.claim) - facts(anchor.text)))
        where = f"{anchor.label[:30]} ({anchor.when}, {anchor.source})"
        if c.claim.relation == "covered" or not new:
            why = (
                "model judged it covered"
                if c.claim.relation == "covered"
                else "no figure, flag or ID beyond the anchor"
            )
            findings.append(Finding("dedupe", c.claim.title, c.doc.path, "already covered", f"{where}: {why}"))
            covered.append(replace(c, anchor=anchor, relation="covered"))
        else:
            findings.append(
                Finding("dedupe", c.claim.title, c.doc.path, "supplement", f"{where}: adds {', '.join(new[:4])}")
            )
            kept.append(replace(c, anchor=anchor, relation="supplement", new_facts=new))
    return kept, covered, findings


# --- 4. merge -------------------------------------------------------------------------------------


def merge(cands: list[Candidate]) -> tuple[list[Group], list[Finding]]:
    """One subject found in several documents becomes one increment with several sources: a
    claim joins the first group (in the order groups were opened) holding a claim of the same
    subject (`_same_subject`)."""
    groups: list[list[Candidate]] = []
    findings: list[Finding] = []
    for c in cands:
        home = next((g for g in groups if any(_same_subject(c, o) for o in g)), None)
        if home is None:
            groups.append([c])
            continue
        home.append(c)
        findings.append(
            Finding(
                "merge",
                c.claim.title,
                c.doc.path,
                "merged",
                f"same subject as {home[0].claim.title!r} ({home[0].doc.path})",
            )
        )
    return [Group(tuple(sorted(g, key=lambda c: (-c.claim.stars, c.order)))) for g in groups], findings


def _same_subject(a: Candidate, b: Candidate) -> bool:
    if a.doc.path == b.doc.path:
        return one_release(a, b)
    if a.arxiv_keys & b.arxiv_keys:
        return True
    if {normalise_url(u) for u in a.claim.urls} & {normalise_url(u) for u in b.claim.urls}:
        return True
    return similarity(a.claim.title, b.claim.title) >= MERGE_SIMILARITY


_TOP_SECTION = re.compile(r"§\s*([^\d§；;，,]*?)\s*(\d+)|§\s*([^\s.．/§；;，,]+)")


def top_sections(section_ref: str) -> set[str]:
    """The top-level § labels a reference names: '§条目 1.1；§条目 1.5' -> {'条目1'},
    '§一.1' -> {'一'}, '§条目 1.2–1.4；§条目 3' -> {'条目1', '条目3'}."""
    out = set()
    for m in _TOP_SECTION.finditer(section_ref):
        out.add(f"{m[1].strip()}{m[2]}" if m[2] else m[3])
    return out


def one_release(a: Candidate, b: Candidate) -> bool:
    """Two claims of one document are one subject when they come from the same top-level § and
    relate to the same anchor — a model often splits a release from one of its features. Claims
    about different anchors stay apart; unanchored ones must also name a like subject (one §
    of a digest can hold several unrelated items)."""
    if not top_sections(a.claim.section_ref) & top_sections(b.claim.section_ref):
        return False
    if a.anchor is not None or b.anchor is not None:
        return a.anchor is not None and b.anchor is not None and a.anchor.key == b.anchor.key
    return similarity(subject_head(a.claim.title), subject_head(b.claim.title)) >= MERGE_SIMILARITY


def short_subject(title: str) -> str:
    """The subject of an increment title as 三 and 一 name it: before its dash, full-width colon
    or parenthesis, at most 30 characters."""
    head = re.split(r"\s+[—–-]+\s+|——|：|（|\(", title, maxsplit=1)[0].strip()
    return head[:30]


def subject_head(title: str) -> str:
    """The subject of a title: what comes before its dash, colon or parenthesis."""
    return re.split(r"\s+[—–-]+\s+|——|：|:|（|\(", title, maxsplit=1)[0].strip()


# --- sections of the living document -------------------------------------------------------------

_SECTION_REF = re.compile(r"^\s*§\s*(\d+(?:\.\d+)*)\s*(.*)$", re.S)
SECTION_ALIKE = 0.6


def _split_section(section: str) -> tuple[str, str, str] | None:
    """'§1.4 推理可观测性（新增）' -> ('1.4', '推理可观测性', '（新增）'); None without a number."""
    m = _SECTION_REF.match(section)
    if not m:
        return None
    rest = m[2].strip()
    name = re.split(r"[（(]", rest, maxsplit=1)[0].strip()
    return m[1], name, rest[len(name) :].strip()


def reconcile_sections(groups: list[Group], living: Sequence[str]) -> tuple[list[Group], list[Finding]]:
    """One number per block name, one name per block. Each document's call proposes its own
    "§1.5 …" for what the living document lacks, so two documents can propose two different
    blocks under one number, or one block under two names. A living section keeps its number;
    a proposed block like one already seen (by name) joins it; a new block keeps its number when
    it is free and otherwise takes the next free one. Strongest groups first: they keep theirs."""
    numbers: dict[str, str] = {}  # block name -> number
    for sec in living:
        if parts := _split_section(sec):
            numbers.setdefault(parts[1], parts[0])
    taken = set(numbers.values())
    findings: list[Finding] = []
    renamed: dict[int, str] = {}
    for gi, g in sorted(enumerate(groups), key=lambda p: p[1].rank()):
        parts = _split_section(g.lead.claim.suggested_section)
        if parts is None:
            continue
        num, name, tail = parts
        same = max(numbers, key=lambda n: similarity(n, name), default="")
        if same and (same == name or similarity(same, name) >= SECTION_ALIKE):
            block, number = same, numbers[same]
        else:
            block, number = name, num if num not in taken else _next_free(num, taken)
            numbers[block] = number
            taken.add(number)
        if (number, block) != (num, name):
            findings.append(
                Finding(
                    "sections",
                    g.lead.claim.title,
                    g.lead.doc.path,
                    "renumbered" if block == name else "renamed",  # a Decision either way
                    f"§{num} {name} -> §{number} {block}",
                )
            )
        renamed[gi] = f"§{number} {block}{tail}"
    out = []
    for gi, g in enumerate(groups):
        if gi not in renamed:
            out.append(g)
            continue
        members = tuple(
            replace(c, claim=c.claim.model_copy(update={"suggested_section": renamed[gi]})) if k == 0 else c
            for k, c in enumerate(g.members)
        )
        out.append(Group(members))
    return out, findings


def _next_free(number: str, taken: set[str]) -> str:
    """The next number under the same parent: 1.5 taken -> 1.6 (or the first free after it)."""
    head, _, last = number.rpartition(".")
    n = int(last)
    while True:
        n += 1
        candidate = f"{head}.{n}" if head else str(n)
        if candidate not in taken:
            return candidate


# --- 5. selection ---------------------------------------------------------------------------------


def select(groups: list[Group], *, min_stars: int, secondary_min_stars: int, max_increments: int) -> Selection:
    """Best first by stars, credibility, relevance; at most `max_increments`. The rest with enough
    stars become secondary anchors (四 and 六); below that they are noise and go nowhere.
    Never pads: too few strong groups means a short briefing, said so in the summary."""
    ranked = sorted(groups, key=Group.rank)
    inc: list[Group] = []
    sec: list[Group] = []
    findings: list[Finding] = []
    for g in ranked:
        t, d = g.lead.claim.title, g.lead.doc.path
        if g.stars >= min_stars and len(inc) < max_increments:
            inc.append(g)
            findings.append(Finding("select", t, d, "increment", f"{g.stars}★ {g.credibility} {g.relevance}"))
        elif g.stars >= secondary_min_stars:
            why = f"past the limit of {max_increments}" if g.stars >= min_stars else f"{g.stars}★ < {min_stars}★"
            sec.append(g)
            findings.append(Finding("select", t, d, "secondary anchor", why))
        else:
            findings.append(Finding("select", t, d, "dropped", f"{g.stars}★ is noise (< {secondary_min_stars}★)"))
    return Selection(sorted(inc, key=_display_key), sorted(sec, key=_display_key), findings)


def section_key(section: str) -> tuple[int, ...]:
    m = re.search(r"§\s*(\d+(?:\.\d+)*)", section)
    return tuple(int(x) for x in m.group(1).split(".")) if m else (999,)


def _display_key(g: Group) -> tuple[tuple[int, ...], dt.datetime, int]:
    """Increments read in living-document order: by suggested section, then in the order the
    evening produced them (document time; a date-only file counts from the start of its date),
    then as the model ranked them within a document."""
    ts = g.lead.doc.timestamp or dt.datetime.min.replace(tzinfo=dt.UTC)
    return (section_key(g.lead.claim.suggested_section), ts, g.lead.order)


# --- 6. contradictions ------------------------------------------------------------------------------

_MEASURE = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(tok/s|tokens/s|%|×|ms|GB|GiB|bit)(?![A-Za-z])", re.I)


def _measures(claim: Claim) -> dict[str, set[str]]:
    """unit → figures written with it, e.g. {'tok/s': {'16200'}}."""
    out: dict[str, set[str]] = {}
    for p in claim.key_points:
        for node in p.walk():
            for num, unit in _MEASURE.findall(node.text):
                out.setdefault(unit.lower(), set()).add(num.replace(",", ""))
    return out


@dataclass(frozen=True)
class Figures:
    """What one document states for a unit: its document and the figures, sorted."""

    doc: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class NumberConflict:
    """Two documents on one subject give figures with the same unit that share nothing. A fact,
    not a sentence: the layout words it for 三 and the trace finds each side's figures."""

    subject: str  # the lead claim's title of the group
    unit: str
    sides: tuple[Figures, Figures]
    risk: str = "中"  # a disagreement between sources: worth a look, not an alarm

    def words(self, labels: Labels) -> str:
        """The disagreement as 三 states it (and the contradiction finding's detail)."""
        (a, va), (b, vb) = ((s.doc, " / ".join(s.values)) for s in self.sides)
        return labels.conflict_problem.format(a=a, va=va, b=b, vb=vb, unit=self.unit)


def number_conflicts(g: Group) -> list[NumberConflict]:
    """Figures with the same unit that share nothing between two documents on one subject."""
    by_doc: dict[str, dict[str, set[str]]] = {}
    for c in g.members:
        for unit, nums in _measures(c.claim).items():
            by_doc.setdefault(c.doc.path, {}).setdefault(unit, set()).update(nums)
    docs = list(by_doc)
    out: list[NumberConflict] = []
    for i, a in enumerate(docs):
        for b in docs[i + 1 :]:
            for unit in sorted(by_doc[a].keys() & by_doc[b].keys()):
                va, vb = by_doc[a][unit], by_doc[b][unit]
                if va.isdisjoint(vb):
                    sides = (Figures(a, tuple(sorted(va))), Figures(b, tuple(sorted(vb))))
                    out.append(NumberConflict(g.lead.claim.title, unit, sides))
    return out


# --- relevance of a source, as the briefing means it ----------------------------------------------


def relevance(doc: SourceDoc, extraction: FileExtraction, on_topic: int) -> tuple[str, Finding | None]:
    """The 一 label of a source, derived from what it carried rather than how much else it held:
    a same-evening briefing of another topic is 邻接; a report with at least one grounded claim
    on the topic is 高, however much else it holds; a card or a queue with none is 参考. Any
    other source keeps the model's label. A label that differs from the model's is a finding."""
    if doc.kind == "adjacent":
        label, why = "邻接", "a same-evening briefing of another topic"
    elif doc.kind == "report" and on_topic:
        label, why = "高", f"a report with {on_topic} grounded claim(s) on the topic"
    elif doc.kind in ("paper_card", "queue") and not on_topic:
        label, why = "参考", f"a {doc.kind.replace('_', ' ')} with no grounded claim on the topic"
    else:
        return extraction.relevance, None
    if label == extraction.relevance:
        return label, None
    return label, Finding(
        "relevance", doc.name, doc.path, "relabelled", f"{label}: {why}; the model said {extraction.relevance}"
    )


# --- 7. resolution of carried to-verify items -----------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    title: str  # the open item's title, as the earlier briefing wrote it
    doc: SourceDoc
    how: str


def resolve(results: Sequence[DocResult], reg: AnchorRegistry) -> tuple[list[Resolved], list[Finding]]:
    """An open item stops being carried when a document settles it and quotes the sentence that
    does; the quote is checked like any evidence, and the item must be one that is open."""
    done: list[Resolved] = []
    findings: list[Finding] = []
    for r in results:
        if r.extraction is None or r.doc.kind == "adjacent":
            continue
        for res in r.extraction.resolved:
            named = bare_name(res.item)
            item = max(reg.open_items, key=lambda o: similarity(named, bare_name(o.item.title)), default=None)
            if item is None or similarity(named, bare_name(item.item.title)) < 0.6:
                findings.append(Finding("resolve", res.item, r.doc.path, "ignored", "not an open to-verify item"))
            elif locate(res.evidence, r.doc.text).kind == "none":
                findings.append(
                    Finding(
                        "resolve",
                        item.item.title,
                        r.doc.path,
                        "not resolved",
                        f"quote not in the document: {res.evidence[:40]!r}",
                    )
                )
            elif all(d.title != item.item.title for d in done):
                done.append(Resolved(item.item.title, r.doc, res.how))
                findings.append(Finding("resolve", item.item.title, r.doc.path, "resolved", res.how))
    return done, findings
