"""Where the test data lives (resolved from this file, so tests run from any directory), and the CLI runner."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The seed briefing, kept in the repo as the first gold case: no test reads outside the repo.
SEED = ROOT / "eval" / "cases" / "2026-09-22-inference" / "gold.md"
WORLD = ROOT / "examples" / "world"


def predigest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the CLI through its real entry point, in a fresh process, from the repo root."""
    return subprocess.run(
        [sys.executable, "-c", "from agent.cli import main; main()", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
