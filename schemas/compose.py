"""What the composing call returns for one topic and evening: the editor's decisions, as data.

The model receives the evening's candidate claims (each under a short id, `C1`, `C2`, …), the
documents they came from (`D1`, …), the figures two documents give differently (`F1`, …) and the
open items carried from earlier briefings (`Q1`, …); it answers with stories that merge claims, the
claims it leaves out and why, each document's line for 五 and the evening's questions for 三.
Field descriptions are the model's instructions.

The rules check the answer: `EveningComposition` runs the checker it is given as its validation
context (`{"check": callable}`, see `agent.rules.checker`), so an answer that cites a claim that does
not exist, states a figure no cited claim states or prints a disputed figure as fact is invalid, and
instructor re-asks with the exact violations. The schema itself knows no rule: schemas sit below the
agent's stages and cannot import them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from schemas.briefing import Strict
from schemas.extraction import ModelAnswer, VerifyNote

MAX_POINTS = 8  # key points an increment holds, at most: an editor's increment is read in a minute
MAX_TITLE = 40  # characters of an increment title


class ComposedPoint(Strict):
    text: str = Field(
        description="One fact, in one whole sentence in the briefing's language (Chinese), keeping names, flags, "
        "numbers and versions exactly as the claims write them. Never a fact another point of the story states."
    )
    refs: list[str] = Field(
        description="The ids of the claims this point rests on (e.g. ['C3']); each must be one of the story's claims."
    )


class Story(Strict):
    """One increment: one release, incident, paper or change, however many documents tell it."""

    claims: list[str] = Field(
        description="The ids of every claim this story merges (e.g. ['C1', 'C4']): all the claims about one "
        "subject, from any document. A claim belongs to one story at most."
    )
    title: str = Field(
        description=f"Subject and what is new about it, at most {MAX_TITLE} characters, in Chinese with names and "
        "versions as written."
    )
    key_points: list[ComposedPoint] = Field(
        description=f"At most {MAX_POINTS} points: breaking changes, removals and security first, then what changes "
        "for a user, then figures; each fact once. For a subject already anchored, only what is new beyond the "
        "anchor's known points."
    )
    credibility_reason: str = Field(
        description="One short line: why the strongest source is believable (official notes, paper with numbers…)."
    )
    relation: str = Field(
        description="One line: how it relates to the living document — new, or what it adds to which anchor."
    )
    section: str = Field(description="The living document's section it belongs in, as listed in the prompt.")
    living_line: str = Field(
        description="What the living document's line for this story says after its subject (E2 writes the "
        "subject, the date and the source around it), in that document's own style: the two or three facts that "
        "matter in one sentence — no source remarks, no times of day, no disputed value."
    )


class LeftOut(Strict):
    claim: str = Field(description="The id of a claim that is in no story.")
    why: Literal["stated", "covered", "off_topic", "weak"] = Field(
        description="stated: another story already says it; covered: the anchor already holds it, nothing new; "
        "off_topic: not this topic's; weak: too thin or too doubtful to report."
    )


class DocLine(Strict):
    doc: str = Field(description="A document's id (e.g. 'D2').")
    line: str = Field(
        description="One line for the section of documents with nothing new: what the document held beyond the "
        "stories, and why it is not an increment. At most about 80 characters."
    )


class Question(VerifyNote):
    """A to-verify note, as a reader writes one, that says which of the evening's claims it is about."""

    about: list[str] = Field(
        description="The ids of the claims it is about (e.g. ['C2']); the question goes with their story."
    )


class EveningComposition(ModelAnswer):
    """The whole answer: the evening's increments as an editor composes them."""

    stories: list[Story] = Field(
        description="Every story of the evening, strongest first. The rules choose how many are printed."
    )
    left_out: list[LeftOut] = Field(
        default_factory=list, description="Every claim that is in no story, with why. Each claim is in a story or here."
    )
    doc_lines: list[DocLine] = Field(
        default_factory=list,
        description="One line for each document listed under 'documents with nothing in any story'.",
    )
    questions: list[Question] = Field(
        default_factory=list,
        description="The evening's questions for the to-verify section, about the stories: one answerable "
        "question each, about the subject, never about what a document left out. Not the listed disputes "
        "(the rules raise those with both values) and not the carried open items.",
    )

    @model_validator(mode="after")
    def _checked(self, info: ValidationInfo) -> EveningComposition:
        """The rules' checker, when the evening gives one as the validation context: every violation in
        one message, so the re-ask can fix them all at once."""
        check: Callable[[EveningComposition], list[str]] | None = (
            info.context.get("check") if isinstance(info.context, dict) else None
        )
        if check is not None and (problems := check(self)):
            raise ValueError("; ".join(problems))
        return self
