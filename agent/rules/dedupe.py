"""Rule 3: tonight's claims against what is already known, and the open items tonight settles.

The rule the extraction prompts quote (`agent.core.novelty.NOVELTY`), applied on the facts: a
claim about an anchored arXiv ID, URL or subject is *already covered* unless it adds a figure,
flag, version or ID that nothing told of that subject had (`AnchorRegistry.told`: every evening
and entry that told it); then it is a *supplement*. A new version of an anchored product is
*new*. 'Nothing new' is measured, not asked of the model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from agent.core.arxiv import find_ids
from agent.core.text import facts, locate, similarity
from agent.plan.anchors import Anchor, AnchorRegistry, bare_name
from agent.rules.claims import Candidate, DocResult, Finding
from agent.rules.grounding import DocText, claim_facts
from agent.rules.merge import release_of, same_release, title_release
from schemas.documents import SourceDoc

Releases = dict[str, list[tuple[tuple[tuple[str, ...], str], Anchor]]]  # version -> (release, anchor)


def anchored_releases(reg: AnchorRegistry) -> Releases:
    """The releases the registry's subjects name, by version."""
    out: Releases = {}
    for a in reg.anchors:
        if a.kind == "subject" and (release := title_release(a.label)) is not None:
            out.setdefault(release[1], []).append((release, a))
    return out


def match_anchor(c: Candidate, reg: AnchorRegistry, releases: Releases | None = None) -> Anchor | None:
    """The anchor a claim is about: by arXiv ID, then URL, then the anchor the model named, then
    the release it names, then title. `releases`: `anchored_releases(reg)`, for many claims."""
    for key in sorted(c.arxiv_keys):
        if hit := reg.arxiv(key):
            return hit
    for u in c.claim.urls:
        if hit := reg.url(u):
            return hit
    if c.claim.anchor and (cited := reg.by_id(c.claim.anchor)) is not None:
        return cited
    if c.claim.anchor:  # a name, as answers gave before anchors had ids
        ids = find_ids(c.claim.anchor)
        if ids and (hit := reg.arxiv(ids[0].id.key)):
            return hit
        if hit := reg.subject(c.claim.anchor, threshold=0.45):
            return hit
    if (release := release_of(c.claim)) is not None:  # one product, one version: the anchored release
        known = (releases if releases is not None else anchored_releases(reg)).get(release[1], [])
        same = [a for r, a in known if same_release(release, r)]
        if same:
            return max(same, key=lambda a: similarity(c.claim.title, a.label))
    return reg.subject(c.claim.title, threshold=0.6)


def dedupe(
    cands: list[Candidate], reg: AnchorRegistry, judge: str = "model"
) -> tuple[list[Candidate], list[Candidate], list[Finding]]:
    """(kept, covered): an anchored claim with a new fact is a supplement, kept. `judge` is who
    gave the claims their relation, so a finding says "model" only where a model judged."""
    kept: list[Candidate] = []
    covered: list[Candidate] = []
    findings: list[Finding] = []
    releases = anchored_releases(reg)
    known: dict[Anchor, frozenset[str]] = {}  # each matched anchor's facts, for all the claims about it
    for c in cands:
        anchor = match_anchor(c, reg, releases)
        if anchor is None:
            if c.claim.relation != "new":
                why = f"{judge} said {c.claim.relation} ({c.claim.anchor!r}) but no anchor matches"
                findings.append(Finding("dedupe", c.claim.title, c.doc.path, "new", why, ref=c.ref))
            kept.append(replace(c, relation="new"))
            continue
        where = f"{anchor.label[:30]} ({anchor.when}, {anchor.source})"
        if (release := release_of(c.claim)) is not None and _next_version(release, anchor):
            why = f"a new version of {where}: new, not a supplement (agent.core.novelty)"
            findings.append(Finding("dedupe", c.claim.title, c.doc.path, "new", why, ref=c.ref))
            kept.append(replace(c, relation="new"))
            continue
        if anchor not in known:  # every fact told of the subject, on any evening, in any entry
            known[anchor] = frozenset(facts(" ".join(a.text for a in reg.told(anchor))))
        new = tuple(sorted(claim_facts(c.claim) - known[anchor]))
        if c.claim.relation == "covered" or not new:
            judged = c.claim.relation == "covered"
            why = f"{where}: " + (f"{judge} judged it covered" if judged else "no figure, flag or ID beyond the anchor")
            findings.append(Finding("dedupe", c.claim.title, c.doc.path, "already covered", why, c.ref, anchor.key))
            covered.append(replace(c, anchor=anchor, relation="covered"))
        else:
            why = f"{where}: adds {', '.join(new[:4])}"
            findings.append(Finding("dedupe", c.claim.title, c.doc.path, "supplement", why, c.ref, anchor.key))
            kept.append(replace(c, anchor=anchor, relation="supplement", new_facts=new))
    return kept, covered, findings


def _next_version(release: tuple[tuple[str, ...], str], anchor: Anchor) -> bool:
    """The claim is another version of the product `anchor` is a release of, whether either names
    the package or the product (`one_product`): `NOVELTY`'s "new"."""
    theirs = title_release(anchor.label)
    return theirs is not None and theirs[1] != release[1] and same_release(release, (theirs[0], release[1]))


@dataclass(frozen=True)
class Resolved:
    title: str  # the open item's title, as the earlier briefing wrote it
    doc: SourceDoc
    how: str
    origin: str  # 'M-D' of the briefing that first raised it


def resolve(
    results: Sequence[DocResult], reg: AnchorRegistry, read: Callable[[str], DocText] = DocText
) -> tuple[list[Resolved], list[Finding]]:
    """The open items a document settles, quoting (as grounded evidence) the sentence that does.
    `read` is how the run reads a document, as grounding does."""
    done: list[Resolved] = []
    findings: list[Finding] = []
    for r in results:
        if r.extraction is None or r.doc.kind == "adjacent" or not r.extraction.resolved:
            continue
        folded = read(r.doc.text).folded
        for res in r.extraction.resolved:
            named = bare_name(res.item)
            cited = reg.item_by_id(res.item)
            item = cited or max(reg.open_items, key=lambda o: similarity(named, bare_name(o.item.title)), default=None)
            if item is None or (cited is None and similarity(named, bare_name(item.item.title)) < 0.6):
                findings.append(Finding("resolve", res.item, r.doc.path, "ignored", "not an open to-verify item"))
            elif locate(res.evidence, r.doc.text, folded=folded).kind == "none":
                why = f"quote not in the document: {res.evidence[:40]!r}"
                findings.append(Finding("resolve", item.item.title, r.doc.path, "not resolved", why))
            elif all(d.title != item.item.title for d in done):
                done.append(Resolved(item.item.title, r.doc, res.how, item.origin))
                findings.append(Finding("resolve", item.item.title, r.doc.path, "resolved", res.how))
    return done, findings
