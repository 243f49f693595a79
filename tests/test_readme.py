"""The README's commands, and those of docs/, are run as written: docs that cannot rot.

Every `bash` block of README.md and then of docs/*.md runs, line by line in order, and then all of
them again, in a fresh copy of the repository (its tracked files, committed in a repository of its
own); afterwards `git status` there must be clean: no tracked file changed, no file left outside the
ignored `out/`. The first block's `python3 -m venv … pip install … &&` prefix is the one part not run:
the copy's `.venv/bin` is this interpreter's, and the test command (CI's, `.ci/run`) is not run
inside the suite it starts. Blocks that need a key or minutes of CPU are fenced `sh` and say so.
"""

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


def test_the_quoted_eval_table_is_what_eval_markdown_prints() -> None:
    section = (ROOT / "docs" / "eval.md").read_text(encoding="utf-8").split("### Every row of `predigest eval`", 1)[1]
    quoted = [ln for ln in section.split("\n\n- ", 1)[0].splitlines() if ln.startswith("|")]
    r = predigest("eval", "--markdown", env={**os.environ, "PREDIGEST_LOGS_DB": "off"})
    assert r.returncode == 0, r.stdout + r.stderr
    assert quoted == r.stdout.splitlines()


def _workspace_comment_line() -> str:
    """The demo's own instructions, in the first lines of examples/world/predigest.toml."""
    head = (ROOT / "examples" / "world" / "predigest.toml").read_text(encoding="utf-8").splitlines()[:5]
    return next(ln for ln in head if "predigest run" in ln).split("predigest ", 1)[1]


def _repo_copy(tmp: Path) -> Path:
    """What `predigest eval` reads of the demo world (its cases, the workspaces and cassettes), in a
    folder of its own: a run into examples/world can only move the cases of that workspace."""
    import shutil

    repo = tmp / "repo"
    for name in ("examples", "cassettes"):
        shutil.copytree(ROOT / name, repo / name, symlinks=True)
    for case in (ROOT / "eval" / "cases").iterdir():
        if 'workspace = "examples/world"' in (case / "case.toml").read_text(encoding="utf-8"):
            shutil.copytree(case, repo / "eval" / "cases" / case.name)
    for name in ("pyproject.toml", "eval/baseline.json"):
        shutil.copy(ROOT / name, repo / name)
    return repo


@pytest.mark.parametrize("with_out", [True, False], ids=["as-written", "without-out"])
def test_the_workspace_demo_line_leaves_every_eval_case_passing(with_out: bool, tmp_path: Path) -> None:
    """The demo written as the workspace says, or with `--out` left off (the briefing then lands
    in the workspace's inbox, as cron's would): either way the repository's cases still pass."""
    line = _workspace_comment_line()
    assert "--out out/" in line, line  # the demo's outputs stay out of the workspace
    if not with_out:
        line = line.replace(" --out out/", "")
    repo = _repo_copy(tmp_path)
    args = [str(repo / a) if a == "examples/world" else a for a in _args(line, tmp_path)]
    r = predigest(*args, "--backend", "replay")
    assert r.returncode == 0, r.stderr
    written = repo / "examples/world/inbox/tom/2026-09-22-inference-e1prep.md"
    assert written.exists() != with_out
    cases = predigest("eval", "--cases", str(repo / "eval/cases"), "--baseline", str(repo / "eval/baseline.json"))
    assert cases.returncode == 0, cases.stdout + cases.stderr


SETUP = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = re.compile(r"&&|\|\||[|;<>$`]")  # a line bash must run; others go to the entry point itself


def _lines(doc: Path) -> list[str]:
    """Every command line of the document's `bash` blocks, in order, as bash would run them."""
    ci = _blocks()[0].splitlines()[1]
    blocks = re.findall(r"```bash\n(.*?)```", doc.read_text(encoding="utf-8"), flags=re.S)
    return [ln.removeprefix(SETUP) for b in blocks for ln in b.splitlines() if ln.strip() and ln != ci]


def _fresh_copy(tmp: Path) -> Path:
    """The repository's files as a clone has them (tracked, or new and not ignored), in a git
    repository of their own, with this interpreter's scripts as its `.venv/bin`."""
    import shutil
    import subprocess
    import sys

    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    copy = tmp / "clone"
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name, follow_symlinks=False)
    git = ["git", "-C", str(copy), "-c", "user.name=readme", "-c", "user.email=readme@localhost"]
    for step in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "fresh copy"]):
        subprocess.run(git + step, check=True, capture_output=True)
    (copy / ".venv").mkdir()
    (copy / ".venv" / "bin").symlink_to(Path(sys.executable).parent)
    return copy


def _run(line: str, copy: Path) -> tuple[int, str]:
    """One line, verbatim: through bash when it uses the shell, else through the CLI's entry point
    in this process (`agent.cli.main`, what `predigest` and `.venv/bin/predigest` run)."""
    import subprocess
    import sys

    words = shlex.split(line, comments=True)
    if SHELL.search(line.split("#", 1)[0]) or Path(words[0]).name != "predigest":
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}"}
        done = subprocess.run(["bash", "-c", line], cwd=copy, env=env, capture_output=True, text=True)
    else:
        done = predigest(*words[1:], cwd=copy)
    return done.returncode, (done.stdout + done.stderr)[-3000:]


@pytest.mark.parametrize("doc", [d for d in DOCS if _lines(d)], ids=lambda d: d.name)
def test_every_command_block_runs_twice_in_a_fresh_copy_and_leaves_it_clean(doc: Path, tmp_path: Path) -> None:
    import subprocess

    copy = _fresh_copy(tmp_path)
    for round_ in (1, 2):
        for line in _lines(doc):
            status, said = _run(line, copy)
            assert status == 0, f"round {round_}: {line}\n{said}"
    status = subprocess.run(["git", "-C", str(copy), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == "", status.stdout


def test_the_readme_is_a_five_minute_read() -> None:
    """At most 150 lines, and every page of docs/ it sends the reader to is there and linked."""
    assert len(README.splitlines()) <= 150
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in README, page.name
    for target in re.findall(r"\]\((docs/[^)#]+)", README):
        assert (ROOT / target).is_file(), target
