"""The rule chain over one evening: extractions and anchors in, decisions out, as typed facts.

grounding → arXiv → relevance → dedupe (`prepare`) → the stories: the editor's (a model's composition
the checker passed) or the floor's (merge by subject keys) → sections → select → resolve → 六's levels
→ 三 (`finish`). It returns what was decided, never a sentence: `agent.rules.layout` words it.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.plan.anchors import Anchor, AnchorRegistry
from agent.rules.claims import Candidate, DocResult, Edited, Finding, Group, Selection
from agent.rules.dedupe import Resolved, dedupe, resolve
from agent.rules.edit import NumberConflict, edit
from agent.rules.grounding import DocText, check_arxiv, ground
from agent.rules.merge import merge
from agent.rules.priority import Levels, prioritise
from agent.rules.select import continued_papers, reconcile_sections, relevance, select
from agent.rules.verify import Doubt, Stopped, to_verify
from schemas.documents import SourceDoc


@dataclass(frozen=True)
class Limits:
    min_increments: int = 3
    max_increments: int = 8
    min_stars: int = 4
    secondary_min_stars: int = 3
    max_secondary: int = 8  # secondary anchors an evening holds: a busy evening's 3★ tail is not a list to write down
    max_continued: int = 20  # earlier papers 四 lists: the newest and those named tonight, not the whole history
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
    # how the rules read a document: one `cache(DocText)` per run, so each is read once
    read: Callable[[str], DocText] = field(compare=False, repr=False)
    living: str = field(default="", repr=False)  # the living document's text: the style its new lines follow
    judge: str = "model"  # who answered the extractions, as findings name it ("offline extractor" when none did)

    @property
    def sources(self) -> list[DocResult]:
        """The documents increments may come from: all but other topics' briefings."""
        return [r for r in self.results if r.doc.kind != "adjacent"]


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
    levels: Levels  # 六: each row's level, and which row says each settled question
    findings: list[Finding]
    doc_lines: Mapping[str, str] = field(default_factory=dict)  # document -> the editor's 五 line for it
    floor: str = ""  # why the rules' floor assembled the evening ('' when the editor composed it, or nothing to)
    continued: Sequence[tuple[Anchor, bool]] = ()  # 四's earlier papers in display order, each: named again tonight
    continued_total: int = 0  # every earlier paper the anchors hold, listed or not (the summary's count)

    @property
    def supplements(self) -> list[Group]:
        """Increments that add to an anchor rather than start a subject."""
        return [g for g in self.selection.increments if g.lead.relation == "supplement"]


@dataclass(frozen=True)
class Prepared:
    """The evening up to the editor: the claims that survived grounding, the arXiv check and dedupe,
    and the floor's groups (merged by subject keys), which the composing call may replace."""

    scope: Scope
    kept: list[Candidate]  # grounded, checked, not covered: what stories are made of
    covered: list[Candidate]
    rejected: list[tuple[Candidate, str]]  # (claim, impossible arXiv ID)
    relevance: dict[str, str]
    floor: list[Group]  # merged by subject keys, exact repeats dropped: the assembly without a model
    findings: list[Finding]


def prepare(scope: Scope) -> Prepared:
    """Grounding, relevance, arXiv and dedupe, then the floor's merge: each decision a finding."""
    findings = _unread(scope.results)
    cands, f = ground(scope.sources, scope.read)
    findings += f
    rel, f = _relevance(scope.results, cands, scope.limits.min_stars, scope.judge)
    findings += f
    cands, rejected, f = check_arxiv(cands, scope.date)
    findings += f
    kept, covered, f = dedupe(cands, scope.registry, scope.judge)
    findings += f
    groups, f = merge(kept)
    findings += f
    groups, f = edit(groups)
    findings += f
    return Prepared(scope, kept, covered, rejected, rel, groups, findings)


def run_chain(scope: Scope) -> RuleOutcome:
    """Every rule in order, with the floor's groups: the evening when no model composes it."""
    return finish(prepare(scope))


def finish(p: Prepared, composed: Edited | None = None) -> RuleOutcome:
    """Sections, selection, settled items, 六's levels and 三 over the stories: the model's when its
    composition passed the checks (`composed`), else the floor's."""
    scope, lim = p.scope, p.scope.limits
    groups = composed.groups if composed is not None else p.floor
    covered = [*p.covered, *(composed.covered if composed is not None else ())]
    findings = [*p.findings, *(composed.findings if composed is not None else ())]
    groups, f = reconcile_sections(groups, scope.registry.sections)
    findings += f
    sel = select(
        groups,
        min_stars=lim.min_stars,
        secondary_min_stars=lim.secondary_min_stars,
        max_increments=lim.max_increments,
        max_secondary=lim.max_secondary,
    )
    findings += sel.findings
    resolved, f = resolve(scope.sources, scope.registry, scope.read)
    findings += f
    levels, f = prioritise(sel, resolved)
    findings += f
    settled = {x.title for x in resolved}
    doubts, stopped, conflicts, f = to_verify(
        sel,
        scope.registry,
        p.rejected,
        settled,
        scope.date,
        budget=lim.max_to_verify,
        carry_evenings=lim.carry_evenings,
    )
    findings += f
    named = {k for r in scope.sources for k in scope.read(r.doc.text).ids}
    continued, total, f = continued_papers(scope.registry, named, lim.max_continued)
    findings += f
    doc_lines = composed.doc_lines if composed is not None else {}
    return RuleOutcome(
        scope,
        sel,
        covered,
        resolved,
        doubts,
        stopped,
        conflicts,
        p.relevance,
        levels,
        findings,
        doc_lines,
        continued=continued,
        continued_total=total,
    )


def _unread(results: Sequence[DocResult]) -> list[Finding]:
    """Failed extractions, and the claims of other topics' briefings, which are only references."""
    findings = [
        Finding("extraction", r.doc.name, r.doc.path, "failed", r.error) for r in results if r.extraction is None
    ]
    why = "a same-evening briefing of another topic is not a source of increments"
    for r in results:
        if r.doc.kind == "adjacent" and r.extraction:
            claims = zip(r.extraction.claims, r.claim_refs(), strict=True)
            findings += [Finding("adjacent", c.title, r.doc.path, "reference only", why, ref) for c, ref in claims]
    return findings


def _relevance(
    results: Sequence[DocResult], cands: list[Candidate], min_stars: int, judge: str = "model"
) -> tuple[dict[str, str], list[Finding]]:
    on_topic = Counter(c.doc.path for c in cands)
    strong = Counter(c.doc.path for c in cands if c.claim.stars >= min_stars)
    labels_of: dict[str, str] = {}
    findings: list[Finding] = []
    for r in results:
        if r.extraction is not None:
            path = r.doc.path
            labels_of[path], finding = relevance(r.doc, r.extraction, on_topic[path], strong[path], judge)
            findings += [finding] if finding else []
    return labels_of, findings


__all__ = ["Doubt", "Limits", "Prepared", "RuleOutcome", "Scope", "Stopped", "finish", "prepare", "run_chain"]
