"""What ingest hands to the rest of the pipeline: one SourceDoc per file of the workspace."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import Field

from schemas.briefing import Strict

DocKind = Literal["report", "baseline", "adjacent", "paper_card", "queue", "living"]


class SourceDoc(Strict):
    """A file of the workspace, placed in time and classified.

    `in_window` and `reason` travel together so that `predigest inbox` can say why a file was
    left out, not only that it was.
    """

    path: str = Field(description="Workspace-relative POSIX path, e.g. 'inbox/jay/2026-09-22-x.md'.")
    kind: DocKind
    agent: str = Field(default="", description="The inbox folder the file came from, if any.")
    topic: str = Field(default="", description="The topic of a briefing (baseline / adjacent).")
    timestamp: dt.datetime | None = Field(default=None, description="Workspace-timezone time.")
    date_only: bool = Field(default=False, description="The name carried a date but no HHMM.")
    in_window: bool = Field(default=False, description="Inside (date-1 22:00, date 22:00].")
    read: bool = Field(default=False, description="The run reads it: in window, a baseline, or the living doc.")
    reason: str = Field(default="", description="Why the file is read or left out.")
    text: str = Field(default="", repr=False)

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def directory(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""
