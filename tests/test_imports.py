"""Inspection commands answer without importing openai or instructor (over a second of imports):
each runs in a fresh process, which then reports what it loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT, SEED, WORLD

PROBE = """
import sys
from agent.cli import main
sys.argv = ["predigest", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    code = e.code or 0
else:
    code = 0
heavy = sorted(m for m in ("openai", "instructor", "httpx2") if m in sys.modules)
print("LOADED:" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""
DAY = ["--topic", "inference", "--date", "2026-09-22"]


@pytest.mark.parametrize(
    "args",
    [
        ["inbox", str(WORLD), *DAY],
        ["anchors", str(WORLD), *DAY],
        ["parse", str(SEED), "--json"],
        ["prompt", "show", str(WORLD), *DAY, "--doc", "inbox/jay/2026-09-22-1050-jay-engineering-filter.md"],
        ["--help"],
    ],
    ids=["inbox", "anchors", "parse", "prompt-show", "help"],
)
def test_inspection_commands_do_not_import_the_llm_client(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "LOADED:\n" in done.stderr or done.stderr.rstrip().endswith("LOADED:"), done.stderr[-300:]
