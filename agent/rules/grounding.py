"""Rules 1 and 2: a claim stands only on what its document says; its arXiv IDs must be real.

Grounding checks every evidence quote by characters (after folding; Chinese has no word
boundaries), every arXiv ID and URL against the document's own text, and every figure of a key
point against the figures the document states. What grounding finds stays on the candidate (its
reference, each quote's alignment), so later stages and the trace never locate a quote again.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from agent.core.arxiv import find_ids, id_keys, key_of, validate
from agent.core.text import Alignment, Folded, facts, fold, fold_map, locate
from agent.rules.claims import Candidate, ClaimRef, DocResult, Finding
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction

# Claims one answer may bring into the rules. A report's answer holds a handful; hundreds mean a
# model looping or a dump read item by item, and the rules compare a document's claims pairwise.
MAX_CLAIMS = 60


def bound_claims(parts: Sequence[FileExtraction], doc: SourceDoc) -> tuple[list[FileExtraction], list[Finding]]:
    """Each answer of a document cut to its first MAX_CLAIMS claims; one finding says how many went."""
    total = sum(len(p.claims) for p in parts)
    dropped = sum(max(0, len(p.claims) - MAX_CLAIMS) for p in parts)
    if not dropped:
        return list(parts), []
    why = f"{dropped} of its {total} claims dropped: one answer holds at most {MAX_CLAIMS}"
    cut = [p.model_copy(update={"claims": p.claims[:MAX_CLAIMS]}) for p in parts]
    return cut, [Finding("grounding", doc.name, doc.path, "dropped", why)]


@dataclass(frozen=True)
class DocText:
    """A document's text as the rules read it: the facts, arXiv keys and folded text it writes,
    each computed when a rule first asks. A function of the text alone, so a run reads each
    document once, for every rule and topic (`cache(DocText)`, see `agent.pipeline`)."""

    text: str

    @cached_property
    def facts(self) -> frozenset[str]:
        return frozenset(facts(self.text))

    @cached_property
    def ids(self) -> frozenset[str]:
        return id_keys(self.text)

    @cached_property
    def folded(self) -> Folded:
        return fold_map(self.text)


def ground(
    results: Sequence[DocResult], read: Callable[[str], DocText] = DocText
) -> tuple[list[Candidate], list[Finding]]:
    """Keep a claim only if its evidence (a quote elided in the middle counts when its parts occur
    in order, close together) and every arXiv ID it cites are in its document. A quote not found
    is dropped alone if the other quotes ground the claim and every figure of its key points is in
    the document (a model roughens a quote far more often than it invents a claim). Of a kept
    claim, key points whose figures the document lacks go, and so does a URL it does not write."""
    kept: list[Candidate] = []
    findings: list[Finding] = []
    order = 0
    for r in results:
        if r.extraction is None or not r.extraction.claims:
            continue
        doc = read(r.doc.text)
        for claim, ref in zip(r.extraction.claims, r.claim_refs(), strict=True):
            order += 1
            cand, f = _ground_claim(claim, r, ref, order, doc_facts=doc.facts, doc_ids=doc.ids, folded=doc.folded)
            findings += f
            kept += [cand] if cand else []
    return kept, findings


def _ground_claim(
    claim: Claim,
    r: DocResult,
    ref: ClaimRef,
    order: int,
    *,
    doc_facts: frozenset[str],
    doc_ids: frozenset[str],
    folded: Folded,
) -> tuple[Candidate | None, list[Finding]]:
    """One claim through grounding (against its document's facts, arXiv keys and folded text):
    dropped whole, or kept with what could not be found removed."""
    assert r.extraction is not None
    found = {q: locate(q, r.doc.text, folded=folded) for q in claim.evidence}
    missing = [q for q, a in found.items() if a.kind == "none"]
    bad_ids = [a.arxiv_id for a in claim.arxiv if key_of(a.arxiv_id) not in doc_ids]
    stray = [p for p in claim.key_points if not point_facts(p) <= doc_facts]

    if why := _why_dropped(claim, missing, bad_ids, bool(stray)):
        return None, [Finding("grounding", claim.title, r.doc.path, "dropped", ref=ref, detail=why)]
    urls = [u for u in claim.urls if written_in(u, folded.text)]
    findings = _trimmed(claim, r.doc.path, ref, found, stray, doc_facts, [u for u in claim.urls if u not in urls])
    section, named = own_section(claim.section_ref)
    if named:
        why = f"section_ref names {named[0][:60]!r}, not a place in this document; kept {section or '(none)'!r}"
        findings.append(Finding("grounding", claim.title, r.doc.path, "relabelled", why, ref))
    else:
        section = claim.section_ref
    evidence = [q for q in claim.evidence if q not in missing]
    points = [p for p in claim.key_points if p not in stray]
    update = {"key_points": points, "evidence": evidence, "urls": urls, "section_ref": section}
    trimmed = claim.model_copy(update=update)
    alignments = tuple(found[q] for q in evidence)
    return Candidate(trimmed, r.doc, ref, order, r.extraction.relevance, alignments), findings


def _why_dropped(claim: Claim, missing: list[str], bad_ids: list[str], stray: bool) -> str:
    """Why the whole claim goes (empty: it stays): no quote, an arXiv ID its document does not
    write, no quote found, or a quote missing and a key point's figures not in the document."""
    if not claim.evidence:
        return "no evidence quote"
    if bad_ids:
        return f"arXiv {bad_ids[0]} is not in the document"
    if len(missing) == len(claim.evidence):
        return f"quote not in the document: {missing[0][:40]!r}"
    if missing and stray:
        return f"quote not in the document: {missing[0][:40]!r}, and a key point's figures are not either"
    return ""


def _trimmed(
    claim: Claim,
    doc: str,
    ref: ClaimRef,
    found: dict[str, Alignment],
    stray: list[KeyPoint],
    doc_facts: frozenset[str],
    urls: list[str],
) -> list[Finding]:
    """What grounding took out of a claim it kept: each a finding."""
    t = claim.title
    missing = [q for q, a in found.items() if a.kind == "none"]
    elided = [q for q, a in found.items() if a.kind == "elided"]
    out = [Finding("grounding", t, doc, "quote dropped", f"not in the document: {q[:40]!r}", ref) for q in missing]
    out += [Finding("grounding", t, doc, "quote elided", f"parts found in order: {q[:40]!r}", ref) for q in elided]
    for p in stray:
        gone = ", ".join(sorted(point_facts(p) - doc_facts)[:3])
        out.append(Finding("grounding", t, doc, "key point dropped", f"{gone} not in it: {p.text[:40]!r}", ref))
    out += [Finding("grounding", t, doc, "url dropped", f"not in the document: {u[:60]!r}", ref) for u in urls]
    return out


_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:/*", re.I)
_HOST = re.compile(r"(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?(?:[/?#]|$)", re.I)
_DOMAIN = re.compile(r"[a-z0-9-]\.(?:com|org|net|io|ai|dev|html?|md)\b", re.I)


def written_in(url: str, folded: str) -> bool:
    """Whether a claim's source is one its document (`folded`: its text as `fold` reads it) names.
    A web link must be written in the text, a trailing slash aside; a file:// link or a local path
    is not a source a reader can follow. A plain name ('Spheron Blog') stands."""
    u = url.strip()
    if not u:
        return False
    scheme = _SCHEME.match(u)
    if scheme is None and "/" not in u and (" " in u.strip() or not _DOMAIN.search(u)):
        return True  # a name, even one that holds a domain ('vllm.ai blog 2026-09')
    if scheme and not scheme[0].lower().startswith(("http://", "https://")):
        return False
    if u.startswith(("/", ".", "~")) or ".." in u:
        return False
    if not _HOST.match(_SCHEME.sub("", u)):  # a path with no host is a local file, not a link
        return False
    bare = _SCHEME.sub("", u).rstrip("/")
    return bool(bare) and fold(bare).lower() in folded.lower()


# A file named in a section reference: a path, a file name, a dated report name, a link, or '..'.
_FOREIGN = re.compile(
    r"[^\s（）()§；;]*(?:\.\.|://|\.(?:md|markdown|json|jsonl|html?|txt|toml|ya?ml|py)\b|\d{4}-\d\d-\d\d-\w)[^\s（）()§；;]*"
    r"|(?<![^\s（(])[/~][^\s（）()§；;]+",
    re.I,
)


def own_section(section_ref: str) -> tuple[str, list[str]]:
    """A claim's section reference without the files it names, and those files: 来源 prints it
    after the document's path, so 'inbox/kai/x.md §一' would credit another report. Before a '§'
    a word with a slash is a path; after it, a section's own name ('§二（mcp 与 @x/sdk 行）')."""
    kept: list[str] = []
    named: list[str] = []
    for part in re.split(r"[；;]", section_ref):
        head, mark, rest = part.partition("§")
        paths = [w for w in head.split() if "/" in w or "\\" in w or _FOREIGN.search(w)]
        named += paths + _FOREIGN.findall(rest)
        place = " ".join(_FOREIGN.sub(" ", rest).split())
        words = [w for w in head.split() if w not in paths] + ([mark + place] if place else [])
        if words:
            kept.append(" ".join(words))
    return "；".join(kept), named


def point_facts(p: KeyPoint) -> set[str]:
    """The figures, flags, versions and names a key point (with its nested steps) states."""
    return set().union(*(facts(x.text) for x in p.walk()))


def claim_facts(claim: Claim) -> set[str]:
    return set().union(*(point_facts(p) for p in claim.key_points))


def check_arxiv(
    cands: list[Candidate], date: dt.date
) -> tuple[list[Candidate], list[tuple[Candidate, str]], list[Finding]]:
    """Drop arXiv IDs that cannot be real (bad month, wrong era, after the briefing date), and
    links to them; the claim stays. Returns the claims, each (claim, ID) rejected, and why."""
    out: list[Candidate] = []
    rejected: list[tuple[Candidate, str]] = []
    findings: list[Finding] = []
    for c in cands:
        good: list[ArxivRef] = []
        gone: set[str] = set()
        for a in c.claim.arxiv:
            v = validate(a.arxiv_id, not_after=date)
            if v.ok and v.id is not None:
                good.append(a.model_copy(update={"arxiv_id": v.id.display}))
                continue
            detail = f"{a.arxiv_id}: {v.reason}"
            findings.append(
                Finding("arxiv", c.claim.title, c.doc.path, "id rejected", detail, ref=c.ref, target=a.arxiv_id)
            )
            rejected.append((c, a.arxiv_id))
            gone |= {m.id.key for m in find_ids(a.arxiv_id)}
        urls = [u for u in c.claim.urls if not id_keys(u) & gone]
        out.append(replace(c, claim=c.claim.model_copy(update={"arxiv": good, "urls": urls})))
    return out, rejected, findings
