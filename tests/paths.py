"""Where the test data lives (resolved from this file, so tests run from any directory), and the CLI runner."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from hypothesis import settings

from agent.cli import main
from agent.rules.claims import Candidate, ClaimRef
from schemas.documents import SourceDoc
from schemas.extraction import Claim

ROOT = Path(__file__).resolve().parent.parent
# The seed briefing, kept in the repo as the first gold case: no test reads outside the repo.
SEED = ROOT / "eval" / "cases" / "2026-09-22-inference" / "gold.md"
WORLD = ROOT / "examples" / "world"


def predigest(*args: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run the CLI through its real entry point (`agent.cli.main`: options, errors, exit status),
    in this process, from the repo root (or `cwd`), with `env` as the whole environment when given — but
    for the test session's HOME and XDG folders (tests/conftest.py), unless `env` names them: with
    no HOME, the user's real one is found from the password database. One smoke test runs the
    installed console script in a subprocess (tests/test_cli.py)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        if env is not None:
            home = {k: v for k, v in os.environ.items() if k == "HOME" or k.startswith("XDG_")}
            os.environ.clear()
            os.environ.update({**home, **env})
        os.chdir(cwd)
        with redirect_stdout(stdout), redirect_stderr(stderr):
            try:
                main(list(args))
                code = 0
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(list(args), code, stdout.getvalue(), stderr.getvalue())


def copy_world(dest: Path) -> Path:
    """A copy of the demo workspace whose cassette folders still resolve (they are named relative to it)."""
    shutil.copytree(WORLD, dest, symlinks=True)
    toml = dest / "predigest.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('"../../cassettes/', f'"{ROOT / "cassettes"}/'), encoding="utf-8"
    )
    return dest


def examples(full: int) -> int:
    """The examples a costly property draws under the loaded Hypothesis profile: `full` under
    Hypothesis' "default", the profile's share of it otherwise (tests/conftest.py)."""
    return full * settings.default.max_examples // 100


def candidate(claim: Claim, doc: SourceDoc, order: int, relevance: str, **kw: Any) -> Candidate:
    """A claim on its way through the rules, its reference made from its document and order."""
    return Candidate(claim, doc, ClaimRef(doc.path, order), order, relevance, **kw)


def some_cases(tmp_path: Path, *names: str) -> tuple[Path, Path]:
    """A cases folder holding the committed eval cases `names` (their paths written absolute, as
    the repository reads them), and their rows' committed baseline: an eval of a few rows."""
    cases = tmp_path / "cases"
    for name in names:
        shutil.copytree(ROOT / "eval" / "cases" / name, cases / name)
        toml = cases / name / "case.toml"
        text = toml.read_text(encoding="utf-8")
        toml.write_text(text.replace('"examples/', f'"{ROOT}/examples/').replace('"cassettes/', f'"{ROOT}/cassettes/'))
    committed = json.loads((ROOT / "eval" / "baseline.json").read_text(encoding="utf-8"))
    rows = {k: v for k, v in committed["cases"].items() if k.split(" · ")[0].split("@")[0] in names}
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({**committed, "cases": rows}, ensure_ascii=False), encoding="utf-8")
    return cases, baseline
