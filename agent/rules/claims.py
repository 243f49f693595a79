"""The values the rules pass along: a claim with its reference, and the decisions taken about it.

Every claim gets a `ClaimRef` when the answers are joined and keeps it through every rule; every
`Finding` names the claim it is about and, where a decision points somewhere (merged into, covered
by, folded into), its target. The trace, the page, the run log and the eval read these fields; no
stage reads a decision back out of a finding's prose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from agent.core.arxiv import key_of
from agent.core.text import Alignment
from agent.plan.anchors import Anchor
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction
from schemas.run import Decision, Rule

if TYPE_CHECKING:
    from agent.rules.edit import NumberConflict

_C = TypeVar("_C")
CRED_RANK = {"高": 3, "中高": 2, "中": 1, "低": 0}
REL_RANK = {"高": 3, "中": 2, "邻接": 1, "参考": 0}


@dataclass(frozen=True, order=True)
class ClaimRef:
    """A claim's identity: its document, the 0-based part of it that was asked, and its 0-based
    place in that part's answer. A claim dropped before the rules shifts no other claim's
    reference, so a reader of an answer finds each claim's decisions by `with_refs` alone."""

    doc: str
    index: int
    part: int = 0

    def __str__(self) -> str:
        """'doc#index', or 'doc#part.index' for a later part of a document asked in parts."""
        return f"{self.doc}#{self.part}.{self.index}" if self.part else f"{self.doc}#{self.index}"


def with_refs(doc: str, part: int, claims: Sequence[_C]) -> list[tuple[ClaimRef, _C]]:
    """One answer's claims (the answer to part `part` of `doc`), in its order, each with its reference."""
    return [(ClaimRef(doc, i, part), c) for i, c in enumerate(claims)]


@dataclass(frozen=True)
class Finding:
    """One decision about one candidate: which rule, what it decided, and why. `ref` is the
    claim it is about (None for a document or an open item); `target` is where the decision
    points: the claim it was merged or folded into, or the anchor that covers it."""

    rule: Rule
    subject: str
    doc: str
    decision: Decision
    detail: str = ""
    ref: ClaimRef | None = None
    target: str = ""

    def line(self) -> str:
        return f"[{self.rule}] {self.decision}: {self.subject} ({self.doc}) — {self.detail}".rstrip(" —")


@dataclass(frozen=True)
class DocResult:
    """One document's extraction (parts merged), or why there is none. `refs` name its claims in
    order; left empty, they are the claims' places in one answer."""

    doc: SourceDoc
    extraction: FileExtraction | None
    error: str = ""
    refs: tuple[ClaimRef, ...] = ()

    def claim_refs(self) -> tuple[ClaimRef, ...]:
        claims = self.extraction.claims if self.extraction else []
        return self.refs or tuple(ref for ref, _ in with_refs(self.doc.path, 0, claims))


@dataclass(frozen=True)
class Candidate:
    """A claim on its way to becoming an increment, with what the rules learned about it.
    `alignments` are where grounding found each evidence quote, in the claim's order."""

    claim: Claim
    doc: SourceDoc
    ref: ClaimRef
    order: int  # the evening's order of claims: documents as read, then as the model ranked them
    relevance: str
    alignments: tuple[Alignment, ...] = ()
    anchor: Anchor | None = None
    relation: str = "new"
    new_facts: tuple[str, ...] = ()

    @cached_property
    def arxiv_keys(self) -> frozenset[str]:
        """Versionless keys of the claim's papers."""
        return frozenset(k for a in self.claim.arxiv if (k := key_of(a.arxiv_id)))


@dataclass(frozen=True)
class Point:
    """A key point of an increment and the claim it came from (whose quotes it rests on)."""

    point: KeyPoint
    ref: ClaimRef


@dataclass(frozen=True)
class Group:
    """One subject: the candidates merged into one increment, and what the editor's pass
    (`agent.rules.edit`) made of them: its points, title, credibility reason and disputes."""

    members: tuple[Candidate, ...]
    points: tuple[Point, ...] = ()
    title: str = ""
    reason: str = ""
    disputes: tuple[NumberConflict, ...] = ()
    living: str = ""  # the editor's line for the living document (empty: E2 words it from the points)
    by_editor: bool = False  # composed by the editor model (its points say a dispute themselves)

    @property
    def lead(self) -> Candidate:
        return self.members[0]

    @property
    def headline(self) -> str:
        """The increment's title: the edited one, or (before the editor's pass) the lead's."""
        return self.title or self.lead.claim.title

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
    def docs(self) -> list[str]:
        """The documents behind it, each once, in the members' order."""
        return list(dict.fromkeys(c.doc.path for c in self.members))

    @property
    def arxiv(self) -> list[ArxivRef]:
        """The group's papers, one per key (v1 and v2 are one paper), in the members' order."""
        seen: dict[str, ArxivRef] = {}
        for c in self.members:
            for a in c.claim.arxiv:
                seen.setdefault(key_of(a.arxiv_id) or a.arxiv_id, a)
        return list(seen.values())

    @property
    def is_paper(self) -> bool:
        """A paper's story: every source of it cites the paper and none links anything but arXiv. A
        release or an advisory that names a paper links its release page, repository or advisory:
        it is the release's story."""
        return all(c.claim.arxiv and all("arxiv.org" in u.lower() for u in c.claim.urls) for c in self.members)

    def rank(self) -> tuple[int, int, int, int]:
        return (-self.stars, -CRED_RANK.get(self.credibility, 0), -REL_RANK.get(self.relevance, 0), self.lead.order)


@dataclass(frozen=True)
class Selection:
    increments: list[Group]
    secondary: list[Group]
    findings: list[Finding]


@dataclass(frozen=True)
class Edited:
    """The evening as the editor (a model) composed it and the checker passed it: its stories as
    groups, the claims it judged already covered, and its line of 五 for each document."""

    groups: list[Group]
    covered: list[Candidate]
    doc_lines: dict[str, str]
    findings: list[Finding]
