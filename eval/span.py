"""Replaying a span case: its evenings in order, on a copy of its workspace, each evening's E2 patch
applied to the living document before the next.

The evenings run through `agent.span.run_span`, the code `predigest run WS --from D1 --to D2
--apply-patch` runs, so the eval measures what a user's catch-up would write. The copy is made in a
temporary folder (the case's workspace is never written), and the topic's briefings dated inside the
span are taken out of the copy's own inbox first: they are what the span writes, and each evening must
read as its baseline the briefing the evening before it wrote, not the one already in the workspace.
"""

from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent.core.settings import Settings, resolve_llm
from agent.extract import ExtractionResult
from agent.pipeline import EveningSet, Outcome
from agent.plan.outputs import out_path_for
from agent.plan.workspace import Workspace, load_workspace
from agent.span import SpanEvening, SpanReport, Watchers, run_span
from agent.write.living import read_living
from eval.cases import Case

OnEvening = Callable[[dt.date, EveningSet], None]  # each evening's plan, before its first call


@dataclass(frozen=True)
class SpanReplay:
    """A span as it ran: each evening reached, and the living document before and after it."""

    report: SpanReport
    workspace: Path  # the copy the span ran in (gone once `replayed` returns)
    before: str  # the living document as the first evening read it
    after: str  # as the last evening reached left it, its patch applied

    def evening(self, day: dt.date) -> SpanEvening | None:
        return next((e for e in self.report.evenings if e.date == day), None)

    def outcome(self, day: dt.date) -> Outcome | None:
        """The topic's briefing of that evening and everything that explains it; None when the
        evening was not reached or failed before it was briefed."""
        e = self.evening(day)
        return e.report.reports[0].outcome if e is not None and e.report is not None else None

    def error(self, day: dt.date) -> str:
        """Why the evening has no briefing the span went on from ('' when it has one)."""
        e = self.evening(day)
        if e is None:
            return f"not reached: the span stopped at {self.report.stopped_at}"
        if e.error is not None:
            return str(e.error)
        if e.report is None:
            return f"skipped: {', '.join(p.name for p in e.skipped)} already in the inbox"
        outcome = self.outcome(day)
        if outcome is not None and outcome.partial:
            return f"partial: {len(outcome.unread)} document(s) not read: " + "; ".join(
                f"{doc}: {why}" for doc, why in outcome.unread
            )
        return f"exit status {e.exit_code}" if e.exit_code else ""


@contextmanager
def replayed(
    case: Case,
    s: Settings,
    on_plan: OnEvening | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
) -> Iterator[SpanReplay]:
    """Run the case's span on a copy of its workspace; the copy stays until the block ends, so the
    evenings can be scored against the files they credit."""
    with tempfile.TemporaryDirectory(prefix="predigest-span-") as tmp:
        ws = _copy(case, Path(tmp) / case.workspace.name)
        living = ws.living_path(case.topic)
        rel = ws.living_rel(case.topic)
        before = read_living(living.read_bytes(), rel)
        watch = Watchers(
            on_plan=(lambda es: on_plan(es.evenings[0].settings.date, es)) if on_plan is not None else None,
            on_result=on_result,
        )
        report = run_span(_settings(case, s, ws.root), [case.topic], case.evenings, apply_patch=True, watch=watch)
        after = read_living(living.read_bytes(), rel)
        yield SpanReplay(report, ws.root, before, after)


def _copy(case: Case, dest: Path) -> Workspace:
    """The case's workspace copied to `dest`, without the topic's briefings of the span's evenings
    (and what a run wrote beside them) in its own inbox."""
    shutil.copytree(case.workspace, dest, symlinks=True)
    ws = load_workspace(dest)
    for day in case.evenings:
        briefing = out_path_for(ws, None, day, case.topic)
        for path in briefing.parent.glob(f"{briefing.stem}.*"):
            path.unlink()
    return ws


def _settings(case: Case, s: Settings, copy: Path) -> Settings:
    """The span's settings on the copy. A case that names no cassettes replays the workspace's own
    `[llm] cassettes`, which predigest.toml may name relative to the workspace: resolved against the
    case's workspace, since the copy has none beside it."""
    llm = dict(s.llm)
    if "cassette_dir" not in llm:
        own = resolve_llm(load_workspace(case.workspace).config.llm, {}, case.workspace)
        llm["cassette_dir"] = list(own.cassette_dirs)
    # Not forced: the copy's inbox holds none of the span's briefings, so every evening is run, and
    # one found written after all would be skipped (as a resumed span skips it), and its row say so.
    return s.model_copy(update={"workspace": copy, "llm": llm, "force": False})
