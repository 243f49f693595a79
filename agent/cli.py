"""The `predigest` command: parse options, call one function, print. No logic lives here."""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from agent.core.errors import PredigestError
from agent.core.labels import ZH

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress

    from agent.core.settings import LLMSettings
    from agent.extract import CallRecord, ExtractionRequest, ExtractionResult
    from agent.pipeline import Evening, EveningSet, RunReport, Settings, TopicsReport
    from agent.plan.workspace import Workspace
    from agent.runlog import DocAnswer
    from agent.span import SpanEvening
    from eval.checks import CassetteReport, Needs
    from eval.compare import Comparison
    from eval.runner import EvalReport, Variant
    from schemas.runlog import RunLog


app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Turn an evening's research inbox into a grounded pre-digest briefing per topic.",
)


class _LazyConsole:
    """A rich Console made on first print, so that `--json`, `--help` and `--version` answer without
    importing rich. Without markup or emoji codes: what the commands print is mostly the documents'
    own text, which must come out as written ("[/x]" or ":fire:" in a title); our own emphasis is a
    `Text` style."""

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr

    @cached_property
    def console(self) -> Console:
        from rich.console import Console

        return Console(stderr=self._stderr, soft_wrap=True, markup=False, emoji=False, highlight=False)

    def print(self, *objects: object, **options: Any) -> None:
        self.console.print(*(plain(o) if isinstance(o, str) else o for o in objects), **options)


# what a terminal acts on rather than prints: escape sequences (CSI colours and cursor moves, OSC
# titles and hyperlinks, the rest of ESC's two-byte forms), then any other C0 / C1 control but tab and newline
_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]|\x9d[^\x07]*\x07?|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)


def plain(text: str) -> str:
    """Text from documents, file names and model answers, as characters only: a title holding
    an escape sequence must not recolour, retitle or rewrite the user's terminal."""
    return _ESCAPES.sub("", text)


out = _LazyConsole()
err = _LazyConsole(stderr=True)
_state: dict[str, object] = {"debug": False, "argv": [], "interrupting": False, "said": False, "run": None}
EXIT_INTERRUPTED = 130
EXIT_BUG = 70  # EX_SOFTWARE: not the user's fault

WorkspaceArg = Annotated[Path, typer.Argument(help="The workspace folder (holds predigest.toml).")]
TopicsOpt = Annotated[
    list[str] | None,
    typer.Option("--topic", "-t", help="Topic name from predigest.toml; give it several times for several topics."),
]
AllTopicsOpt = Annotated[bool, typer.Option("--all-topics", help="Every topic of predigest.toml.")]
DateOpt = Annotated[str, typer.Option("--date", "-d", help="The evening, YYYY-MM-DD.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of a summary.")]


def _print_version(value: bool) -> None:
    if not value:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        out.print(f"predigest {version('predigest')}")
    except PackageNotFoundError:
        out.print("predigest (not installed)")
    raise typer.Exit(0)


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    version: Annotated[
        bool, typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit.")
    ] = False,
) -> None:
    _state["debug"] = debug


def _date(s: str) -> dt.date:
    from agent.core.settings import evening_date

    return evening_date(s)


def _command() -> list[str]:
    """The command line as given (without --debug), for the run log."""
    argv = _state["argv"]
    return [a for a in argv if a != "--debug"] if isinstance(argv, list) else []


def _clip(text: str, n: int) -> str:
    """A label shortened for a table says so with an ellipsis."""
    return text if len(text) <= n else text[: n - 1] + "…"


def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


@app.command("parse")
def parse_cmd(
    file: Annotated[Path, typer.Argument(help="A briefing in the E1 format.")], as_json: JsonOpt = False
) -> None:
    """Read a briefing and show what was understood.

    Example: predigest parse examples/world/inbox/tom/2026-09-21-inference-e1prep.md --json
    """
    from agent.plan.parse import parse

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PredigestError(f"cannot read {file}: {e}", hint="pass a UTF-8 Markdown file") from e
    b = parse(text, path=str(file))
    if as_json:
        _print_json(b.model_dump(mode="json"))
        return
    from rich.text import Text

    out.print(Text.assemble((b.topic, "bold"), f" · {b.date}  window {b.summary.window or '?'}"))
    counts = {
        "increments": len(b.increments),
        "source rows": len(b.sources),
        "to-verify": len(b.to_verify),
        "arXiv rows": len(b.arxiv_rows),
        "no-increment notes": len(b.no_increment),
        "priority rows": len(b.priorities),
    }
    out.print("  ".join(f"{k}: {v}" for k, v in counts.items()))
    for inc in b.increments:
        refs = "; ".join(f"{s.ref} {s.section}".strip() for s in inc.sources)
        out.print(
            f"  {ZH.increment} {inc.number} [{'*' * inc.stars}] {inc.title}\n"
            f"      {refs}  ({len(inc.all_points())} key points)"
        )
    for v in b.to_verify:
        carried = f", carried from {v.carried_from}" if v.carried_from else ""
        out.print(f"  {ZH.to_verify_short} {v.number}: {v.title} ({v.risk}{carried})")


def _topics(workspace: Path, topic: list[str] | None, all_topics: bool) -> list[str]:
    from agent.plan.workspace import load_workspace

    return load_workspace(workspace).select(topic or [], all_topics=all_topics)


def _selected(
    workspace: Path, date: str, topic: list[str] | None, all_topics: bool, **settings: Any
) -> tuple[Settings, list[str]]:
    """The topics chosen, and the settings of the first: a command for several topics takes theirs from it."""
    from agent.pipeline import Settings

    topics = _topics(workspace, topic, all_topics)
    return Settings(workspace=workspace, topic=topics[0], date=_date(date), **settings), topics


def _per_topic(topics: list[str], as_json: bool, one: Callable[[str], object]) -> None:
    """An inspection command over its topics: each topic's listing in turn, or its JSON (keyed
    by topic when there are several)."""
    data = {t: one(t) for t in topics}
    if as_json:
        _print_json(data[topics[0]] if len(topics) == 1 else data)


@app.command("inbox")
def inbox_cmd(
    workspace: WorkspaceArg,
    date: DateOpt,
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List the documents the evening's run would read, and why each other file is left out.

    Example: predigest inbox examples/world --topic inference --date 2026-09-22
    """
    from agent.plan.workspace import load_workspace

    ws = load_workspace(workspace)
    _per_topic(_topics(workspace, topic, all_topics), as_json, lambda t: _inbox_of(ws, t, _date(date), as_json))


def _inbox_of(ws: Workspace, topic: str, day: dt.date, as_json: bool) -> object:
    from agent.plan.ingest import evening_window, scan

    docs = scan(ws, topic, day)  # read as the run reads: an empty or non-UTF-8 file says so here too
    if as_json:
        return [d.model_dump(mode="json", exclude={"text"}) for d in docs]
    rows = [
        ("✓" if d.read else "·", d.kind, d.agent, _when(d.timestamp, d.date_only), d.path, d.reason)
        for d in sorted(docs, key=lambda d: (not d.read, d.kind, d.path))
    ]
    _list(f"{topic} · window {evening_window(ws, day)}", ("read", "kind", "agent", "time", "path", "why"), rows)
    return None


@app.command("anchors")
def anchors_cmd(
    workspace: WorkspaceArg,
    date: DateOpt,
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List what is already anchored for a topic on an evening, with where and when it was first anchored.

    Example: predigest anchors examples/world --topic inference --date 2026-09-22
    """
    from agent.plan.workspace import load_workspace

    ws = load_workspace(workspace)
    _per_topic(_topics(workspace, topic, all_topics), as_json, lambda t: _anchors_of(ws, t, _date(date), as_json))


def _anchors_of(ws: Workspace, topic: str, day: dt.date, as_json: bool) -> object:
    from agent.plan.anchors import build_registry
    from agent.plan.ingest import scan

    reg = build_registry(scan(ws, topic, day), topic, day)
    if as_json:
        return {
            "anchors": [
                {"kind": a.kind, "key": a.key, "label": a.label, "first": a.first_date, "source": a.source}
                for a in reg.anchors
            ],
            "open_to_verify": [
                {"title": o.item.title, "origin": o.origin, "source": o.source, "raised_by": o.kind}
                for o in reg.open_items
            ],
            "sections": list(reg.sections),
            "adjacent": [{"key": a.key, "source": a.source} for a in reg.adjacent],
        }
    rows = [(a.kind, a.display_id or a.key, a.when, a.source, _clip(a.label, 60)) for a in reg.anchors]
    _list(f"{topic} anchors before {day}", ("kind", "key", "first anchored", "source", "label"), rows)
    said = [f"living sections: {' · '.join(reg.sections) or 'none'}"]
    said += [f"open to-verify: {o.item.title} (since {o.origin}, {o.source}; {o.kind})" for o in reg.open_items]
    said.append(f"adjacent references: {len(reg.adjacent)} (same-evening briefings of other topics; not anchors)")
    sys.stdout.write("".join(f"{line}\n" for line in said))
    return None


def _when(stamp: dt.datetime | None, date_only: bool) -> str:
    return "" if stamp is None else stamp.strftime("%m-%d" if date_only else "%m-%d %H:%M")


def _list(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """An inspection command's table: plain text folded to the terminal, without rich (see
    agent.core.listing for why)."""
    from agent.core import listing

    cells = [[plain(c) for c in row] for row in rows]
    sys.stdout.write(listing.render(plain(title), headers, cells, listing.room()))


def _llm_help(name: str) -> str:
    """Flag help is the settings model's field description: one place says what a setting means."""
    from agent.core.settings import LLMSettings

    return LLMSettings.model_fields[name].description or ""


ModelOpt = Annotated[str | None, typer.Option(help=_llm_help("model"))]
ModeOpt = Annotated[str | None, typer.Option(help=_llm_help("mode"))]
BackendOpt = Annotated[str | None, typer.Option(help=_llm_help("backend"))]
CassettesOpt = Annotated[Path | None, typer.Option(help="Cassette folder (default: [llm] cassettes).")]
CacheDirOpt = Annotated[Path | None, typer.Option(help="Response cache folder (default: user cache dir).")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Do not read or write the response cache.")]
AllowStaleOpt = Annotated[bool, typer.Option("--allow-stale", help=_llm_help("allow_stale"))]
ConcurrencyOpt = Annotated[int | None, typer.Option(help=_llm_help("concurrency"))]
MaxCallsOpt = Annotated[int | None, typer.Option(help=_llm_help("max_calls"))]
MaxCostOpt = Annotated[float | None, typer.Option(help=_llm_help("max_cost_usd"))]
ExtractionOpt = Annotated[str | None, typer.Option(help=_llm_help("extraction"))]
ComposeOpt = Annotated[bool | None, typer.Option("--compose/--no-compose", help=_llm_help("compose"))]
PromptOpt = Annotated[Path | None, typer.Option(help="A prompt template file (default: prompts/extract.md).")]
OutOpt = Annotated[Path | None, typer.Option(help="File or folder for the briefing (default: the workspace's inbox).")]
ForceOpt = Annotated[bool, typer.Option(help="Replace an existing briefing (and, with record, reference cassettes).")]
AllowPartialOpt = Annotated[
    bool, typer.Option("--allow-partial", help="Write a partial briefing into the workspace inbox anyway.")
]
ExplainOpt = Annotated[bool, typer.Option(help="Print every candidate's fate and the rule that decided it.")]
HtmlOpt = Annotated[bool, typer.Option("--html", help="Also write the briefing as a page (.html beside it).")]
EvalModelOpt = Annotated[str | None, typer.Option(help="Model for every case (over a case's own `model`).")]


# the run options that are settings, by their own name or renamed (--force also lets `record` replace
# reference cassettes)
_LLM_FLAGS = (
    "model",
    "mode",
    "backend",
    "cache_dir",
    "no_cache",
    "allow_stale",
    "concurrency",
    "max_calls",
    "extraction",
    "compose",
)
_BOTH_WAYS = {"compose"}  # switches whose False is a choice (--no-compose), not an option left out
_RENAMED = {
    "prompt": "prompt_file",
    "cassettes": "cassette_dir",
    "max_cost": "max_cost_usd",
    "force": "replace_reference",
}


def _llm_flags(given: Mapping[str, object]) -> dict[str, object]:
    """The options given, under their settings names; paths made absolute here, since they are
    relative to where the user typed them. An option left out (None, or a False switch) is not given."""
    return {
        _RENAMED.get(option, option): (v.absolute() if isinstance(v, Path) else v)
        for option in (*_LLM_FLAGS, *_RENAMED)
        if (v := given.get(option)) is not None and (v is not False or option in _BOTH_WAYS)
    }


RUN_EPILOG = (
    "A span (--from D1 --to D2, at most 31 evenings, instead of --date) runs each evening in order, each written into"
    " the workspace's inbox before the next is planned (so no --out); --apply-patch applies each evening's E2 patch"
    " (as `patch --apply`) before the next. An evening already written is skipped unless --force; the span stops at"
    " the first evening that fails and says how to resume; --max-calls and --max-cost bound the whole span; the exit"
    " status is the worst evening's.\n\n"
    "Several topics (--topic given several times, or --all-topics) are one run: all checked before the first"
    " call, --max-calls and --max-cost bound them together, a briefing set per topic, and the exit status is the"
    " worst topic's. With --extraction shared, each document is one request for all of them, its answer split by"
    " topic.\n\nExit status: 0 done; 2 a usage or input error (nothing spent or written); 3 a partial evening"
    " (some documents not read: the briefing lists them; not written into the workspace inbox without --allow-partial);"
    " 4 no model answered (no key, no cassette: offline briefing, not written into the inbox unless"
    " --backend offline); 130 interrupted."
)


@app.command("run", epilog=RUN_EPILOG)
def run_cmd(
    workspace: WorkspaceArg,
    date: Annotated[str | None, typer.Option("--date", "-d", help="The evening, YYYY-MM-DD.")] = None,
    first: Annotated[
        str | None, typer.Option("--from", help="The first evening of a span (YYYY-MM-DD; with --to, not --date).")
    ] = None,
    last: Annotated[str | None, typer.Option("--to", help="The last evening of a span (YYYY-MM-DD).")] = None,
    apply_patch: Annotated[
        bool,
        typer.Option(
            "--apply-patch", help="In a span: apply each evening's E2 patch to the living document before the next."
        ),
    ] = False,
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    out: OutOpt = None,
    force: ForceOpt = False,
    allow_partial: AllowPartialOpt = False,
    prompt: PromptOpt = None,
    model: ModelOpt = None,
    mode: ModeOpt = None,
    backend: BackendOpt = None,
    cassettes: CassettesOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    allow_stale: AllowStaleOpt = False,
    concurrency: ConcurrencyOpt = None,
    max_calls: MaxCallsOpt = None,
    max_cost: MaxCostOpt = None,
    extraction: ExtractionOpt = None,
    compose: ComposeOpt = None,
    explain: ExplainOpt = False,
    as_json: JsonOpt = False,
    html: HtmlOpt = False,
    patch: Annotated[bool, typer.Option("--patch", help="Also write the E2 patch it proposes (.patch).")] = False,
) -> None:
    """Write the evening's briefing for a topic (Markdown, JSON beside it, and a JSONL call record).

    Reads OPENAI_API_KEY / OPENAI_BASE_URL for a live endpoint; without a key it replays cassettes.

    A span (--from D1 --to D2) runs each evening in order, each written into the workspace's inbox
    before the next; see the epilog.

    Example: predigest run examples/world --topic inference --date 2026-09-22 --out out/
    """
    from agent.span import asked_span

    given = dict(locals())  # every option as typed; the settings model decides what each means
    days = asked_span(date, first, last, apply_patch=apply_patch)
    topics = _topics(workspace, topic, all_topics)
    shown = dict(as_json=as_json, explain=explain, patch=patch, html=html)
    if days:
        _span(_run_settings({**given, "date": days[0].isoformat()}, topics[0]), topics, days, apply_patch, **shown)
        return
    _run(_run_settings(given, topics[0]), topics, **shown)


def _run_settings(given: dict[str, Any], topic: str) -> Settings:
    """`run`'s options as settings for `topic`, over the environment and the workspace's own."""
    from agent.pipeline import settings_from

    run_flags = {name: given[name] for name in ("workspace", "out", "force", "allow_partial")}
    return settings_from({**run_flags, **_llm_flags(given), "topic": topic, "date": _date(given["date"])}, os.environ)


def _run(settings: Settings, topics: list[str], *, as_json: bool, explain: bool, patch: bool, html: bool) -> None:
    """`run` for its topics (several share one progress bar over all their requests): a run log per
    topic, the summary (or its JSON), the extra files written, and the exit status."""
    from agent.pipeline import run_topics

    with _progress() as (on_plan, on_result):
        on_plan, on_result = _watched(on_plan, on_result, html=html, force=settings.force)
        report = run_topics(
            settings, topics, on_plan=on_plan, on_result=on_result, patch=patch, warn=_warning, on_written=_note_written
        )
    data = _shown(report, len(topics) == 1, as_json=as_json, explain=explain, patch=patch, html=html)
    if as_json:
        _print_json(data)
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def _span(
    settings: Settings,
    topics: list[str],
    days: list[dt.date],
    apply_patch: bool,
    *,
    as_json: bool,
    explain: bool,
    patch: bool,
    html: bool,
) -> None:
    """`run --from --to`: each evening printed as it ends (its usual summary, or what it skipped,
    patched or failed on), then the span's line, and how to resume after a failed evening."""
    from agent.span import Watchers, resume_command, run_span

    evenings: list[object] = []

    def ended(e: SpanEvening) -> None:
        evenings.append(_print_evening(e, len(topics) == 1, as_json=as_json, explain=explain, patch=patch, html=html))

    with _progress() as (on_plan, on_result):
        on_plan, on_result = _watched(on_plan, on_result, html=html, force=settings.force)
        watch = Watchers(on_plan, on_result, _warning, _note_written, ended)
        report = run_span(settings, topics, days, patch=patch, apply_patch=apply_patch, watch=watch)
    stop = report.stopped_at
    resume = resume_command(_command(), stop) if stop else ""
    if as_json:
        _print_json({"exit_code": report.exit_code, "stopped_at": stop, "resume": resume, "evenings": evenings})
    else:
        if stop:
            err.print(f"span stopped at the evening {stop}; after fixing it, resume with: {resume}")
        recs, reached = report.records, len(report.evenings)
        rest = f" · not reached {len(days) - reached}" if reached < len(days) else ""
        by_source = ", ".join(f"{k} {v}" for k, v in sorted(Counter(r.source for r in recs).items()))
        out.print(
            f"span {days[0]} … {days[-1]} · evenings {len(days)} · written {report.written} · skipped {report.skipped}"
            f" · failed {int(stop is not None)}{rest} · calls {len(recs)}{f' ({by_source})' if by_source else ''}"
            f" · {_spent(recs, report.llm, report.seconds)} · exit {report.exit_code}"
        )
    if report.exit_code:
        raise typer.Exit(report.exit_code)


def _print_evening(e: SpanEvening, one: bool, *, as_json: bool, explain: bool, patch: bool, html: bool) -> object:
    """One evening of a span as it ends: the briefings it skipped, its run's usual summary, the
    patches applied after it, or the error that stops the span there; returns its JSON."""
    if not as_json and one:
        out.print(f"evening {e.date}:")
    for path in e.skipped if not as_json else []:
        out.print(f"skipped {path.name}: already written (--force runs it again)")
    run = None if e.report is None else _shown(e.report, one, as_json=as_json, explain=explain, patch=patch, html=html)
    for p in e.patched if not as_json else []:
        if p.note:
            err.print(f"note: {p.note}")
        elif p.history is None:
            out.print(f"{p.living}: nothing to change (the patch is already in it)")
        else:
            out.print(f"patched {p.living} (previous version: {p.history})")
    if e.error is not None and not as_json:
        err.print(f"error: {e.error}")
    patched = [{"topic": p.topic, "living": p.living, "history": p.history, "note": p.note} for p in e.patched]
    error = str(e.error) if e.error else None
    skipped = [str(p) for p in e.skipped]
    return {
        "date": e.date,
        "exit_code": e.exit_code,
        "skipped": skipped,
        "run": run,
        "patched": patched,
        "error": error,
    }


def _shown(report: TopicsReport, one: bool, *, as_json: bool, explain: bool, patch: bool, html: bool) -> object:
    """An evening's run logged, its summary printed (one topic is reported as one evening), the
    files beside its briefings written; returns its JSON, printed by the caller with --json."""
    from agent.runlog import log_quietly, logs_path, run_log

    reports = report.reports
    for rep in reports:
        log_quietly(run_log(rep, _command()), logs_path())
    if as_json:
        pass
    elif one:
        _print_run(reports[0], explain)
    else:
        _print_topics(report, explain)
    for rep in reports:
        _report_extras(rep, as_json=as_json, patch=patch, html=html)
    topics_json = {"exit_code": report.exit_code, "topics": {_topic(r): _run_json(r) for r in reports}}
    return _run_json(reports[0]) if one else topics_json


def _topic(report: RunReport) -> str:
    return report.evening.settings.topic


def _print_topics(report: TopicsReport, explain: bool) -> None:
    """A line per topic (what it wrote and held), its notes, then one line for the evening."""
    for rep in report.reports:
        b, w = rep.composed.briefing, rep.written
        if explain:
            for f in rep.findings:
                out.print(f"{_topic(rep)}: {f.line()}")
        where = f"wrote {w.out_path} (+ .json, .calls.jsonl)" if w.out_path else f"not written: {w.withheld}"
        out.print(
            f"{_topic(rep)}: {where} · documents {rep.documents} · increments {len(b.increments)}"
            f" · to-verify {len(b.to_verify)} · calls {len(rep.records)} · exit {rep.exit_code}",
        )
        _print_run_notes(rep)
    recs, first = report.records, report.reports[0].evening
    out.print(
        f"evening {first.settings.date} · topics {len(report.reports)} · calls {len(recs)}"
        f" · {_spent(recs, first.llm, report.seconds)} · exit {report.exit_code}",
    )


def _spent(recs: Sequence[CallRecord], llm: LLMSettings, seconds: float) -> str:
    """Who answered the calls, their tokens (with those a provider's prompt cache served), cost and time."""
    from agent.pipeline import answered_by

    priced = not any(r.source == "live" for r in recs) or llm.price() is not None
    cost = f"${sum(r.cost_usd for r in recs):.4f}" if priced else f"unknown: no price for {llm.model} in [llm.prices]"
    cached = sum(r.cached_tokens for r in recs)
    return (
        f"answered by {answered_by(recs, llm.model)}"
        f" · tokens {sum(r.input_tokens for r in recs)} in / {sum(r.output_tokens for r in recs)} out"
        + (f" · cached {cached} in" if cached else "")
        + f" · cost {cost} · {seconds:.1f}s"
    )


def _report_extras(report: RunReport, *, as_json: bool, patch: bool, html: bool) -> None:
    """The patch and page beside a written briefing."""
    if patch and not as_json and report.written.out_path is not None:
        if report.written.no_patch:
            err.print(f"note: no .patch written: {report.written.no_patch}")
        else:
            _wrote(report.written.out_path.with_suffix(".patch"))
    if html and report.written.json_path is not None:  # from the JSON just written, as `predigest view` would
        from agent.write.page import view

        page = view(report.written.json_path)
        if not as_json:
            _wrote(page)


def _watched(
    on_plan: Callable[[EveningSet], None], on_result: Callable[[ExtractionResult], None], *, html: bool, force: bool
) -> tuple[Callable[[EveningSet], None], Callable[[ExtractionResult], None]]:
    """The progress callbacks, also counting what an interruption keeps (see `_interrupted_line`) and,
    with --html, checking each topic's page with its briefing before the first call."""
    from agent.plan.outputs import check_page_free

    def plan(es: EveningSet) -> None:
        kept = es.llm.cache_dir is not None and es.llm.effective_backend in ("live", "record")
        _state["run"] = {"total": len(es.requests), "received": 0, "cached": kept, "backend": es.llm.backend}
        for ev in es.evenings if html else []:
            check_page_free(ev.out_path.with_suffix(".html"), force=force)
        on_plan(es)

    def result(r: ExtractionResult) -> None:
        run = _state.get("run")
        if isinstance(run, dict) and r.record.source == "live" and r.answered:
            run["received"] += 1
        on_result(r)

    return plan, result


def _note_written(paths: list[Path]) -> None:
    """A set of files now stands whole (a briefing's, a patched living document's): an interruption
    or an error after it says so instead of "nothing was written"."""
    written = _state.get("written")
    _state["written"] = [*(written if isinstance(written, list) else []), paths[0]]


def _written() -> str:
    written = _state.get("written")
    return ", ".join(map(str, written)) if isinstance(written, list) else ""


def _interrupted_line() -> str:
    """What a Ctrl-C kept and how to resume, in one line: a run writes nothing until its set is
    whole, and only the response cache keeps answers paid for."""
    run = _state.get("run")
    if written := _written():  # stopped after a set was put down: that set is whole, nothing else is
        return f"interrupted: {written} was written in full before the interruption; nothing else was written"
    head = "interrupted: nothing was written (the previous files are unchanged)"
    if not isinstance(run, dict):
        return f"{head}; run the same command again"
    got = f"{run['received']} of {run['total']} answers received"
    if run["cached"]:
        return f"{head}; {got} are cached, so the same command again resumes from them"
    if run["backend"] in ("live", "record", "auto") and run["received"]:
        return f"{head}; {got} are not kept (no cache); the same command again asks them again"
    return f"{head}; run the same command again"


def _bar() -> Progress:
    """rich's default bar, with the description (a case's folder name) printed as written, not as markup."""
    from rich.progress import Progress, TextColumn

    description = TextColumn("{task.description}", markup=False, style="progress.description")
    return Progress(description, *Progress.get_default_columns()[1:], console=err.console, transient=True)


@contextmanager
def _progress() -> Iterator[tuple[Callable[[EveningSet], None], Callable[[ExtractionResult], None]]]:
    """A progress bar on a terminal; one line per finished document when piped (cron logs)."""
    if err.console.is_terminal:
        with _bar() as progress:
            task = progress.add_task("extracting", total=None)
            yield (lambda ev: progress.update(task, total=len(ev.requests))), (lambda r: progress.advance(task))
        return

    yield (lambda ev: None), _result_line


def _run_json(report: RunReport) -> dict[str, object]:
    from dataclasses import asdict

    b = report.composed.briefing
    w = report.written
    return {
        "exit_code": report.exit_code,
        "partial": report.outcome.partial,
        "unread": [{"doc": d, "why": why} for d, why in report.outcome.unread],
        "written": [str(p) for p in (w.out_path, w.json_path, w.calls_path) if p],
        "withheld": w.withheld,
        "no_patch": w.no_patch,
        "backend": report.backend,
        "documents": report.documents,
        "increments": len(b.increments),
        "to_verify": len(b.to_verify),
        "calls": [asdict(r) for r in report.records],
        "findings": [asdict(f) for f in report.findings],
    }


def _warning(line: str) -> None:
    err.print(f"warning: {line}")


def _print_run(report: RunReport, explain: bool) -> None:
    b, w, recs = report.composed.briefing, report.written, report.records
    if explain:
        for f in report.findings:
            out.print(f.line())
    if w.out_path is not None:
        out.print(f"wrote {w.out_path} (+ .json, .calls.jsonl)")
    out.print(
        f"documents {report.documents} · increments {len(b.increments)} · to-verify {len(b.to_verify)}"
        f" · arXiv new {len(b.summary.new_arxiv)} / continued {b.summary.continued_arxiv}"
        f" · no-increment notes {len(b.no_increment)}"
    )
    by_source = ", ".join(f"{k} {v}" for k, v in sorted(Counter(r.source for r in recs).items()))
    spent = _spent(recs, report.evening.llm, report.seconds)
    out.print(f"calls {len(recs)}{f' ({by_source})' if by_source else ''} · backend {report.backend} · {spent}")
    out.print(
        "rules: " + " · ".join(f"{k} {v}" for k, v in sorted(Counter(f.decision for f in report.findings).items()))
    )
    _print_run_notes(report)


def _print_run_notes(report: RunReport) -> None:
    """What the user must act on, on stderr after the summary: the backend, skipped files, warnings."""
    from agent.pipeline import EXIT_NO_MODEL
    from agent.plan.ingest import UNPLACED, UNREADABLE

    w = report.written
    if report.exit_code == EXIT_NO_MODEL:  # said first, before the calls; the outcome here
        where = w.withheld or f"offline briefing written to {w.out_path}"
        err.print(f"no model answered: {where} (exit status {EXIT_NO_MODEL})")
    elif report.backend_note:
        out.print(report.backend_note)
    ws = report.evening.settings
    see = f"see `predigest inbox {ws.workspace} --topic {ws.topic} --date {ws.date}`"
    skipped = [d for d in report.evening.docs if not d.read and d.reason.startswith(UNREADABLE)]
    if skipped:
        err.print(f"note: {len(skipped)} file(s) of the inbox were not read; {see}")
    unplaced = [d for d in report.evening.docs if d.reason.startswith(UNPLACED)]
    if unplaced:
        first = f"{unplaced[0].path}: {unplaced[0].reason.removeprefix(UNPLACED).strip()}"
        err.print(
            f"note: {len(unplaced)} file(s) could not be placed in any evening ({first}); {see}",
        )
    for warning in report.evening.registry.warnings:
        _warning(warning)
    for doc, why in report.outcome.unread:
        _warning(f"not read: {doc}: {why}")
    if report.outcome.partial:
        where = w.withheld or f"written to {w.out_path}"
        llm = report.evening.llm
        paid = llm.effective_backend in ("live", "record")
        kept = "answers already received are cached" if llm.cache_dir else "--no-cache: none kept"
        resume = f"Re-run to resume ({kept}), or pass" if paid else "Pass"
        err.print(
            f"partial: {len(report.outcome.unread)} document(s) not read; {where}. {resume}"
            " --allow-partial to write it into the inbox anyway.",
        )


def _wrote(path: Path) -> None:
    """`out` is the console here; inside `run_cmd` the name is taken by the --out option."""
    out.print(f"wrote {path}")


@app.command("view")
def view_cmd(
    record: Annotated[Path, typer.Argument(help="The .json a run wrote beside its briefing.")],
    dest: Annotated[
        Path | None, typer.Option("--out", help="Where to write the page (default: .html beside the JSON).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing page.")] = False,
) -> None:
    """Build the page of a past run from its JSON alone: every line one click from its source.

    Example: predigest view out/2026-09-22-inference-e1prep.json
    """
    from agent.plan.outputs import check_page_free
    from agent.write.page import view

    check_page_free(dest or record.with_suffix(".html"), force=force)
    try:
        _wrote(view(record, dest))
    except RecursionError:  # the JSON parser's own limit: a record is a few levels deep
        raise PredigestError(
            f"{record} is nested too deeply to be a run record", hint="pass the .json written beside a briefing"
        ) from None


@app.command("patch")
def patch_cmd(
    record: Annotated[Path, typer.Argument(help="The .json a run wrote beside its briefing.")],
    apply: Annotated[
        bool, typer.Option("--apply", help="Write it into the living document (the previous version to .history/).")
    ] = False,
    workspace: Annotated[
        Path | None, typer.Option(help="The workspace (default: the one the briefing was made in).")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Refuse a briefing of another topic.")] = None,
) -> None:
    """Print the E2 patch of the living document a briefing proposes (a unified diff); --apply writes it.

    Exit status: 0 done, or nothing to change (applying twice is harmless); 2 refused, nothing
    written: the living document changed since the briefing was made, the briefing is partial,
    or it is of another topic or workspace.

    Example: predigest patch examples/world/inbox/tom/2026-09-22-inference-e1prep.json --apply
    """
    from agent.write.patch_apply import apply_patch, prepare

    target = prepare(record, workspace=workspace.absolute() if workspace else None, topic=topic)
    history = apply_patch(target, _note_written) if apply else None  # a refusal is its one line, before any note
    for note in [target.moved, *target.proposal.findings]:
        if note:
            err.print(f"note: {note}")
    if not apply:
        for why in target.refusals:
            err.print(f"warning: {why}; --apply would refuse it")
        if not target.proposal.changed and not target.partial:  # what --apply would say
            err.print(f"note: {target.living}: nothing to change (the patch is already in it)")
        sys.stdout.write(target.proposal.diff())
        return
    if history is None:
        out.print(f"{target.living}: nothing to change (the patch is already in it)")
    else:
        out.print(f"patched {target.living} (previous version: {history})")


prompt_app = typer.Typer(help="Inspect the extraction prompt.", no_args_is_help=True)
app.add_typer(prompt_app, name="prompt")


@prompt_app.command("show")
def prompt_show(
    workspace: WorkspaceArg,
    date: DateOpt,
    doc: Annotated[str, typer.Option(help="Workspace-relative path of the document.")],
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    prompt: PromptOpt = None,
    extraction: ExtractionOpt = None,
    cassettes: CassettesOpt = None,
    allow_stale: AllowStaleOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the exact messages one document would be sent (--json: with the response schema sent).
    With several topics and --extraction shared, the one request that carries them all. With
    --doc compose/TOPIC, the topic's composing request, built from the evening's cassettes' answers
    (--cassettes: another folder's, as `cassettes add-reference --cassettes` stores the answer).

    Example: predigest prompt show examples/world -t inference -d 2026-09-22 \
        --doc inbox/jay/2026-09-22-1050-jay-engineering-filter.md
    """
    from agent.extract.prompting import compose_path
    from agent.pipeline import composing_request, plan_topics, requests_for

    llm: dict[str, Any] = {"extraction": extraction} if extraction else {}
    llm |= {"allow_stale": True} if allow_stale else {}
    folder = cassettes.absolute() if cassettes else None  # as add-reference: relative to here, not the workspace
    s, topics = _selected(
        workspace,
        date,
        topic,
        all_topics,
        prompt_file=prompt.absolute() if prompt else None,
        llm=llm,
        cassette_dir=folder,
    )
    if doc.startswith(compose_path("")):  # the editor's request, built from the evening's replayed extractions
        _, request = composing_request(s, topics, doc)
        _per_topic([doc], as_json, lambda _: _prompt_of([request], "", as_json))
        return
    es = plan_topics(s, topics, for_writing=False)  # what a run of these topics would send
    if es.shared:  # one request carries every topic
        by_topic = {", ".join(topics): requests_for(es, doc)}
    else:
        by_topic = {ev.settings.topic: requests_for(ev, doc) for ev in es.evenings}
    named = len(topics) > 1 or bool(es.shared)  # a header says whose request it is
    _per_topic(list(by_topic), as_json, lambda t: _prompt_of(by_topic[t], t if named else "", as_json))


def _prompt_of(requests: list[ExtractionRequest], topic: str, as_json: bool) -> object:
    if as_json:
        parts = [
            {"doc": r.doc_path, "part": r.chunk + 1, "of": r.chunks, "messages": list(r.messages)} for r in requests
        ]
        return {
            "prompt": str(requests[0].prompt),
            "requests": parts,
            "response_schema": requests[0].answer_schema().model_json_schema(),
        }
    if topic:
        out.print(f"# topic {topic}")
    for r in requests:
        out.print(f"# prompt {r.prompt} · {r.doc_path} · part {r.chunk + 1}/{r.chunks}")
        for m in r.messages:
            out.print(f"--- {m['role']} ---")
            out.print(m["content"])
    return None


cassettes_app = typer.Typer(help="Manage recorded and reference cassettes.", no_args_is_help=True)
app.add_typer(cassettes_app, name="cassettes")


@cassettes_app.command("add-reference")
def cassettes_add_reference(
    workspace: WorkspaceArg,
    date: DateOpt,
    doc: Annotated[str, typer.Option(help="Workspace-relative path of the document.")],
    extraction: Annotated[
        Path,
        typer.Option(
            help="The expected answer written by hand: a FileExtraction JSON, or with several topics the "
            "SharedExtraction of the shared request."
        ),
    ],
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    note: Annotated[str, typer.Option(help="Who wrote it and why, stamped on the cassette.")] = "",
    cassettes: CassettesOpt = None,
) -> None:
    """Store a hand-written expected extraction as a reference cassette for one document (with
    several topics: for the one shared request that carries them all).

    Example: predigest cassettes add-reference examples/world -t inference -d 2026-09-22 --doc D --extraction x.json
    """
    from agent.pipeline import add_reference

    folder = cassettes.absolute() if cassettes else None  # as `run` does: relative to here, not the workspace
    s, topics = _selected(workspace, date, topic, all_topics, cassette_dir=folder)
    _wrote(add_reference(s, topics, doc, extraction, note))


@cassettes_app.command("rekey")
def cassettes_rekey(
    workspace: WorkspaceArg,
    date: DateOpt,
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    cassettes: CassettesOpt = None,
    prompt: PromptOpt = None,
    allow_stale: AllowStaleOpt = False,
) -> None:
    """Re-key reference cassettes after an intended prompt change (recorded ones must be recorded again);
    with several topics, those of the shared requests. Only each request's own answer moves (same
    document, part and topics): another topic's answers are never re-keyed. With --allow-stale, the
    composing requests are built from extractions replayed stale: a relayed set's reference composing
    answer moves, while its relayed extractions stay as they are.

    Example: predigest cassettes rekey examples/world --topic inference --date 2026-09-22
    """
    from agent.pipeline import rekey

    folder = cassettes.absolute() if cassettes else None
    prompt_file = prompt.absolute() if prompt else None
    s, topics = _selected(
        workspace, date, topic, all_topics, cassette_dir=folder, prompt_file=prompt_file, allow_stale=allow_stale
    )
    paths = rekey(s, topics)
    out.print(f"re-keyed {len(paths)} reference cassette(s)")
    for path in paths:
        out.print(f"  {path}")


@cassettes_app.command("check")
def cassettes_check(
    cases: Annotated[Path, typer.Option(help="Folder of gold cases.")] = Path("eval/cases"),
    case: Annotated[str | None, typer.Option(help="Check only the case with this folder name.")] = None,
    cassettes: Annotated[
        Path | None, typer.Option(help="Check each case's cassette set under this folder instead.")
    ] = None,
    prompt: PromptOpt = None,
    model: EvalModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List per case the requests no cassette answers, those answered only under an older prompt
    (stale), and per cassette set the files no case requests. Exits 1 when there is any.

    Example: predigest cassettes check
    """
    from eval import Variant
    from eval.checks import check_cassettes

    variant = Variant(
        prompt_file=prompt.absolute() if prompt else None,
        model=model,
        cassette_root=cassettes.absolute() if cassettes else None,
    )
    report = check_cassettes(cases, variant, case)
    if as_json:
        _print_json(report.to_json())
    else:
        _print_cassette_check(report)
    if not report.ok:
        raise typer.Exit(1)


def _print_cassette_check(report: CassetteReport) -> None:
    for c in report.cases:
        counts = f"{c.answered} answered · {len(c.stale)} stale · {len(c.missing)} missing"
        replayed = " (the case replays its stale answers as they are)" if c.stale and c.stale_allowed else ""
        out.print(f"{c.case} ({c.cassettes}): {counts}{replayed}")
        for r, p in [] if c.stale_allowed else c.stale:
            todo = (
                "written for another request, the row falls to the floor: `cassettes rekey`, else write it again"
                if r.startswith("compose/")
                else f"answered under {p}; replay with --allow-stale"
            )
            out.print(f"  stale   {r} ({todo})")
        for r in c.missing:
            out.print(f"  missing {r}")
    for folder, files in report.unused.items():
        for f in files:
            out.print(f"unused {f.relative_to(folder.parent) if folder.parent in f.parents else f}")


@cassettes_app.command("relay")
def cassettes_relay(
    workspace: WorkspaceArg,
    date: DateOpt,
    answers: Annotated[Path, typer.Option(help="Folder with answers/<doc>.json and prompts/<doc>.txt.")],
    cassettes: Annotated[Path, typer.Option(help="Folder to write the relayed cassettes into.")],
    model: Annotated[str, typer.Option(help="The model that answered, as its provider described it.")],
    obtained: Annotated[str, typer.Option(help="The date the answers were obtained, YYYY-MM-DD.")],
    topic: TopicsOpt = None,
    all_topics: AllTopicsOpt = False,
    note: Annotated[str, typer.Option(help="How the answers were obtained, stamped on each cassette.")] = "",
) -> None:
    """Store a real model's answers, obtained elsewhere, as relayed cassettes (real HTTP on loopback);
    with several topics, answers to the shared requests that carry them all.

    Example: predigest cassettes relay examples/world -t inference -d 2026-09-22 --answers saved/
    --cassettes cassettes/world-relayed --model "a capable LLM" --obtained 2026-11-30
    """
    from eval.relay import relay_folder

    settings, topics = _selected(workspace, date, topic, all_topics, cassette_dir=cassettes)
    when = _date(obtained).isoformat()
    paths = relay_folder(settings, answers, model=model, obtained=when, note=note, topics=topics)
    out.print(f"wrote {len(paths)} relayed cassette(s) into {cassettes}")


CasesOpt = Annotated[Path, typer.Option(help="Folder of gold cases (<date>-<topic>/case.toml + gold.md).")]
BaselineOpt = Annotated[Path, typer.Option(help="Committed scores to hold the run against.")]
UpdateBaselineOpt = Annotated[
    bool, typer.Option("--update-baseline", help="Write the current scores as the new baseline.")
]
EvalHtmlOpt = Annotated[
    Path | None, typer.Option(help="Also write the report as a page (with --compare: the comparison).")
]
CaseOpt = Annotated[str | None, typer.Option(help="Run only the case with this folder name.")]
EvalBackendOpt = Annotated[
    str, typer.Option(help="replay (CI: cassettes only, no cache), record or live (the prompt workbench).")
]
PromptsOpt = Annotated[
    list[Path] | None,
    typer.Option(help="A prompt template file (default: prompts/extract.md); twice: run both and compare."),
]
EvalCassettesOpt = Annotated[
    Path | None, typer.Option(help="Record / replay each case's cassette set under this folder instead.")
]
EvalForceOpt = Annotated[bool, typer.Option("--force", help="Replace an existing --html page.")]
AcceptDropsOpt = Annotated[bool, typer.Option("--accept-drops", help="Let --update-baseline lower committed scores.")]
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose", "-v", help="Every row in full, not only those that failed or moved, and a line per request."
    ),
]
WideOpt = Annotated[bool, typer.Option("--wide", help="Every column of the overview, whatever the terminal's width.")]
MarkdownOpt = Annotated[
    bool, typer.Option("--markdown", help="Print the overview as a Markdown table (as docs/eval.md quotes it).")
]
CompareOpt = Annotated[
    tuple[str, str] | None,
    typer.Option(help="Compare two logged evals (ids, id prefixes, last, last~1) instead of running."),
]


EVAL_EPILOG = (
    "Every eval is logged (`predigest logs`). With --backend record and OPENAI_API_KEY / OPENAI_BASE_URL, the"
    " cases are asked of a live model, as `run` would ask them; a set that holds relayed or reference answers is"
    " never recorded over (the answers go beside it, into <set>-recorded).\n\n"
    "Exits 1 when a score drops below the baseline, rule compliance is below 1.0, or a case fails;"
    " 2 on a usage or input error."
)


@app.command("eval", epilog=EVAL_EPILOG)
def eval_cmd(
    cases: CasesOpt = Path("eval/cases"),
    baseline: BaselineOpt = Path("eval/baseline.json"),
    update_baseline: UpdateBaselineOpt = False,
    as_json: JsonOpt = False,
    html: EvalHtmlOpt = None,
    case: CaseOpt = None,
    backend: EvalBackendOpt = "replay",
    prompt: PromptsOpt = None,
    model: EvalModelOpt = None,
    mode: ModeOpt = None,
    cassettes: EvalCassettesOpt = None,
    cache_dir: CacheDirOpt = None,
    no_cache: NoCacheOpt = False,
    concurrency: ConcurrencyOpt = None,
    max_calls: MaxCallsOpt = None,
    max_cost: MaxCostOpt = None,
    allow_stale: AllowStaleOpt = False,
    accept_drops: AcceptDropsOpt = False,
    compare: CompareOpt = None,
    verbose: VerboseOpt = False,
    markdown: MarkdownOpt = False,
    wide: WideOpt = False,
    force: EvalForceOpt = False,
) -> None:
    """Replay every gold case, score it against its gold briefing, and compare with the baseline:
    an overview (failing rows first), then the rows that failed or moved.

    Example: predigest eval --backend record --prompt my-extract.md && predigest eval --compare last~1 last
    """
    from agent.plan.outputs import check_page
    from agent.runlog import logs_path
    from eval import compare_logged, variants

    check_page(
        html, force=force
    )  # a page that cannot be written is an error before the first case, not after every case
    if compare is not None:
        _show_comparison(compare_logged(compare[0], compare[1], logs_path()), as_json, html)
        return
    if len(prompt or []) > 2:
        raise PredigestError("--prompt is given more than twice", hint="compare two prompts at a time")
    flags = {"mode": mode, "cache_dir": cache_dir.absolute() if cache_dir else None, "no_cache": no_cache}
    flags |= {"concurrency": concurrency, "max_calls": max_calls, "max_cost_usd": max_cost}
    root = cassettes.absolute() if cassettes else None
    prompts = [p.absolute() for p in prompt or []]  # one variant per prompt, else one with the default prompt
    runs = variants(
        prompts, backend=backend, model=model, flags=flags, env=os.environ, cassette_root=root, allow_stale=allow_stale
    )
    options = {"only": case, "update_baseline": update_baseline, "accept_drops": accept_drops, "verbose": verbose}
    _eval_variants(runs, cases, baseline, html, as_json, logs_path(), options | {"markdown": markdown, "wide": wide})


def _eval_variants(
    runs: list[Variant],
    cases: Path,
    baseline: Path,
    html: Path | None,
    as_json: bool,
    logs: Path | None,
    options: dict[str, Any],
) -> None:
    """Each variant's eval, reported; two variants are compared. Exits 1 when one fails, or when
    a variant's rows could not be answered (said first, and those rows are not run)."""
    from eval import compare_logged, run_eval

    lacking = _eval_needs(runs, cases, options["only"], (err if as_json else out).console)
    alone = len(runs) == 1  # one variant writes the page and may update the baseline; two are compared
    reports = []
    for name, variant, needs in zip("AB", runs, lacking, strict=False):
        if needs is not None and len(needs.rows) == needs.of_rows:
            continue  # nothing of it can be answered: said at the top
        with _eval_progress(options["verbose"]) as (on_plan, on_result):
            report = run_eval(
                cases,
                baseline,
                only=options["only"],
                update_baseline=options["update_baseline"] and alone,
                html_path=html if alone else None,
                variant=variant,
                command=_command(),
                logs=logs,
                on_plan=on_plan,
                on_result=on_result,
                accept_drops=options["accept_drops"],
                skip=needs.rows if needs else (),
            )
        reports.append(report)
        named = "" if alone else f"prompt {name} ({_prompt_named(variant)})"
        _print_eval(report, as_json=as_json, alone=alone, named=named, options=options)
    if len(reports) == 2 and all(r.run_id for r in reports):
        _show_comparison(compare_logged(reports[0].run_id, reports[1].run_id, logs), as_json, html)
    failed = not all(r.ok for r in reports) or any(lacking)
    if not alone and not as_json and not options["markdown"]:
        out.print(_verdict(reports, lacking), soft_wrap=True)
    if failed:
        raise typer.Exit(1)


def _verdict(reports: list[EvalReport], lacking: list[Needs | None]) -> str:
    """The last line of two prompts' eval, which says what the exit status says: each prompt's
    rows, or that it was not run for want of answers."""
    from eval.overview import summary

    done = iter(reports)
    said = []
    for name, needs in zip("AB", lacking, strict=False):
        if needs is not None and len(needs.rows) == needs.of_rows:
            said.append(f"prompt {name} not run (no answers to its requests)")
            continue
        report = next(done)
        tail = f"; {len(needs.rows)} row(s) not run" if needs is not None else ""
        said.append(f"prompt {name} {summary(report)}{tail}")
    failed = any(lacking) or not all(r.ok for r in reports)
    return f"{'FAILED' if failed else 'ok'} · " + " · ".join(said)


def _prompt_named(variant: Variant) -> str:
    """A prompt as a prompt engineer tells two apart: its file (as given, relative to here when
    it is below) and its stamp."""
    from agent.extract.prompting import PROMPTS_DIR, load_template_file

    path = variant.prompt_file or PROMPTS_DIR / "extract.md"
    shown = path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path
    stamp = str(load_template_file(path).stamp).split("+", 1)[0]
    return f"{shown}, {stamp}"


def _print_eval(report: EvalReport, *, as_json: bool, alone: bool, named: str, options: dict[str, Any]) -> None:
    """One variant's report: JSON when it is the only one (two are compared as JSON instead), the
    Markdown table docs/eval.md quotes, or the terminal report (headed by the prompt's name when there are two)."""
    from eval import overview_markdown, print_report, to_json

    if as_json and alone:
        _print_json(to_json(report))
    elif options["markdown"]:
        out.print(overview_markdown(report), soft_wrap=True, end="")
    elif not as_json:
        print_report(report, out.console, verbose=options["verbose"], named=named, wide=options["wide"])


def _eval_needs(runs: list[Variant], cases: Path, case: str | None, console: Console) -> list[Needs | None]:
    """With two prompts, what each lacks before anything runs: a second prompt's requests have
    no cassettes until a model answers them, and that is said first, not as a failure per row.
    One prompt runs as asked (its misses are its rows' errors)."""
    from eval.checks import needs

    if len(runs) < 2:
        return [None] * len(runs)
    lacking = [needs(cases, v, case) for v in runs]
    for name, variant, n in zip("AB", runs, lacking, strict=False):
        if n is not None:
            console.print(n.say(f"prompt {name} ({_prompt_named(variant)})"), soft_wrap=True)
    return lacking


def _show_comparison(c: Comparison, as_json: bool, html: Path | None) -> None:
    from eval import comparison_json, print_comparison, write_comparison_html

    if as_json:
        _print_json(comparison_json(c))
    else:
        print_comparison(c, out.console)
    if html is not None:
        write_comparison_html(c, html)
        if not as_json:
            _wrote(html)


@contextmanager
def _eval_progress(verbose: bool = False) -> Iterator[tuple[Callable[..., None], Callable[[ExtractionResult], None]]]:
    """With -v, a line per case and per answered request (time, source, tokens) on stderr. Else, on
    a terminal, one transient line (the case under way, its requests answered), gone before the
    report prints; piped, nothing: the overview is what a prompt engineer reads first."""
    if verbose:

        def plan_line(case: object, ev: Evening) -> None:
            err.print(f"case {getattr(case, 'name', case)}: {len(ev.requests)} request(s)")

        yield plan_line, _result_line
        return
    if not err.console.is_terminal:
        yield (lambda case, ev: None), (lambda r: None)
        return
    with _bar() as progress:
        task = progress.add_task("eval", total=None)

        def plan(case: object, ev: Evening) -> None:
            name = str(getattr(case, "name", case))
            progress.update(task, description=name, total=len(ev.requests), completed=0)

        yield plan, (lambda r: progress.advance(task))


def _result_line(r: ExtractionResult) -> None:
    rec = r.record
    status = f"error: {rec.error}" if rec.error else f"{rec.input_tokens}+{rec.output_tokens} tokens"
    stale = f" stale ({rec.stale.split('#', 1)[0]})" if rec.stale else ""
    err.print(f"{rec.latency_s:6.2f}s {rec.source:8} {rec.doc_path} · {status}{stale}")


logs_app = typer.Typer(help="Read the run log: every run and eval, its calls, answers and scores.")
app.add_typer(logs_app, name="logs")


@logs_app.callback(invoke_without_command=True)
def logs_list(
    ctx: typer.Context,
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many runs, newest first.")] = 20,
    kind: Annotated[str | None, typer.Option("--kind", help="Only runs of this kind: eval or run.")] = None,
) -> None:
    """List the logged runs, newest first (the log is logs.db in the user data folder).

    Example: predigest logs --kind eval; predigest logs show last
    """
    if ctx.invoked_subcommand is not None:
        return
    from dataclasses import asdict

    from agent.runlog import LOG_OFF, LOG_ON, list_runs, logs_path

    if kind not in (None, "eval", "run"):
        raise PredigestError(f"--kind {kind!r} is not a kind of run", hint="pass --kind eval or --kind run")
    path = logs_path()
    runs = list_runs(path, limit, kind) if path else []
    if as_json:
        _print_json([asdict(r) for r in runs])
        return
    if not runs:
        out.print(f"no runs logged in {path}" if path else f"{LOG_OFF}: nothing is logged — {LOG_ON}")
        return
    out.print(f"runs in {path}, newest first")
    for r in runs:  # one line per run, never folded: the id is what the next command needs
        stamp = " · ".join(x for x in (r.prompt.split("+", 1)[0], r.model, r.backend) if x)
        out.print(
            f"{r.id}  {r.time[:19]}  {r.kind:<4}  {'ok    ' if r.ok else 'FAILED'}  {stamp}  git {r.git or '?'}"
            f"  predigest {' '.join(r.command)}",
            overflow="ignore",
            crop=False,
        )


@logs_app.command("show")
def logs_show(
    run_id: Annotated[str, typer.Argument(help="A run id, a unique prefix of one, last or last~N.")],
    doc: Annotated[
        str | None, typer.Option(help="One document's answer (workspace-relative path) and each claim's fate.")
    ] = None,
    row: Annotated[str | None, typer.Option("--case", help="The eval row (case name) to read --doc from.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print one logged run, or one document's answer in it with the fate of each claim.

    Example: predigest logs show last --doc inbox/jay/2026-09-22-1050-jay-engineering-filter.md
    """
    from agent.runlog import doc_answer, load_run, logs_path

    record = load_run(logs_path(), run_id)
    if doc is None:
        if as_json:
            _print_json(record.model_dump(mode="json"))
        else:
            _print_logged(record)
        return
    answer = doc_answer(record, doc, row)
    if as_json:
        _print_json(
            {
                "run": record.id,
                "evening": answer.evening.name,
                "calls": [c.model_dump(mode="json") for c in answer.calls],
                "fates": [
                    {"claim": ref, "title": t, "stage": f.stage, "detail": f.detail, "steps": f.steps}
                    for ref, t, f in answer.fates
                ],
            }
        )
        return
    _print_answer(record, answer)


def _print_answer(record: RunLog, answer: DocAnswer) -> None:
    """One document's answer in a logged run, each claim with the stage that decided its fate."""
    e = answer.evening
    out.print(f"run {record.id} · {e.name} · {e.prompt or 'offline'} · {e.model} · {e.backend}")
    for c in answer.calls:
        stale = f" · stale ({c.stale})" if c.stale else ""
        cached = f" ({c.cached_tokens} cached)" if c.cached_tokens else ""
        shared = f" · shared by {c.topics}" if c.topics else ""
        out.print(
            f"{c.doc} part {c.part + 1}/{c.parts} · {c.source} · request {c.request_hash[:12]} · "
            f"{c.input_tokens}{cached}+{c.output_tokens} tokens · {c.latency_s:.2f}s · ${c.cost_usd:.4f}"
            f"{stale}{shared}",
        )
        if c.error:
            out.print(f"  error: {c.error}")
        if c.answer is None:
            continue
        a = c.answer
        out.print(f"  relevance {a.relevance}: {a.relevance_reason}")
        for s in a.skipped:
            out.print(f"  skipped: {s}")
    fates = iter(answer.fates)  # one per claim of the answers, in their order
    for c in answer.calls:
        for claim in c.answer.claims if c.answer else []:
            *_, f = next(fates)
            out.print(f"  claim {'★' * claim.stars} {claim.title} ({claim.section_ref})")
            out.print(f"    → {f.stage}: {f.detail}")
            for q in claim.evidence:
                out.print(f"    quote: {q}")


def _print_logged(record: RunLog) -> None:
    out.print(
        f"run {record.id} · {record.kind} · {record.time} · git {record.git or '?'}"
        f" · {'ok' if record.ok else 'FAILED'}",
    )
    out.print(f"command: predigest {' '.join(record.command)}")
    for e in record.evenings:
        tokens = sum(c.input_tokens + c.output_tokens for c in e.calls)
        sources = Counter(c.source for c in e.calls)
        stamp = " · ".join(x for x in (e.prompt or "offline", e.model, e.backend, e.cassettes) if x)
        out.print(f"{e.name} · {stamp}")
        out.print(
            f"  calls {len(e.calls)} ({', '.join(f'{k} {v}' for k, v in sorted(sources.items()))}) · tokens {tokens}"
            f" · findings {len(e.findings)}" + (f" · stale answers of {', '.join(e.stale)}" if e.stale else ""),
        )
        if e.scores:
            out.print("  " + " · ".join(f"{m} {s.score:.3f}" for m, s in e.scores.items()))
        for f in e.fates:
            if not f.matched:
                out.print(f"  missed {f.item} — {f.stage}: {f.detail}")
        for err_line in e.errors:
            out.print(f"  error {err_line}")


class _WarningLine(logging.Handler):
    """The library's warnings (a corrupt cache, say) as one `warning:` line on stderr."""

    def emit(self, record: logging.LogRecord) -> None:
        _warning(record.getMessage())


def _setup_logging() -> None:
    logger = logging.getLogger("predigest")
    if not any(isinstance(h, _WarningLine) for h in logger.handlers):
        logger.addHandler(_WarningLine(logging.WARNING))
        logger.propagate = False


def _interrupted() -> NoReturn:
    _state["said"] = True
    err.print(_interrupted_line())
    raise SystemExit(EXIT_INTERRUPTED) from None


def _on_sigint(signum: int, frame: object) -> None:
    """The first Ctrl-C stops the run (a KeyboardInterrupt, which `main` reports); a second one,
    while the calls in flight are let go or the process winds down, ends it at once, with the
    same one line and no traceback."""
    if not _state["interrupting"]:
        _state["interrupting"] = True
        raise KeyboardInterrupt
    if not _state["said"]:
        sys.stderr.write(_interrupted_line() + "\n")
    sys.stderr.flush()
    os._exit(EXIT_INTERRUPTED)


def _catch_interrupts() -> Callable[[], None]:
    """Install `_on_sigint` (only the main thread may); returns what puts the previous handler back."""
    _state.update(interrupting=False, said=False, run=None, written=None)
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGINT, _on_sigint)
    return lambda: signal.signal(signal.SIGINT, previous)


@cache
def _click_command() -> Callable[..., Any]:
    """The click command Typer builds from `app`, built once per process: calling `app` builds it
    again on every call, and the tests call `main` a few hundred times in one process."""
    return typer.main.get_command(app)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point: user-fixable errors print one line and exit 2; --debug shows the traceback.

    Typer handles its own usage errors (exit 2, with usage); everything else propagates. After a
    Ctrl-C our SIGINT handler stays, so a second one while the process winds down (threads still
    joining) ends it quietly; otherwise the caller's handler is put back."""
    restore = _catch_interrupts()
    try:
        _state["debug"] = False
        _state["argv"] = list(sys.argv[1:] if argv is None else argv)  # the run log keeps the command
        _setup_logging()
        # not standalone: typer.Exit comes back as a status, and errors reach the handlers below
        code = _click_command()(args=argv, prog_name="predigest", standalone_mode=False)
        if code == EXIT_INTERRUPTED:  # Typer turns Ctrl-C into this status, silently
            _interrupted()
        if isinstance(code, int) and code:
            raise SystemExit(code)
    except KeyboardInterrupt:  # Typer turns Ctrl-C into its Abort (below); both end the same way
        _interrupted()
    except PredigestError as e:
        if _state["debug"]:
            raise
        written = f" (already written in full: {w})" if (w := _written()) else ""
        err.print(f"error: {e}{written}")
        raise SystemExit(2) from None
    except Exception as e:  # a bug or an unforeseen environment: one line, the traceback with --debug
        if hasattr(e, "show") and isinstance(getattr(e, "exit_code", None), int):
            e.show()  # a usage error (Typer vendors click, so it is matched by shape): usage line, exit 2
            raise SystemExit(e.exit_code) from None
        if type(e).__name__ == "Abort":
            _interrupted()
        if _state["debug"]:
            raise
        written = f" (already written in full: {w})" if (w := _written()) else ""
        err.print(
            f"error: unexpected {type(e).__name__}: {e} — run again with --debug for the traceback, and report it"
            + written,
        )
        raise SystemExit(EXIT_BUG) from None
    finally:
        if not _state["interrupting"]:
            restore()
