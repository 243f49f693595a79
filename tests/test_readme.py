"""The README's commands are run as written (only `out/` is redirected): docs that cannot rot."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest

from tests.paths import ROOT, predigest

README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", README, flags=re.S)


def _demo_line() -> str:
    first = _blocks()[0].splitlines()[0]
    return first.split(".venv/bin/predigest ", 1)[1]


def _command_examples() -> list[str]:
    commands = README.split("## Commands", 1)[1]
    block = re.search(r"```bash\n(.*?)```", commands, flags=re.S)
    assert block is not None
    return [ln.split("#", 1)[0].strip().removeprefix("predigest ") for ln in block.group(1).splitlines() if ln.strip()]


def _args(line: str, tmp: Path) -> list[str]:
    return [str(tmp / "out") + "/" if a == "out/" else a for a in shlex.split(line)]


def test_the_first_command_is_the_demo_and_the_second_is_ci() -> None:
    first, second = _blocks()[0].splitlines()[:2]
    assert "run examples/world" in first and "--backend replay" in first
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert second in ci.splitlines()


def test_the_demo_command_runs(tmp_path: Path) -> None:
    r = predigest(*_args(_demo_line(), tmp_path))
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "2026-09-22-inference-e1prep.md").is_file()


@pytest.mark.parametrize("line", _command_examples())
def test_every_command_example_runs(line: str, tmp_path: Path) -> None:
    r = predigest(*_args(line, tmp_path))
    assert r.returncode == 0, f"{line}\n{r.stderr}"
    assert r.stdout.strip()


def test_the_quoted_eval_table_is_what_eval_markdown_prints() -> None:
    section = README.split("### Every row of `predigest eval`", 1)[1]
    quoted = [ln for ln in section.split("\n\n- ", 1)[0].splitlines() if ln.startswith("|")]
    r = predigest("eval", "--markdown", env={**os.environ, "PREDIGEST_LOGS_DB": "off"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert quoted == r.stdout.splitlines()
