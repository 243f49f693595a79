"""A regular install works, not only the editable one: the wheel carries the prompts and templates.

The wheel is built from a copy of the project's files, installed with pip (no index, no network)
into a fresh virtual environment that borrows only the dependencies of the test environment, and
the installed `predigest` runs the replayed demo from another folder.
"""

from __future__ import annotations

import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.paths import ROOT, WORLD

SHIPPED = ("agent", "schemas", "eval", "prompts")


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)


def test_the_wheel_installs_and_runs_the_demo_from_elsewhere(tmp_path: Path) -> None:
    src = tmp_path / "src"
    for name in SHIPPED:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "cases"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    dist = tmp_path / "dist"
    offline = ["--no-index", "--disable-pip-version-check"]  # pip asks no index, not even for its own version
    built = _run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", *offline, "-w", str(dist)], src
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("predigest-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "prompts/extract.md" in names and "agent/templates/briefing.html.j2" in names

    venv = tmp_path / "venv"
    # no pip of its own: the test environment's pip installs into it (`--python`)
    assert _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path).returncode == 0
    py = venv / "bin" / "python"
    # the dependencies come from the test environment; predigest itself only from the wheel
    purelib = _run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp_path).stdout.strip()
    deps = [p for p in site.getsitepackages() if Path(p).is_dir()]
    (Path(purelib) / "test_deps.pth").write_text("\n".join(deps) + "\n", encoding="utf-8")
    pip = [sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps", *offline]
    installed = _run([*pip, str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stderr

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = elsewhere / "out"
    cmd = [str(venv / "bin" / "predigest"), "run", str(WORLD), "-t", "inference", "-d", "2026-09-22"]
    r = _run([*cmd, "--backend", "replay", "--out", f"{out}/", "--no-cache"], elsewhere)
    assert r.returncode == 0, r.stdout + r.stderr
    where = _run([str(py), "-c", "import agent; print(agent.__file__)"], elsewhere).stdout
    assert str(ROOT) not in where and str(venv) in where  # the run used the installed copy
    briefing = (out / "2026-09-22-inference-e1prep.md").read_text(encoding="utf-8")
    assert "二、增量条目" in briefing and "prompt extract@" in briefing
