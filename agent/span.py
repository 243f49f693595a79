"""A span of evenings run in order: `predigest run WS --from D1 --to D2`.

Each evening is `run_topics` as one evening's run would be, written into the workspace's own inbox
before the next is planned, so the next reads it as a baseline (its anchors, its 一 row); with
`apply_patch`, each evening's E2 patch goes into the living document before the next, through the
same `prepare` / `apply_patch` that `predigest patch --apply` uses (its refusals are the evening's
failure). The span stops at the first evening that fails (a raised error, a partial evening, no
model), so no later evening stands on a baseline that is missing or incomplete. A topic whose
briefing is already in the inbox for an evening is skipped (`force` runs it again), so the same
command resumes a span, and a missed cron night is one command.

One model extractor serves the whole span (`ModelOnce`), so `--max-calls` and `--max-cost` bound
the span as they bound an all-topics evening, and its cache and cassettes are loaded once.
"""

from __future__ import annotations

import datetime as dt
import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.core.errors import Interrupted, PredigestError
from agent.core.settings import LLMSettings, Settings, evening_date, resolve_llm
from agent.extract import CallRecord, ExtractionResult
from agent.pipeline import EveningSet, ModelOnce, TopicsReport, run_topics
from agent.plan.outputs import out_path_for
from agent.plan.workspace import Workspace, load_workspace
from agent.write.patch_apply import PatchRefused, apply_patch, prepare

MAX_EVENINGS = 31  # a month: a longer gap is a new start (pick its first evening), not a catch-up


def asked_span(date: str | None, first: str | None, last: str | None, *, apply_patch: bool = False) -> list[dt.date]:
    """The evenings `--from` / `--to` ask for, in order; [] when `--date` asks for one. Every
    combination that means nothing is one line, before anything is read or spent."""
    if apply_patch and date is not None:
        raise PredigestError(
            "--apply-patch is for a span (--from/--to)",
            hint="for one evening: `predigest patch <its .json> --apply`, or --from D --to D",
        )
    if date is not None and (first is not None or last is not None):
        raise PredigestError(
            "--date and --from/--to cannot be given together",
            hint="pass --date for one evening, or --from and --to for a span of evenings",
        )
    if date is not None:
        return []
    if first is None or last is None:
        given = "--from" if first is not None else "--to" if last is not None else ""
        raise PredigestError(
            f"{given} needs {'--to' if given == '--from' else '--from'}" if given else "no evening given",
            hint="pass --date for one evening, or --from and --to (YYYY-MM-DD) for a span of evenings",
        )
    start, end = evening_date(first, "--from"), evening_date(last, "--to")
    if start > end:
        raise PredigestError(f"--from {start} is after --to {end}", hint="give the earlier evening as --from")
    n = (end - start).days + 1
    if n > MAX_EVENINGS:
        raise PredigestError(
            f"--from {start} --to {end} is {n} evenings, more than {MAX_EVENINGS} in one span",
            hint=f"run it as spans of at most {MAX_EVENINGS} evenings, oldest first",
        )
    return [start + dt.timedelta(days=i) for i in range(n)]


def resume_command(argv: Sequence[str], day: dt.date) -> str:
    """The command as typed, with `--from` the evening to resume from (the earlier ones are written
    and would be skipped anyway; starting at the failed one says where the trouble is)."""
    args, i = list(argv), 0
    while i < len(args):
        if args[i] == "--from" and i + 1 < len(args):
            args[i + 1] = day.isoformat()
            i += 1
        elif args[i].startswith("--from="):
            args[i] = f"--from={day.isoformat()}"
        i += 1
    return shlex.join(["predigest", *args])


@dataclass(frozen=True)
class Patched:
    """One topic's E2 patch applied (or not) after its evening."""

    topic: str
    living: Path
    history: Path | None  # the previous version; None: nothing to change (the patch is already in it)
    note: str = ""  # a skipped evening's patch left as it is, and why


@dataclass(frozen=True)
class SpanEvening:
    """One evening of the span: the topics skipped (already written), the run of the others, the
    patches applied after it, or the error that stopped the span there."""

    date: dt.date
    skipped: tuple[Path, ...] = ()  # the briefings already in the inbox, not made again
    report: TopicsReport | None = None
    patched: tuple[Patched, ...] = ()
    error: PredigestError | None = None

    @property
    def exit_code(self) -> int:
        if self.error is not None:
            return 2  # what the CLI exits with for an error of one evening's run
        return self.report.exit_code if self.report is not None else 0

    @property
    def records(self) -> list[CallRecord]:
        return self.report.records if self.report is not None else []


@dataclass(frozen=True)
class SpanReport:
    evenings: tuple[SpanEvening, ...]  # the evenings reached, in order; the last one failed if any did
    asked: tuple[dt.date, ...]
    llm: LLMSettings
    seconds: float

    @property
    def stopped_at(self) -> dt.date | None:
        """The evening that failed, where the span stopped."""
        return next((e.date for e in self.evenings if e.exit_code), None)

    @property
    def written(self) -> int:
        return sum(1 for e in self.evenings if e.report is not None and not e.exit_code)

    @property
    def skipped(self) -> int:
        return sum(1 for e in self.evenings if e.report is None and e.error is None)

    @property
    def records(self) -> list[CallRecord]:
        return [r for e in self.evenings for r in e.records]

    @property
    def exit_code(self) -> int:
        """The worst evening's, as an all-topics run's is the worst topic's."""
        return max((e.exit_code for e in self.evenings), default=0)


@dataclass(frozen=True)
class Watchers:
    """What the CLI hears while a span runs: each evening's progress, as `run_topics` takes it, and
    each evening as it ends (so a long span prints as it goes)."""

    on_plan: Callable[[EveningSet], None] | None = None
    on_result: Callable[[ExtractionResult], None] | None = None
    warn: Callable[[str], None] | None = None
    on_written: Callable[[list[Path]], None] | None = None
    on_evening: Callable[[SpanEvening], None] | None = None


def run_span(
    s: Settings,
    topics: Sequence[str],
    days: Sequence[dt.date],
    *,
    patch: bool = False,
    apply_patch: bool = False,
    watch: Watchers = Watchers(),
) -> SpanReport:
    """Run `topics` for each evening of `days` in order (`s.date` is not read), each written into
    the workspace's inbox before the next is planned; stops after the first evening that fails."""
    if s.out is not None:
        # The next evening reads the last one's briefing from the inbox, and only there: a span
        # written elsewhere would plan every evening without its predecessor, and writing both
        # places would leave two copies whose re-run and skip rules could disagree. So a span
        # writes where cron's line does, and --out stays the one-evening option.
        raise PredigestError(
            "--out cannot be given with --from/--to: a span writes each evening into the workspace's inbox,"
            " where the next evening reads it",
            hint="drop --out (run a copy of the workspace to keep this one unchanged), or run one --date with --out",
        )
    started = time.monotonic()
    ws = load_workspace(s.workspace)
    llm = resolve_llm(ws.config.llm, s.llm, ws.root)
    done: list[SpanEvening] = []
    with ModelOnce(llm) as model:  # one budget, cache and cassette index for the span
        for day in days:
            evening = _evening(ws, s.model_copy(update={"date": day}), topics, model, patch, apply_patch, watch)
            done.append(evening)
            if watch.on_evening is not None:
                watch.on_evening(evening)
            if evening.exit_code:
                break
    return SpanReport(tuple(done), tuple(days), llm, time.monotonic() - started)


def _evening(
    ws: Workspace,
    s: Settings,
    topics: Sequence[str],
    model: ModelOnce,
    patch: bool,
    apply_patch: bool,
    watch: Watchers,
) -> SpanEvening:
    """One evening: the topics already written skipped (unless --force), the others run as one
    evening's run, then each patch applied; an error of the evening is kept, to stop the span."""
    written = {t: p for t in topics if (p := out_path_for(ws, None, s.date, t)).is_file()}
    skipped = {} if s.force else written
    todo = [t for t in topics if t not in skipped]
    report: TopicsReport | None = None
    patched: list[Patched] = []
    try:
        if apply_patch:  # a skipped evening may have stopped between its write and its patch
            patched += [_applied_again(ws, t, p, watch.on_written) for t, p in skipped.items()]
        if todo:
            report = run_topics(
                s,
                todo,
                None,
                watch.on_result,
                watch.on_plan,
                patch=patch,
                warn=watch.warn,
                on_written=watch.on_written,
                model=model,
            )
        if apply_patch and report is not None and not report.exit_code:
            ran = [(r.written.json_path, r.evening.settings.topic) for r in report.reports]
            patched += [_applied(path, topic, watch.on_written) for path, topic in ran if path is not None]
    except Interrupted:
        raise
    except PredigestError as e:
        return SpanEvening(s.date, tuple(skipped.values()), report, tuple(patched), e)
    return SpanEvening(s.date, tuple(skipped.values()), report, tuple(patched))


def _applied(json_path: Path, topic: str, on_written: Callable[[list[Path]], None] | None) -> Patched:
    """The evening's patch applied as `predigest patch --apply` applies it, with its checks."""
    target = prepare(json_path, topic=topic)
    return Patched(topic, target.living, apply_patch(target, on_written))


def _applied_again(ws: Workspace, topic: str, md: Path, on_written: Callable[[list[Path]], None] | None) -> Patched:
    """A skipped evening's patch: applied when the living document is still the one its briefing
    was made against (a span stopped between the write and the patch), a no-op when the document
    already holds it. Otherwise the document changed since (a later evening's patch, or an editor):
    that is not this evening's failure, and the briefing stands as written, so it is left, with a note."""
    living = ws.living_path(topic)
    json_path = md.with_suffix(".json")
    if not json_path.is_file():  # a briefing not made by predigest (the seed's): no patch to apply
        return Patched(topic, living, None, f"{md.name} has no run record beside it: no patch to apply")
    try:
        return _applied(json_path, topic, on_written)
    except PatchRefused as e:
        return Patched(topic, living, None, f"{md.name}: patch not applied again: {e.message}")
