"""One root error; each subclass carries its context and a message that says what to do next.

The CLI prints `str(error)` on one line and exits non-zero; a traceback only with --debug.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails


def first_problem(e: ValidationError) -> str:
    """'where: what' of a validation error's first problem: the one line a user can act on."""
    first = e.errors()[0]
    return f"{where(first)}: {first['msg']}"


def where(problem: ErrorDetails) -> str:
    """'llm.timeout_s': the dotted place of one validation problem."""
    return ".".join(map(str, problem["loc"]))


def nearest(name: str, known: Iterable[str]) -> str:
    """The known name `name` was most likely meant to be ('' when none is close): a typo gets the
    name it missed, not advice to create a new one."""
    import difflib

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return close[0] if close else ""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """'did you mean 'x'? ' for a hint, or ''."""
    close = nearest(name, known)
    return f"did you mean {close!r}? " if close else ""


def shown(path: Path | str) -> str:
    """`path` as the user would type it from where they stand: relative to the current folder
    when it is inside it, else as it is (a message names the path that was looked for)."""
    p = Path(path)
    try:
        return str(p.absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(p)


class PredigestError(Exception):
    """Root of every error a user can fix. `hint` says what to do about it."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} — {self.hint}" if self.hint else self.message


class WorkspaceError(PredigestError):
    """The workspace or its predigest.toml is missing, malformed or lacks the topic."""


class ParseError(PredigestError):
    """A Markdown file is not a briefing in the seed's format."""

    def __init__(self, message: str, *, block: str, line_no: int, line: str, path: str = "") -> None:
        where = f"{path}:{line_no}" if path else f"line {line_no}"
        super().__init__(
            f"{where}: {message} (block {block!r}; stopped at: {line.strip()[:80]!r})",
            hint="check that the seven blocks appear in order: 状态摘要, 一 … 六, footer",
        )
        self.block = block
        self.line_no = line_no
        self.line = line
        self.path = path


class PromptError(PredigestError):
    """A prompt template is missing, has no version, or references an unknown variable."""


class LLMError(PredigestError):
    """The endpoint failed after its retries, or its answer never validated."""

    def __init__(self, message: str, *, hint: str = "", attempts: int = 0, raw_output: str = "", doc: str = "") -> None:
        super().__init__(message, hint=hint)
        self.attempts = attempts
        self.raw_output = raw_output
        self.doc = doc


class CassetteMiss(LLMError):
    """Replay found no cassette for a request; names the nearest one and what differs."""


class BudgetExceeded(LLMError):
    """The run's call or cost budget was reached; remaining documents are reported, not called."""


class Interrupted(LLMError):
    """The user stopped the run (Ctrl-C): no new request or retry is sent."""


class OutputExists(PredigestError):
    """A briefing is already at the output path; we never overwrite without --force."""
