"""The `predigest` command: parse options, call one function, print. No logic lives here."""

from __future__ import annotations

import datetime as dt
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from agent.errors import PredigestError

if TYPE_CHECKING:
    from agent.pipeline import RunReport

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    help="Turn an evening's research inbox into a grounded pre-digest briefing per topic.",
)
out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
_state = {"debug": False}

WorkspaceArg = Annotated[Path, typer.Argument(help="The workspace folder (holds predigest.toml).")]
TopicOpt = Annotated[str, typer.Option("--topic", "-t", help="Topic name from predigest.toml.")]
DateOpt = Annotated[str, typer.Option("--date", "-d", help="The evening, YYYY-MM-DD.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of a summary.")]


@app.callback()
def _main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False) -> None:
    _state["debug"] = debug


def _date(s: str) -> dt.date:
    try:
        return dt.date.fromisoformat(s)
    except ValueError:
        raise PredigestError(f"--date {s!r} is not a date", hint="use YYYY-MM-DD, e.g. 2026-09-22") from None


def _print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")


@app.command("parse")
def parse_cmd(
    file: Annotated[Path, typer.Argument(help="A briefing in the E1 format.")], as_json: JsonOpt = False
) -> None:
    """Read a briefing and show what was understood.

    Example: predigest parse examples/world/inbox/tom/2026-09-21-inference-e1prep.md --json
    """
    from agent.parse import parse

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PredigestError(f"cannot read {file}: {e}", hint="pass a UTF-8 Markdown file") from e
    b = parse(text, path=str(file))
    if as_json:
        _print_json(b.model_dump(mode="json"))
        return
    out.print(f"[bold]{b.topic}[/] · {b.date}  window {b.summary.window or '?'}")
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
            f"  增量 {inc.number} [{'*' * inc.stars}] {inc.title}\n      {refs}  ({len(inc.all_points())} key points)"
        )
    for v in b.to_verify:
        carried = f", carried from {v.carried_from}" if v.carried_from else ""
        out.print(f"  待核实 {v.number}: {v.title} ({v.risk}{carried})")


@app.command("inbox")
def inbox_cmd(workspace: WorkspaceArg, topic: TopicOpt, date: DateOpt, as_json: JsonOpt = False) -> None:
    """List the documents the evening's run would read, and why each other file is left out.

    Example: predigest inbox examples/world --topic inference --date 2026-09-22
    """
    from agent.ingest import evening_window, scan
    from agent.workspace import load_workspace

    ws = load_workspace(workspace)
    docs = scan(ws, topic, _date(date), with_text=False)
    if as_json:
        _print_json([d.model_dump(mode="json", exclude={"text"}) for d in docs])
        return
    t = Table(title=f"{topic} · window {evening_window(ws, _date(date))}", show_lines=False)
    for col in ("read", "kind", "agent", "time", "path", "why"):
        t.add_column(col)
    for d in sorted(docs, key=lambda d: (not d.read, d.kind, d.path)):
        when = "" if d.timestamp is None else d.timestamp.strftime("%m-%d" if d.date_only else "%m-%d %H:%M")
        t.add_row("✓" if d.read else "·", d.kind, d.agent, when, d.path, d.reason)
    out.print(t)


@app.command("anchors")
def anchors_cmd(workspace: WorkspaceArg, topic: TopicOpt, date: DateOpt, as_json: JsonOpt = False) -> None:
    """List what is already anchored for a topic on an evening, with where and when it was first anchored.

    Example: predigest anchors examples/world --topic inference --date 2026-09-22
    """
    from agent.anchors import build_registry
    from agent.ingest import scan
    from agent.workspace import load_workspace

    day = _date(date)
    reg = build_registry(scan(load_workspace(workspace), topic, day), topic, day)
    if as_json:
        _print_json(
            {
                "anchors": [
                    {"kind": a.kind, "key": a.key, "label": a.label, "first": a.first_date, "source": a.source}
                    for a in reg.anchors
                ],
                "open_to_verify": [
                    {"title": o.item.title, "origin": o.origin, "source": o.source} for o in reg.open_items
                ],
                "sections": list(reg.sections),
                "adjacent": [{"key": a.key, "source": a.source} for a in reg.adjacent],
            }
        )
        return
    t = Table(title=f"{topic} anchors before {day}")
    for col in ("kind", "key", "first anchored", "source", "label"):
        t.add_column(col)
    for a in reg.anchors:
        t.add_row(a.kind, a.display_id or a.key, a.when, a.source, a.label[:60])
    out.print(t)
    out.print(f"living sections: {' · '.join(reg.sections) or 'none'}")
    for o in reg.open_items:
        out.print(f"open to-verify: {o.item.title} (since {o.origin}, {o.source})")
    out.print(f"adjacent references: {len(reg.adjacent)} (same-evening briefings of other topics; not anchors)")


@app.command("run")
def run_cmd(
    workspace: WorkspaceArg,
    topic: TopicOpt,
    date: DateOpt,
    out: Annotated[
        Path | None, typer.Option(help="File or folder for the briefing (default: the workspace's own inbox).")
    ] = None,
    force: Annotated[bool, typer.Option(help="Replace an existing briefing.")] = False,
    model: Annotated[str | None, typer.Option(help="Model name (default: [llm] model in predigest.toml).")] = None,
    mode: Annotated[str | None, typer.Option(help="Structured output mode: tools or json_schema.")] = None,
    backend: Annotated[
        str, typer.Option(help="auto (live with a key, replay without), live, record or replay.")
    ] = "auto",
    cassettes: Annotated[Path | None, typer.Option(help="Cassette folder (default: [llm] cassettes).")] = None,
    cache_dir: Annotated[Path | None, typer.Option(help="Response cache folder (default: user cache dir).")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the response cache.")] = False,
    concurrency: Annotated[int | None, typer.Option(help="Calls in flight at once.")] = None,
    max_calls: Annotated[int | None, typer.Option(help="Stop calling after this many requests.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Stop calling after this much spend (USD).")] = None,
    explain: Annotated[bool, typer.Option(help="Print every candidate's fate and the rule that decided it.")] = False,
) -> None:
    """Write the evening's briefing for one topic (Markdown, JSON beside it, and a JSONL call record).

    Reads OPENAI_API_KEY / OPENAI_BASE_URL for a live endpoint; without a key it replays cassettes.

    Example: predigest run examples/world --topic inference --date 2026-09-22 --out out/
    """
    import os

    from rich.progress import Progress

    from agent.pipeline import run, settings_from

    flags = {
        "workspace": workspace,
        "topic": topic,
        "date": _date(date),
        "out": out,
        "force": force,
        "model": model,
        "mode": mode,
        "backend": backend,
        "cassette_dir": cassettes,
        "cache_dir": cache_dir,
        "no_cache": no_cache,
        "concurrency": concurrency,
        "max_calls": max_calls,
        "max_cost_usd": max_cost,
    }
    settings = settings_from(flags, os.environ)
    with Progress(console=err, transient=True) as progress:
        task = progress.add_task("extracting", total=None)
        report = run(
            settings,
            on_plan=lambda p: progress.update(task, total=len(p.requests)),
            on_result=lambda r: progress.advance(task),
        )
    _print_run(report, explain)


def _print_run(report: RunReport, explain: bool) -> None:
    b = report.composed.briefing
    recs = report.records
    by_source: dict[str, int] = {}
    for r in recs:
        by_source[r.source] = by_source.get(r.source, 0) + 1
    failed = [r for r in recs if r.error]
    decisions: dict[str, int] = {}
    for f in report.findings:
        decisions[f.decision] = decisions.get(f.decision, 0) + 1
    if explain:
        for f in report.findings:
            out.print(f.line(), markup=False, highlight=False)
    out.print(f"wrote {report.out_path} (+ .json, .calls.jsonl)", markup=False)
    out.print(
        f"documents {report.documents} · increments {len(b.increments)} · to-verify {len(b.to_verify)}"
        f" · arXiv new {len(b.summary.new_arxiv)} / continued {b.summary.continued_arxiv}"
        f" · no-increment notes {len(b.no_increment)}"
    )
    out.print(
        f"calls {len(recs)} ({', '.join(f'{k} {v}' for k, v in sorted(by_source.items()))}) · backend {report.backend}"
        f" · tokens {sum(r.input_tokens for r in recs)} in / {sum(r.output_tokens for r in recs)} out"
        f" · cost ${sum(r.cost_usd for r in recs):.4f} · {report.seconds:.1f}s",
        markup=False,
    )
    out.print("rules: " + " · ".join(f"{k} {v}" for k, v in sorted(decisions.items())), markup=False)
    for r in failed:
        err.print(f"warning: {r.doc_path}: {r.error}", markup=False, highlight=False)


prompt_app = typer.Typer(help="Inspect the extraction prompt.", no_args_is_help=True)
app.add_typer(prompt_app, name="prompt")


@prompt_app.command("show")
def prompt_show(
    workspace: WorkspaceArg,
    topic: TopicOpt,
    date: DateOpt,
    doc: Annotated[str, typer.Option(help="Workspace-relative path of the document.")],
) -> None:
    """Print the exact messages one document would be sent.

    Example: predigest prompt show examples/world -t inference -d 2026-09-22 \
        --doc inbox/jay/2026-09-22-1050-jay-engineering-filter.md
    """
    from agent.pipeline import Settings, plan, requests_for

    for r in requests_for(plan(Settings(workspace=workspace, topic=topic, date=_date(date))), doc):
        out.print(f"# prompt {r.prompt} · {r.doc_path} · part {r.chunk + 1}/{r.chunks}", markup=False)
        for m in r.messages:
            out.print(f"--- {m['role']} ---", markup=False)
            out.print(m["content"], markup=False, highlight=False)


cassettes_app = typer.Typer(help="Manage recorded and reference cassettes.", no_args_is_help=True)
app.add_typer(cassettes_app, name="cassettes")


@cassettes_app.command("add-reference")
def cassettes_add_reference(
    workspace: WorkspaceArg,
    topic: TopicOpt,
    date: DateOpt,
    doc: Annotated[str, typer.Option(help="Workspace-relative path of the document.")],
    extraction: Annotated[Path, typer.Option(help="A FileExtraction JSON written by hand: the expected answer.")],
    note: Annotated[str, typer.Option(help="Who wrote it and why, stamped on the cassette.")] = "",
) -> None:
    """Store a hand-written expected extraction as a reference cassette for one document.

    Example: predigest cassettes add-reference examples/world -t inference -d 2026-09-22 --doc D --extraction x.json
    """
    from agent.pipeline import Settings, add_reference

    path = add_reference(Settings(workspace=workspace, topic=topic, date=_date(date)), doc, extraction, note)
    out.print(f"wrote {path}", markup=False)


@cassettes_app.command("rekey")
def cassettes_rekey(workspace: WorkspaceArg, topic: TopicOpt, date: DateOpt) -> None:
    """Re-key reference cassettes after an intended prompt change (recorded ones must be recorded again).

    Example: predigest cassettes rekey examples/world --topic inference --date 2026-09-22
    """
    from agent.pipeline import Settings, rekey

    paths = rekey(Settings(workspace=workspace, topic=topic, date=_date(date)))
    out.print(f"re-keyed {len(paths)} reference cassette(s)")
    for path in paths:
        out.print(f"  {path}", markup=False)


@cassettes_app.command("relay")
def cassettes_relay(
    workspace: WorkspaceArg,
    topic: TopicOpt,
    date: DateOpt,
    answers: Annotated[Path, typer.Option(help="Folder with answers/<doc>.json and prompts/<doc>.txt.")],
    cassettes: Annotated[Path, typer.Option(help="Folder to write the relayed cassettes into.")],
    model: Annotated[str, typer.Option(help="The model that answered, as its provider described it.")],
    obtained: Annotated[str, typer.Option(help="The date the answers were obtained, YYYY-MM-DD.")],
    note: Annotated[str, typer.Option(help="How the answers were obtained, stamped on each cassette.")] = "",
) -> None:
    """Store a real model's answers, obtained elsewhere, as relayed cassettes (real HTTP on loopback).

    Example: predigest cassettes relay examples/world -t inference -d 2026-09-22 --answers saved/
    --cassettes cassettes/world-relayed --model "a capable LLM" --obtained 2026-11-30
    """
    from agent.pipeline import Settings
    from eval.relay import relay_folder

    settings = Settings(workspace=workspace, topic=topic, date=_date(date), cassette_dir=cassettes)
    paths = relay_folder(settings, answers, model=model, obtained=_date(obtained).isoformat(), note=note)
    out.print(f"wrote {len(paths)} relayed cassette(s) into {cassettes}", markup=False)


@app.command("eval")
def eval_cmd(
    cases: Annotated[Path, typer.Option(help="Folder of gold cases (<date>-<topic>/case.toml + gold.md).")] = Path(
        "eval/cases"
    ),
    baseline: Annotated[Path, typer.Option(help="Committed scores to hold the run against.")] = Path(
        "eval/baseline.json"
    ),
    update_baseline: Annotated[
        bool, typer.Option("--update-baseline", help="Write the current scores as the new baseline.")
    ] = False,
    as_json: JsonOpt = False,
    html: Annotated[Path | None, typer.Option(help="Also write a side-by-side HTML page (output vs gold).")] = None,
    case: Annotated[str | None, typer.Option(help="Run only the case with this folder name.")] = None,
    backend: Annotated[
        str, typer.Option(help="replay (CI: cassettes only, no cache), record or live (the prompt workbench).")
    ] = "replay",
) -> None:
    """Replay every gold case, score it against its gold briefing, and compare with the baseline.

    Exits 1 when a score drops below the baseline, rule compliance is below 1.0, or a case fails
    (e.g. a missing cassette).

    Example: predigest eval --html out/eval.html
    """
    from eval import print_report, run_eval, to_json

    report = run_eval(cases, baseline, only=case, update_baseline=update_baseline, html_path=html, backend=backend)
    if as_json:
        _print_json(to_json(report))
    else:
        print_report(report, out)
    if html is not None and not as_json:
        out.print(f"wrote {html}", markup=False)
    if not report.ok:
        raise typer.Exit(1)


def main() -> None:
    """Entry point: user-fixable errors print one line and exit 2; --debug shows the traceback.

    Typer handles its own usage errors (exit 2, with usage); everything else propagates."""
    try:
        app()
    except PredigestError as e:
        if _state["debug"]:
            raise
        err.print(f"error: {e}", markup=False, highlight=False)
        raise SystemExit(2) from None
