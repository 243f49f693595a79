"""What the LLM returns for one document. Field descriptions are the model's instructions.

The model judges (relevance, novelty, credibility, stars); it copies evidence verbatim so the
rule layer can check every claim against the document without trusting the model.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, model_validator

from schemas.briefing import KeyPoint, Strict

Relevance = Literal["高", "中", "邻接", "参考"]
CredLevel = Literal["高", "中高", "中", "低"]
Relation = Literal["new", "supplement", "covered"]

# C0 controls but tab and newline, DEL, and C1 (CSI is \x9b): ESC, NUL, BEL and their kind
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def without_controls(value: Any) -> Any:
    """`value` (a model's answer as JSON values) with control characters removed from every string
    in it: a model's raw ESC or NUL reached the briefing's `.md`, where `cat` obeys it. Tab and
    newline stay; keys are the schema's names, not the model's text."""
    if isinstance(value, str):
        return _CONTROL.sub("", value)
    if isinstance(value, list):
        return [without_controls(v) for v in value]
    if isinstance(value, dict):
        return {k: without_controls(v) for k, v in value.items()}
    return value


class ModelAnswer(Strict):
    """What a model answers (an extraction, a shared answer's part, an evening's composition): stripped
    of control characters where it enters, so everything written from it (briefing, record, page,
    patch) is plain text."""

    @model_validator(mode="before")
    @classmethod
    def _plain_text(cls, data: Any) -> Any:
        return without_controls(data)


class ArxivRef(Strict):
    arxiv_id: str = Field(description="The arXiv ID exactly as the document writes it, with its version if shown.")
    title: str = Field(description="The paper title as the document gives it; short gloss allowed after ' · '.")


class VerifyNote(Strict):
    title: str = Field(description="What needs checking, as a short noun phrase.")
    risk: Literal["高", "中", "低"] = Field(description="How much a wrong answer would mislead the living document.")
    problem: str = Field(description="What is unclear, missing or contradictory, citing the document.")
    suggestion: str = Field(description="The concrete check that would settle it.")


class Claim(Strict):
    """One candidate increment: a subject the document says something about."""

    title: str = Field(
        description="Subject and what is new about it, in the briefing's language, at most 40 characters as a reader"
        " counts them (a Chinese character, a letter, a digit, a space or a mark is one each): e.g."
        ' "vLLM v0.24.0：PD 分离 GA、KV Connector v2" is 37. Put further names and figures in the key points.'
    )
    stars: int = Field(
        ge=1, le=5, description="Importance for the topic: 5 must-read, 4 strong, 3 useful, 2 minor, 1 noise."
    )
    key_points: list[KeyPoint] = Field(
        description="The facts a reader needs: figures, versions, flags, names. Nest steps under their point."
    )
    evidence: list[str] = Field(
        description="Quotes copied character for character from the document that support the key points. Never paraphrase."
    )
    section_ref: str = Field(description="Where in the document, e.g. '§条目 1' or '§一.1'.")
    arxiv: list[ArxivRef] = Field(
        default_factory=list, description="arXiv papers this claim rests on, only as written in the document."
    )
    urls: list[str] = Field(
        default_factory=list, description="External sources named for this claim (release pages, blogs)."
    )
    credibility: CredLevel
    credibility_reason: str = Field(
        description="Why: official release notes, paper with numbers, second-hand summary..."
    )
    relation: Relation = Field(
        description="new: not in the anchors; supplement: an anchored subject with a new detail; covered: anchored, nothing new."
    )
    anchor: str = Field(
        default="",
        description='The id of the listed anchor this claim relates to, e.g. "A3" (for "new": the earlier release'
        " it follows, if any); empty when no listed anchor is related.",
    )
    relation_note: str = Field(
        description="How this relates to the living document: what it adds to which anchor or section."
    )
    suggested_section: str = Field(
        description="Living-document section it belongs to, e.g. '§1.3 KV Cache（…）'. A new block may be proposed."
    )
    to_verify: list[VerifyNote] = Field(
        default_factory=list, description="Claims in this item that need checking before they are written down."
    )


class SkippedItem(Strict):
    subject: str = Field(description="An item of the document that is not a claim for this topic.")
    reason: str = Field(description="Why not: which other topic it belongs to, or which anchor already covers it.")


class Resolution(Strict):
    item: str = Field(description='The id of an open to-verify item listed in the prompt, e.g. "Q2".')
    how: str = Field(description="What the document establishes about it, in one sentence.")
    evidence: str = Field(description="A quote copied character for character from the document that settles it.")


# A document's reading for one topic, field by field: the one-topic answer and each part of a shared
# answer declare the same fields with these, so the two can never say a field differently.
RelevanceField = Annotated[
    Relevance, Field(description="高 on-topic, 中 partly, 邻接 adjacent topic, 参考 background only.")
]
RelevanceReasonField = Annotated[str, Field(description="One line: why this relevance.")]
HeldField = Annotated[
    str, Field(description="What the document held, as ' · '-separated subjects, for the sources table.")
]
ClaimsField = Annotated[
    list[Claim],
    Field(default_factory=list, description="Candidate increments, most important first. Empty is a valid answer."),
]
SkippedField = Annotated[
    list[SkippedItem], Field(default_factory=list, description="Items seen and not claimed, each with its reason.")
]
ResolvedField = Annotated[
    list[Resolution],
    Field(
        default_factory=list,
        description="Open to-verify items from earlier briefings that this document settles (confirms or refutes). Only with a verbatim quote.",
    ),
]


class FileExtraction(ModelAnswer):
    """The whole answer for one document (or one chunk of a long one)."""

    relevance: RelevanceField
    relevance_reason: RelevanceReasonField
    held: HeldField
    claims: ClaimsField
    skipped: SkippedField
    resolved: ResolvedField

    @model_validator(mode="after")
    def _listed_ids(self, info: ValidationInfo) -> FileExtraction:
        """An answer citing an anchor or open-item id its prompt did not list is invalid (and re-asked):
        the rules would read another subject than the model meant. The ids listed come as the
        validation context `{"listed": {topic: [...]}}` (one topic here; a shared answer checks
        each of its parts); a name instead of an id is read by name, as before ids."""
        listed = _listed(info)
        if listed is not None and len(listed) == 1 and "topics" not in (info.context or {}):
            unlisted(self, next(iter(listed.values())))
        return self


def _listed(info: ValidationInfo) -> dict[str, list[str]] | None:
    ctx = info.context if isinstance(info.context, dict) else {}
    listed = ctx.get("listed")
    return listed if isinstance(listed, dict) else None


_CITED_ID = re.compile(r"\s*[AQ]\d{1,6}\s*")


def cited_id(text: str) -> str:
    """The id ('A7', 'Q2') an answer's `anchor` or `item` cites, or "" when it names its subject
    instead (read by name, as before ids): only an id means a place in the prompt's listing."""
    return text.strip() if _CITED_ID.fullmatch(text) else ""


def unlisted(reading: FileExtraction | TopicReading, ids: list[str]) -> None:
    """Raise when `reading` cites an id ('A7', 'Q2') that `ids` does not hold, naming the ids it may cite."""
    cited = [cited_id(c.anchor) for c in reading.claims] + [cited_id(r.item) for r in reading.resolved]
    bad = [x for x in cited if x and x not in ids]
    if bad:
        allowed = ", ".join(ids) or "none: leave anchor and resolved empty"
        raise ValueError(f"ids {bad} are not listed in the prompt; cite only listed ids ({allowed})")


class TopicReading(Strict):
    """One topic's part of a shared answer: the document read for that topic alone. What the document
    held is the answer's, said once for every topic."""

    topic: str = Field(description="The topic this part is for, exactly as its name is written in the prompt.")
    relevance: RelevanceField
    relevance_reason: RelevanceReasonField
    claims: ClaimsField
    skipped: SkippedField
    resolved: ResolvedField


class SharedExtraction(ModelAnswer):
    """The whole answer for one document (or one chunk) read at once for every topic that reads it."""

    held: HeldField
    topics: list[TopicReading] = Field(
        description="One part per topic the document is read for (the user message names them), in that order,"
        " each exactly once — also a topic the document says nothing about (relevance 参考, no claims). A claim"
        " goes under the topic it is an increment for, judged against that topic's anchors; a subject that"
        " matters to two topics is claimed under each. Items for another topic go to `skipped` with the reason."
    )

    @model_validator(mode="after")
    def _known_topics(self, info: ValidationInfo) -> SharedExtraction:
        """A part for a topic the document is not read for, or a topic twice, is an invalid answer (and
        re-asked): the rule layer would have no topic to give it to, or two answers for one. The topics
        asked come as the validation context `{"topics": [...]}`; without it any name is accepted."""
        asked = (info.context or {}).get("topics") if isinstance(info.context, dict) else None
        names = [part.topic for part in self.topics]
        if asked is not None and (unknown := [n for n in names if n not in asked]):
            raise ValueError(
                f"topics {unknown} are not among the topics this document is read for {list(asked)}; give parts"
                " for those only"
            )
        if len(set(names)) < len(names):
            raise ValueError(f"a topic has several parts ({names}); give each topic asked exactly one part")
        return self

    @model_validator(mode="after")
    def _listed_ids(self, info: ValidationInfo) -> SharedExtraction:
        """Each part cites only the ids its own topic's anchors and open items were listed under."""
        listed = _listed(info)
        for part in self.topics if listed is not None else ():
            unlisted(part, listed.get(part.topic, []))
        return self

    def for_topic(self, topic: str) -> FileExtraction | None:
        """This topic's reading as a one-topic answer (with what the document held), or None when the
        answer left the topic out."""
        part = next((p for p in self.topics if p.topic == topic), None)
        return None if part is None else FileExtraction(held=self.held, **part.model_dump(exclude={"topic"}))
