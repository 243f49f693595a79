"""Every test is isolated from the user's real directories and from any live endpoint.

Two layers. For the whole session (set in `pytest_configure`, before any test module is
imported or any module- or session-scoped fixture runs), HOME and every XDG folder point into a
temporary home, so a fixture that runs before `_isolated`, a subprocess that inherits the
environment and a command given a fresh environment (tests/paths.py carries these variables
into it) all write there. Per test, `_isolated` gives each test folders of its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from tests.fake_openai import FakeOpenAI

HOME_VARS = ("HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
# settings a developer's shell may hold, which would send a test to a real endpoint, log or cache
FOREIGN = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
    "PREDIGEST_MODEL",
    "PREDIGEST_CACHE_DIR",
    "PREDIGEST_LOGS_DB",
)
_SESSION_HOME: dict[str, str] = {}

# How many examples the properties draw, one decision per profile (HYPOTHESIS_PROFILE, or
# pytest's --hypothesis-profile). Two properties draw a whole evening of answers or a whole briefing
# per example, and they alone would weigh on every run of the suite at their full counts: they ask
# for `examples(full)` (tests/paths.py), that count scaled by the profile's max_examples over
# Hypothesis' own default of 100. "suite", the default here, draws half of each, which every run can
# afford; Hypothesis' own "default" draws every one, for a change to the rules or to the parser and
# renderer. The cheaper properties name their counts outright, the same in both. ("suite" derives
# from "default" by name, so it is the same on every machine whatever profile Hypothesis would pick.)
settings.register_profile("suite", parent=settings.get_profile("default"), max_examples=50)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "suite")


def _demo_outputs() -> list[str]:
    """Files a demo run without `--out` left in the demo workspace's own inbox (as cron would):
    files git does not know there. The tests read and copy that workspace, and with tonight's
    briefing already in it, it is no longer the one they know. Without git, nothing is checked."""
    import subprocess

    from tests.paths import ROOT

    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "--others", "--exclude-standard", "examples/world/inbox"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [] if done.returncode else sorted(Path(line).name for line in done.stdout.splitlines() if line)


def pytest_configure(config: pytest.Config) -> None:
    if left := _demo_outputs():
        pytest.exit(
            f"examples/world/inbox/tom holds a demo run's own outputs ({', '.join(left)}): delete them "
            "(or `git clean -n examples/` to see them) and run the demo with --out, as the README does",
            returncode=2,
        )
    home = tempfile.mkdtemp(prefix="predigest-test-home-")
    _SESSION_HOME["root"] = home
    os.environ["HOME"] = home
    for var in HOME_VARS[1:]:
        os.environ[var] = os.path.join(home, var.lower())
    for var in FOREIGN:
        os.environ.pop(var, None)


def pytest_unconfigure(config: pytest.Config) -> None:
    if root := _SESSION_HOME.pop("root", ""):
        shutil.rmtree(root, ignore_errors=True)


def session_home() -> str:
    """The temporary home every test and subprocess of this session writes under."""
    return _SESSION_HOME["root"]


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    for var in FOREIGN:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """An OpenAI-compatible server on 127.0.0.1 for the test, stopped after it."""
    with FakeOpenAI() as fake:
        yield fake
