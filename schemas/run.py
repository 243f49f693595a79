"""The run record: one versioned, typed JSON per evening, from which the briefing's page is rebuilt.

It carries the briefing, every rule decision, and what the reader needs to trust a line without
rerunning anything: where each quote sits in its document (offsets into the document's text,
which is embedded once), how faithfully it aligned, which quote a key point rests on, which
to-verify items an increment raises, which figures disagree, what a supplement adds to its anchor,
and where the claims the rules removed came from. A page built from an old record looks the same
as the night it was written, whatever the workspace holds now.

Offsets are Python string indices (code points) into `Document.text`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.briefing import Briefing, Strict

RUN_SCHEMA_VERSION = 2

MatchKind = Literal["exact", "folded", "fuzzy", "elided", "none"]

# Every rule of the chain and every decision one can take, spelled once. The strings are the run
# record's (and `--explain`'s) vocabulary: the page, the eval and the workbench tally them, so a
# new value is added here and never renamed.
Rule = Literal[
    "extraction",
    "adjacent",
    "injection",
    "grounding",
    "arxiv",
    "dedupe",
    "merge",
    "sections",
    "select",
    "relevance",
    "resolve",
    "carry",
    "to-verify",
    "contradiction",
    "priority",
    "compose",
]
Decision = Literal[
    "failed",
    "reference only",
    "dropped",
    "quote dropped",
    "quote elided",
    "key point dropped",
    "id rejected",
    "new",
    "already covered",
    "supplement",
    "merged",
    "renumbered",
    "renamed",
    "increment",
    "secondary anchor",
    "relabelled",
    "ignored",
    "not resolved",
    "resolved",
    "carried over",
    "not carried",
    "dropped unverified",
    "to verify",
    "dropped by budget",
    "url dropped",
    "point folded",
    "figure withheld",
    "folded",
    "urgent",
    "left out",
    "floor",
]


class Document(Strict):
    """A document of the evening, embedded once; spans point into `text`."""

    path: str = Field(description="Workspace-relative path, the key every span refers to.")
    kind: str = Field(description="report / baseline / adjacent / paper_card / queue / living.")
    text: str


class Span(Strict):
    """One evidence quote located in its document (agent.core.text.locate)."""

    id: str = Field(description="Unique within the record, e.g. 's12'; the page's marks carry it.")
    doc: str = Field(description="Path of the Document the offsets index.")
    quote: str = Field(description="The quote as the model copied it.")
    start: int = Field(description="-1 when the quote was not found.")
    end: int
    kind: MatchKind
    score: float
    role: Literal["quote", "fact", "figure"] = Field(
        default="quote", description="An evidence quote, a fact a supplement adds, or a disputed figure."
    )


class FindingRecord(Strict):
    """One rule decision, as agent.rules.claims.Finding states it."""

    rule: Rule
    subject: str
    doc: str
    decision: Decision
    detail: str = ""
    ref: str = Field(default="", description="The claim it is about: 'doc#index', or 'doc#part.index' in a later part.")
    target: str = Field(default="", description="Where it points: the claim merged or folded into, the anchor.")


class ClaimTrace(Strict):
    """One extracted claim behind an increment (a merged increment has several)."""

    doc: str
    section: str = ""
    title: str
    spans: list[str] = Field(default_factory=list, description="Span ids of the claim's evidence quotes.")
    ref: str = Field(default="", description="The claim: 'doc#index' or 'doc#part.index', as findings name it.")


class TextMark(Strict):
    """A stretch of a key point's own text worth marking: a fact it adds, a disputed figure."""

    start: int
    end: int
    role: Literal["fact", "figure"]
    verify: int | None = Field(default=None, description="The to-verify item a disputed figure belongs to.")


class PointTrace(Strict):
    """The quotes one key point rests on: those carrying its figures, else all of its claim's."""

    path: str = Field(description="Position in the increment's point tree, e.g. '2' or '2.1' (0-based).")
    spans: list[str] = Field(default_factory=list)
    by_figures: bool = Field(default=False, description="Tied by shared figures rather than by its claim.")
    marks: list[TextMark] = Field(default_factory=list)
    claim: str = Field(
        default="", description="The claim ('doc#index') the point is from; empty for the rules' own notes."
    )


class Supplement(Strict):
    """An increment that supplements an anchor: which anchor, and the facts it adds."""

    anchor: str = Field(description="The anchor's label.")
    when: str = Field(description="'9-21' as briefings write it, or 'living'.")
    source: str = Field(description="Path of the briefing or living document that anchored it.")
    adds: list[str] = Field(default_factory=list, description="Facts (agent.core.text.facts) the anchor did not have.")
    spans: list[str] = Field(default_factory=list, description="Where those facts are written in the lead's quotes.")


class ConflictSide(Strict):
    doc: str
    values: list[str]
    spans: list[str] = Field(default_factory=list, description="Where each value is written in the document.")


class Conflict(Strict):
    """Figures with one unit that two documents on the same subject state differently."""

    verify: int = Field(description="Number of the to-verify item that reports it.")
    unit: str
    sides: list[ConflictSide]


class IncrementTrace(Strict):
    number: int
    claims: list[ClaimTrace] = Field(default_factory=list)
    points: list[PointTrace] = Field(default_factory=list)
    supplement: Supplement | None = None
    verify: list[int] = Field(default_factory=list, description="Numbers of the to-verify items it raises.")
    conflicts: list[Conflict] = Field(default_factory=list)
    living: str = Field(
        default="", description="The editor's line for the living document (E2 writes it); empty: from the points."
    )


class VerifyTrace(Strict):
    number: int
    increments: list[int] = Field(default_factory=list, description="The increments it concerns.")
    carried_from: str = Field(default="", description="'9-21' when carried over from an earlier briefing.")
    source: str = Field(default="", description="The briefing it was carried from.")


class SourceLink(Strict):
    """A row of 一 and the documents it names."""

    row: int
    docs: list[str] = Field(default_factory=list)


class Removed(Strict):
    """A claim the rules dropped or demoted, with the finding that says why and its quotes."""

    finding: int = Field(description="Index into RunRecord.findings.")
    spans: list[str] = Field(default_factory=list)


class SecondaryTrace(Strict):
    """A secondary anchor (a 3★ paper of 四/六): its row of 六 and the claim it is."""

    row: int = Field(description="Index into briefing.priorities.")
    title: str = Field(description="The claim's title, as select decided on it.")
    section: str = Field(description="The section 六 writes it into.")
    arxiv: list[str] = Field(default_factory=list, description="The arXiv IDs it cites, as written.")
    claim: str = Field(description="The claim: 'doc#index' or 'doc#part.index', as findings name it.")


class Trace(Strict):
    increments: list[IncrementTrace] = Field(default_factory=list)
    secondary: list[SecondaryTrace] = Field(default_factory=list)
    verify: list[VerifyTrace] = Field(default_factory=list)
    sources: list[SourceLink] = Field(default_factory=list)
    removed: list[Removed] = Field(default_factory=list)


class Unread(Strict):
    """A source of the window that was not extracted: the briefing is partial without it."""

    doc: str
    why: str


class LivingRef(Strict):
    """The living document the run read, so an E2 patch is proposed and applied against exactly it."""

    workspace: str = Field(description="Absolute path of the workspace root the run read.")
    path: str = Field(description="Workspace-relative path of the living document.")
    sha256: str = Field(description="Of its text as read (UTF-8, byte-order mark and carriage returns removed).")


class PatchLine(Strict):
    """A line of the unified diff of the E2 patch the briefing proposes, kept in the record so the
    page shows the patch from the JSON alone (the living document may have changed since)."""

    text: str = Field(description="A diff line without its line end; its first character says what it is.")
    increment: int | None = Field(default=None, description="The increment an added line writes, if one.")


class RunRecord(Strict):
    """What `predigest run` writes beside the briefing, and what `predigest view` reads."""

    schema_version: Literal[2] = RUN_SCHEMA_VERSION
    briefing: Briefing
    prompt: str
    model: str
    answered_by: str = Field(default="", description="What answered: a model, reference answers, relayed, offline.")
    partial: bool = Field(default=False, description="Some sources of the window were not extracted.")
    unread: list[Unread] = Field(default_factory=list)
    findings: list[FindingRecord] = Field(default_factory=list)
    documents: list[Document] = Field(default_factory=list)
    spans: list[Span] = Field(default_factory=list)
    trace: Trace = Field(default_factory=Trace)
    living: LivingRef | None = Field(default=None, description="None in records written before E2 patches.")
    patch: list[PatchLine] = Field(
        default_factory=list,
        description="The E2 patch as diff lines; empty for a partial briefing or a living document without sections.",
    )
