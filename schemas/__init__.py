"""Pydantic models shared by the agent and the eval harness.

Everything the LLM fills or that is serialised lives here, so the agent stages and the eval
speak one vocabulary and a JSON briefing written tonight is readable by tomorrow's run.
"""

from schemas.briefing import (
    ArxivRow,
    Briefing,
    Credibility,
    Increment,
    KeyPoint,
    NoIncrementNote,
    PriorityRow,
    SourceRef,
    SourceRow,
    StatusSummary,
    VerifyItem,
)
from schemas.documents import DocKind, SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction, Resolution, SkippedItem, VerifyNote

__all__ = [
    "ArxivRef",
    "ArxivRow",
    "Briefing",
    "Claim",
    "Credibility",
    "DocKind",
    "FileExtraction",
    "Increment",
    "KeyPoint",
    "NoIncrementNote",
    "PriorityRow",
    "Resolution",
    "SkippedItem",
    "SourceDoc",
    "SourceRef",
    "SourceRow",
    "StatusSummary",
    "VerifyItem",
    "VerifyNote",
]
