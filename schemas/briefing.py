"""The E1 pre-digest briefing, block by block, as the seed briefing shows it.

The model keeps the words of the briefing (titles, reasons, notes) as text and gives structure
only where a later stage needs it: numbers, arXiv IDs, source paths, levels and dates. That is
what lets one parser read briefings written by other agents without losing anything, and lets
`parse(render(b)) == b` hold for ours.
"""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

RelationKind = Literal["new", "supplement"]


class Strict(BaseModel):
    """The base of every schema model: a field nobody declared is an error, not ignored."""

    model_config = ConfigDict(extra="forbid")


class KeyPoint(Strict):
    """One bullet of 要点; numbered sub-steps and sub-bullets hang under it."""

    text: str = Field(description="The point in one sentence, in the briefing's language.")
    numbered: bool = Field(
        default=False, description="A numbered step ('1. …') rather than a bullet; only under a parent."
    )
    children: list[KeyPoint] = Field(
        default_factory=list, description="Sub-points (numbered steps, listed flags, figures)."
    )

    def walk(self) -> list[KeyPoint]:
        """Every point of this subtree, depth first, so callers never recurse by hand."""
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out


class StatusSummary(Strict):
    """The 状态摘要 block: the count, the window, the headlines and the arXiv tally."""

    increment_count: int = Field(ge=0)
    count_note: str = Field(description="Why the count is what it is, e.g. '在 3-8 目标区间内'.")
    under_target: bool = Field(
        default=False,
        description="The note says the count is under the target (our rules decided it; a parsed briefing "
        "says so in words: 低于, 不足 …); not rendered, the note's words carry it.",
    )
    window: str = Field(description="The evening window as shown, e.g. '2026-09-21 22:00 ~ 2026-09-22 22:00'.")
    headlines: list[str] = Field(default_factory=list, description="One short line per increment.")
    new_arxiv: list[str] = Field(default_factory=list, description="Versionless new arXiv IDs.")
    continued_arxiv: str = Field(default="0", description="Count of continued anchors as shown, e.g. '25+'.")


class SourceRow(Strict):
    """One row of 一、检查过的来源清单."""

    directory: str = Field(description="Where the file lives, e.g. 'inbox/jay' or 'work-queue 9-22 22:00'.")
    key_file: str = Field(description="The file (or files) looked at.")
    held: str = Field(default="", description="What it held, shown in parentheses after the file.")
    relevance: str = Field(description="高 / 中 / 基线 / 邻接 / 参考.")


class SourceRef(Strict):
    """One credited source of an increment: a workspace path with its § reference, or a link."""

    ref: str = Field(description="Workspace-relative path, URL or name of an external source.")
    section: str = Field(default="", description="The § reference inside the file, e.g. '§条目 1'.")


class Credibility(Strict):
    level: str = Field(description="高 / 中高 / 中 / 低.")
    reason: str = Field(default="")


class Increment(Strict):
    """One 增量 N block."""

    number: int = Field(ge=1)
    title: str
    stars: int = Field(ge=1, le=5)
    sources: list[SourceRef]
    arxiv_line: str = Field(default="", description="The 'arXiv 号' line: ID and paper title.")
    key_points: list[KeyPoint] = Field(default_factory=list)
    credibility: Credibility
    relation: str = Field(description="与活文档现有脉络的关系.")
    relation_kind: RelationKind = Field(
        default="new",
        description="'supplement' when the relation says it adds to an anchor (our rules decided it; a "
        "parsed briefing says so in words: 补充 or 锚定); not rendered, the relation's words carry it.",
    )
    suggested_section: str = Field(description="建议归入章节.")

    def all_points(self) -> list[KeyPoint]:
        return [p for top in self.key_points for p in top.walk()]


class VerifyItem(Strict):
    """One 矛盾/待核实 item; `carried_from` is the date (M-D) of the briefing it came from."""

    number: int = Field(ge=1)
    title: str
    risk: str = Field(description="高 / 中 / 低.")
    carried_from: str = Field(default="", description="'9-21' when carried over; empty when new.")
    problem: str
    suggestion: str


class ArxivRow(Strict):
    """One row of 四、可引用 arXiv 号列表."""

    arxiv_id: str = Field(description="As displayed: versionless or with its version, e.g. '2605.11093v1'.")
    title: str
    credibility: str
    relation: str = Field(description="'本次新增锚点 → §…' for new ones, '9-21锚定' for continued ones.")
    anchored_on: dt.date | None = Field(
        default=None,
        description="For a continued row, the day the paper was first anchored ('9-21锚定'); None for a new "
        "one. Not rendered: the relation's words carry it.",
    )


class NoIncrementNote(Strict):
    """One bullet of 五: a source that was read and why nothing of it became an increment."""

    source: str
    note: str


class PriorityRow(Strict):
    """One row of 六: level (🔴 最高 / 🟡 中 / 🟢 低), what to write and where."""

    level: str
    content: str
    action: str


class Briefing(Strict):
    """A whole briefing, in block order."""

    topic: str
    date: dt.date
    summary: StatusSummary
    sources: list[SourceRow] = Field(default_factory=list)
    increments: list[Increment] = Field(default_factory=list)
    to_verify: list[VerifyItem] = Field(default_factory=list)
    arxiv_rows: list[ArxivRow] = Field(default_factory=list)
    no_increment_intro: str = Field(default="")
    no_increment: list[NoIncrementNote] = Field(default_factory=list)
    priorities: list[PriorityRow] = Field(default_factory=list)
    footer: str = Field(default="")
