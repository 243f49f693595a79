"""The workbench tells the truth, one row per promise: a second prompt without answers of its own
is said first and scored for nothing; with --allow-stale every row of it says stale, and a control
edit ("." → "!", whose scores cannot move) shows no loss laid to the prompt; the overview fits an
80-column terminal and its last line says what the exit status says; the compare page opens with
what moved and folds what did not.

The two-prompt rows run on the overlap evening's agents case, whose cassette folder holds two
topics' answers to each document.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.core.listing import width
from tests.paths import ROOT, predigest
from tests.test_topic_keys import control_edit

CASE = "2026-10-21-agents"
COMMITTED = ROOT / "prompts" / "extract.md"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("truth")
    edited = control_edit(tmp)
    env = {**os.environ, "PREDIGEST_LOGS_DB": str(tmp / "logs.db"), "COLUMNS": ""}
    two = ("eval", "--case", CASE, "--prompt", str(COMMITTED), "--prompt", str(edited))
    page = tmp / "compare.html"
    return {
        "no key": predigest(*two, env=env),
        "logged": json.loads(predigest("logs", "--json", env=env).stdout),
        "stale": predigest(*two, "--allow-stale", env=env),
        "stale json": predigest(*two, "--allow-stale", "--json", env=env),
        "page": (predigest("eval", "--compare", "last~1", "last", "--html", str(page), env=env), page),
        "80": predigest("eval", env={**os.environ, "PREDIGEST_LOGS_DB": "off", "COLUMNS": "80"}),
    }


def no_key(runs: dict[str, Any]) -> None:
    """Without a key: one line first, saying B has no answers and what to do; nothing scored for B."""
    r = runs["no key"]
    lines = r.stdout.splitlines()
    assert r.returncode == 1 and lines[0].startswith("prompt B (") and "extract@3#" in lines[0], r.stdout
    assert "nothing scored for it" in lines[0] and "--backend record" in lines[0] and "prompt show" in lines[0]
    assert lines[-1] == "FAILED · prompt A ok 3 rows · prompt B not run (no answers to its requests)", lines[-1]
    assert [run["prompt"] for run in runs["logged"]] == [runs["logged"][0]["prompt"]]  # A's eval alone was logged
    assert runs["logged"][0]["prompt"].startswith("extract@3#9697ae3e64eb")


def every_b_row_says_stale(runs: dict[str, Any]) -> None:
    """With --allow-stale every row of B answered from cassettes says stale in its status column,
    and scores as A's (the control edit cannot move a score): the run is green."""
    r = runs["stale"]
    assert r.returncode == 0, r.stdout + r.stderr
    b = r.stdout.split("prompt B (", 1)[1]
    rows = [ln for ln in b.splitlines() if ln.split("  ")[0] in ("ok", "stale", "moved", "FAILED", "FAILED stale")]
    assert len(rows) == 3 and [ln.split()[0] for ln in rows] == ["stale", "ok", "stale"], rows
    assert "offline" in rows[1]  # the offline floor asks no prompt
    assert r.stdout.splitlines()[-1] == "ok · prompt A ok 3 rows · prompt B ok 3 rows"


def compare_lays_no_loss_to_the_prompt(runs: dict[str, Any]) -> None:
    """The comparison marks the stale rows and explains nothing of them as the prompt's."""
    data = json.loads(runs["stale json"].stdout)
    stale = {c["case"]: c["stale"] for c in data["cases"]}
    # the relayed row's answers were given to the earlier prompt: stale under A (as its case says) and B alike
    assert stale == {CASE: ["B"], f"{CASE} · offline": [], f"{CASE}@world-1021-relayed": ["A", "B"]}, stale
    assert all(c["flips"] == [] and all(m["delta"] == 0 for m in c["metrics"].values()) for c in data["cases"])
    text = runs["stale"].stdout
    assert "lost in B" not in text and f"{CASE}: B stale (extract@3) · no change" in text


def compare_page_opens_with_what_moved(runs: dict[str, Any]) -> None:
    r, page = runs["page"]
    assert r.returncode == 0, r.stdout + r.stderr
    html = page.read_text(encoding="utf-8")
    summary, cases = html.index("<section class='summary'"), html.index("<section class='case'")
    assert summary < cases and "moved: 0 of 3 rows; 3 unchanged" in html
    folded = html[html.index("<details class='unchanged'>") :]
    assert folded.count("<section class='case'") == 3 and "<script" not in html


def overview_fits_80_columns(runs: dict[str, Any]) -> None:
    """`predigest eval` at 80 columns: the overview first (no progress on a pipe), each of its
    rows on one line, no line wider than 80 cells, and a last line that agrees with the exit status."""
    r = runs["80"]
    lines = r.stdout.splitlines()
    n = len(json.loads((ROOT / "eval" / "baseline.json").read_text(encoding="utf-8"))["cases"])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert lines[0] == f"{n} rows against eval/baseline.json, failing rows first"
    rows = lines[3 : 3 + n]
    assert lines[1].split()[:4] == ["status", "case", "answers", "inc"] and all(ln[:2] in ("ok", "st") for ln in rows)
    assert max(width(ln) for ln in lines) <= 80, max(lines, key=width)
    assert lines[-1] == f"ok {n} rows"


@pytest.mark.parametrize(
    "check",
    [no_key, every_b_row_says_stale, compare_lays_no_loss_to_the_prompt, compare_page_opens_with_what_moved,
     overview_fits_80_columns],
    ids=lambda f: f.__name__,
)  # fmt: skip
def test_the_workbench_tells_the_truth(runs: dict[str, Any], check: Callable[[dict[str, Any]], None]) -> None:
    check(runs)


def test_a_narrow_overview_with_a_failing_row_says_so_on_its_last_line(tmp_path: Path) -> None:
    """A row below its baseline at 80 columns: FAILED first in the overview, exit 1, and a last line
    that says FAILED; every line within 80 cells."""
    from tests.paths import some_cases

    cases, baseline = some_cases(tmp_path, "2026-10-15-retrieval")
    committed = json.loads(baseline.read_text(encoding="utf-8"))
    committed["cases"]["2026-10-15-retrieval"]["increment_f1"]["score"] = 1.5
    baseline.write_text(json.dumps(committed), encoding="utf-8")
    env = {**os.environ, "PREDIGEST_LOGS_DB": "off", "COLUMNS": "80"}
    r = predigest("eval", "--cases", str(cases), "--baseline", str(baseline), env=env)
    lines = r.stdout.splitlines()
    rule = next(i for i, ln in enumerate(lines) if ln.startswith("──"))  # the title is folded: its path is long
    assert r.returncode == 1 and lines[rule + 1].startswith("FAILED  2026-10-15-retrieval"), r.stdout
    assert re.match(r"FAILED 1 of 2 rows: 2026-10-15-retrieval$", lines[-1]), lines[-1]
    assert max(width(ln) for ln in lines) <= 80, max(lines, key=width)
