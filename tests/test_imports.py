"""Inspection commands answer without importing what they do not use: never openai or instructor
(over a second of imports), and not rich, the extraction models or platformdirs where the command
has no use for them (a user waits for every import of a short command). Each runs in a fresh
process, which then reports what it loaded."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT, SEED, WORLD

WATCHED = ("openai", "instructor", "httpx2", "rich", "schemas.extraction", "platformdirs")
PROBE = f"""
import sys
from agent.cli import main
sys.argv = ["predigest", *sys.argv[1:]]
try:
    main()
except SystemExit as e:
    code = e.code or 0
else:
    code = 0
print("LOADED:" + ",".join(m for m in {WATCHED!r} if m in sys.modules), file=sys.stderr)
sys.exit(code)
"""
DAY = ["--topic", "inference", "--date", "2026-09-22"]
LLM = {"openai", "instructor", "httpx2"}


@pytest.mark.parametrize(
    ("args", "not_loaded"),
    [
        (["inbox", str(WORLD), *DAY], LLM | {"rich", "schemas.extraction"}),
        (["anchors", str(WORLD), *DAY], LLM | {"rich", "schemas.extraction"}),
        (["inbox", str(WORLD), *DAY, "--json"], LLM | {"rich", "schemas.extraction"}),
        (["parse", str(SEED), "--json"], LLM | {"rich", "schemas.extraction", "platformdirs"}),
        (["prompt", "show", str(WORLD), *DAY, "--doc", "inbox/jay/2026-09-22-1050-jay-engineering-filter.md"], LLM),
        (["--help"], LLM | {"rich", "schemas.extraction", "platformdirs"}),
    ],
    ids=["inbox", "anchors", "inbox-json", "parse-json", "prompt-show", "help"],
)
def test_inspection_commands_import_only_what_they_use(args: list[str], not_loaded: set[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded = set(done.stderr.rstrip().rpartition("LOADED:")[2].split(",")) - {""}
    assert not loaded & not_loaded, f"{' '.join(args[:1])} imported {sorted(loaded & not_loaded)}"
