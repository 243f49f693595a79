"""The commands as a user types them (the README's examples), through the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import SEED, WORLD, predigest


def test_parse_seed_summary() -> None:
    r = predigest("parse", str(SEED))
    assert r.returncode == 0, r.stderr
    assert "increments: 6  source rows: 12  to-verify: 5  arXiv rows: 24" in r.stdout
    assert "priority rows: 9" in r.stdout


def test_parse_json_is_the_model() -> None:
    r = predigest("parse", str(WORLD / "inbox/tom/2026-09-21-inference-e1prep.md"), "--json")
    data = json.loads(r.stdout)
    assert data["topic"] == "inference" and len(data["increments"]) == 6


def test_inbox_lists_reads_and_reasons() -> None:
    r = predigest("inbox", "examples/world", "--topic", "inference", "--date", "2026-09-22", "--json")
    docs = json.loads(r.stdout)
    read = {d["path"] for d in docs if d["read"]}
    assert "inbox/jay/2026-09-22-1450-jay-engineering-filter.md" in read
    late = next(d for d in docs if d["path"].endswith("2230-jay-late-night-filter.md"))
    assert not late["read"] and "after the window" in late["reason"]


def test_anchors_lists_first_dates() -> None:
    r = predigest("anchors", "examples/world", "--topic", "inference", "--date", "2026-09-22", "--json")
    data = json.loads(r.stdout)
    firsts = {a["key"]: a["first"] for a in data["anchors"] if a["kind"] == "arxiv"}
    assert firsts["2602.07115"] == "2026-09-15" and firsts["2609.20511"] == "2026-09-21"
    assert len(data["open_to_verify"]) == 2


def test_prompt_show_prints_the_messages() -> None:
    r = predigest(
        "prompt",
        "show",
        "examples/world",
        "-t",
        "inference",
        "-d",
        "2026-09-22",
        "--doc",
        "inbox/jay/2026-09-22-1050-jay-engineering-filter.md",
    )
    assert r.returncode == 0, r.stderr
    assert "--- system ---" in r.stdout and '<document path="inbox/jay/2026-09-22-1050' in r.stdout
    assert "extract@" in r.stdout


def test_prompt_show_builds_the_composing_request_from_the_cassettes_given() -> None:
    """--cassettes points the composing request at another folder's extraction answers (as add-reference
    stores the answer there): the relayed readers' words, not the reference ones'."""
    show = ("prompt", "show", "examples/world", "-t", "inference", "-d", "2026-09-22", "--doc", "compose/inference")
    own, relayed = predigest(*show), predigest(*show, "--cassettes", "cassettes/world-relayed", "--allow-stale")
    assert own.returncode == 0 and relayed.returncode == 0, own.stderr + relayed.stderr
    assert relayed.stdout.startswith("# prompt compose@") and "compose/inference" in relayed.stdout.splitlines()[0]
    assert relayed.stdout != own.stdout


def add_reference(*topics: str, doc: str = "work-queue/2026-09-22-2200.md") -> tuple[str, ...]:
    """`cassettes add-reference` of the demo evening with README.md as the answer: never an extraction."""
    return (
        "cassettes",
        "add-reference",
        "examples/world",
        *topics,
        "-d",
        "2026-09-22",
        "--doc",
        doc,
        "--extraction",
        "README.md",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("parse", "README.md"), "not a briefing title", id="not-a-briefing"),
        pytest.param(("inbox", "nowhere", "-t", "inference", "-d", "2026-09-22"), "does not exist", id="no-workspace"),
        pytest.param(("inbox", "examples/world", "-t", "nope", "-d", "2026-09-22"), "topic 'nope'", id="no-topic"),
        pytest.param(("inbox", "examples/world", "-t", "inference", "-d", "22/09"), "is not a date", id="bad-date"),
        pytest.param(
            add_reference("-t", "inference"),
            "is not a FileExtraction",
            id="reference-not-an-extraction",
        ),
        pytest.param(
            add_reference("--all-topics"),
            "is not a SharedExtraction",
            id="shared-reference-not-an-extraction",
        ),
        pytest.param(
            add_reference("--all-topics", doc="nope.md"),
            "nope.md is not a source of the evening",
            id="shared-reference-for-an-unknown-document",
        ),
        pytest.param(
            ("prompt", "show", "examples/world", "-t", "inference", "-d", "2026-09-22", "--doc", "nope.md"),
            "is not a source of the evening",
            id="prompt-for-an-unknown-document",
        ),
    ],
)
def test_errors_are_one_line_with_exit_2(args: tuple[str, ...], message: str) -> None:
    r = predigest(*args)
    assert r.returncode == 2
    assert message in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_the_installed_console_script_runs() -> None:
    """The one subprocess test: the `predigest` entry point of the installed package."""
    script = Path(sys.executable).parent / "predigest"
    if not script.exists():
        pytest.skip(f"no console script beside {sys.executable}")
    r = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0 and r.stdout.startswith("predigest "), r.stderr
    bad = subprocess.run(
        [str(script), "inbox", str(WORLD), "--topic", "nope", "--date", "2026-09-22"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: topic 'nope'") and "Traceback" not in bad.stderr


def test_prompt_show_json_has_the_messages_and_the_schema_and_takes_a_path_with_the_workspace() -> None:
    doc = "work-queue/2026-09-22-2200.md"
    r = predigest(
        "prompt",
        "show",
        "examples/world",
        "-t",
        "inference",
        "-d",
        "2026-09-22",
        "--doc",
        f"examples/world/{doc}",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    (part,) = data["requests"]
    assert part["doc"] == doc and [m["role"] for m in part["messages"]] == ["system", "user"]
    assert data["prompt"].startswith("extract@") and "claims" in data["response_schema"]["properties"]


def test_run_json_lists_the_files_written(tmp_path: Path) -> None:
    r = predigest(
        "run",
        "examples/world",
        "-t",
        "inference",
        "-d",
        "2026-09-22",
        "--backend",
        "replay",
        "--out",
        f"{tmp_path}/",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["exit_code"] == 0 and not data["partial"] and len(data["written"]) == 3
    assert all(Path(p).is_file() for p in data["written"]) and data["findings"]


MARKUP = "GLM [/x] [bold]b[/bold] :fire:"  # rich markup and an emoji code, as a document may hold them


@pytest.mark.parametrize(
    ("command", "printed"),
    [
        (("parse", "{ws}/inbox/tom/2026-09-21-inference-e1prep.md"), f"colibri {MARKUP} 支持范围"),
        (("anchors", "{ws}", "--topic", "inference", "--date", "2026-09-22"), f"colibri {MARKUP} 支持范围"),
    ],
    ids=["parse", "anchors"],
)
def test_document_text_is_printed_as_written(tmp_path: Path, command: tuple[str, ...], printed: str) -> None:
    """A to-verify title holding markup-like text: printed verbatim, not styled, not a crash."""
    import shutil

    ws = tmp_path / "world"
    shutil.copytree(WORLD, ws)
    baseline = ws / "inbox" / "tom" / "2026-09-21-inference-e1prep.md"
    text = baseline.read_text(encoding="utf-8")
    assert "colibri GLM-5.2 支持范围" in text
    baseline.write_text(text.replace("colibri GLM-5.2 支持范围", f"colibri {MARKUP} 支持范围"), encoding="utf-8")
    r = predigest(*(arg.format(ws=ws) for arg in command))
    assert r.returncode == 0, r.stderr
    assert printed in r.stdout


def test_a_table_cell_is_printed_as_written() -> None:
    from rich.table import Table

    from agent.cli import out

    table = Table()
    table.add_column("label")
    table.add_row(MARKUP)
    with out.console.capture() as printed:
        out.print(table)
    assert MARKUP in printed.get()


def test_an_eval_progress_bar_prints_a_case_name_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a terminal `eval` shows a bar per case, described by the case's folder name."""
    import io
    from types import SimpleNamespace

    from rich.console import Console

    from agent import cli

    terminal = Console(file=io.StringIO(), force_terminal=True, width=120, markup=False, emoji=False)
    monkeypatch.setitem(cli.err.__dict__, "console", terminal)
    with cli._eval_progress() as (plan, _result):
        plan(SimpleNamespace(name=f"case {MARKUP}"), SimpleNamespace(requests=[object(), object()]))
        terminal.print("")  # a refresh of the live bar
    assert f"case {MARKUP}" in terminal.file.getvalue()
