"""A user's first week (issue #43): each reproduction of the newcomer's report is a row here.

Every row runs in a copy of the repository's examples and cassettes (`repo`), from a folder the
row chooses, so what it writes and the paths it is told stay in the test's own folder.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.extract.llm.cassettes import CassetteIndex, topics_of
from tests.paths import ROOT, WORLD, predigest

DAY = "2026-09-22"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The examples and their cassettes, laid out as in the repository."""
    root = tmp_path / "repo"
    for name in ("examples", "cassettes"):
        shutil.copytree(ROOT / name, root / name, symlinks=True)
    return root


def _lone_workspace(repo: Path) -> Path:
    """The demo workspace copied on its own, as a user copies it to start their own."""
    lone = repo.parent / "mine" / "world"
    shutil.copytree(repo / "examples" / "world", lone)
    return lone.parent


def _demo_ran(repo: Path) -> Path:
    """Tonight's briefing already in the inbox, as cron's first run left it."""
    r = predigest("run", "examples/world", "-t", "inference", "-d", DAY, "--backend", "replay", cwd=repo)
    assert r.returncode == 0, r.stderr
    return repo


def _demo_out(repo: Path) -> Path:
    """The README's demo line ran first: its briefing is in out/."""
    args = ("run", "examples/world", "--topic", "inference", "--date", DAY, "--out", "out/", "--force")
    r = predigest(*args, "--backend", "replay", cwd=repo)
    assert r.returncode == 0, r.stderr
    return repo


def _one_answer_gone(repo: Path) -> Path:
    """A document's answer missing from the demo's set: a partial evening, its 五 saying why."""
    for gone in (repo / "cassettes" / "world").glob("inbox-jay-2026-09-22-1050-jay-engineering-filter--*.json"):
        gone.unlink()
    return repo


def _llm_infra_unanswered(repo: Path) -> Path:
    """The overlap evening's folder without one topic's answers, as before anyone wrote them."""
    for c in CassetteIndex.load(repo / "cassettes" / "world-1021").all():
        if topics_of(c) == ("llm-infra",):
            c.path.unlink()
    return repo


def _at_repo(repo: Path) -> Path:
    return repo


def _elsewhere(repo: Path) -> Path:
    (repo / "examples" / "world").mkdir(exist_ok=True)
    return repo / "examples"


@dataclass(frozen=True)
class Row:
    args: tuple[str, ...]
    status: int
    said: tuple[str, ...] = ()  # in stdout + stderr
    not_said: tuple[str, ...] = ()
    where: Callable[[Path], Path] = _at_repo  # sets up the copy; returns the folder the command runs from
    briefing: str = ""  # a file the run writes (relative to the folder it runs from)
    in_briefing: tuple[str, ...] = ()
    not_in_briefing: tuple[str, ...] = ()


ROWS = {
    # 1. the offline all-topics example after the demo: the demo's unedited briefing is this evening's own
    "offline-all-topics-after-the-demo": Row(
        ("run", "examples/world", "--all-topics", "-d", DAY, "--backend", "offline", "--out", "out/"),
        0,
        where=_demo_out,
        briefing="out/2026-09-22-risk-e1prep.md",
    ),
    # 2. a copied workspace: its relative cassette folder does not exist there, and the fallback says so
    "copied-workspace-says-why-no-model-answers": Row(
        ("run", "world", "-t", "inference", "-d", DAY, "--out", "out/"),
        4,
        said=("does not exist", "[llm] cassettes in world/predigest.toml", "no OPENAI_API_KEY"),
        where=_lone_workspace,
    ),
    "copied-workspace-replay-names-the-setting": Row(
        ("run", "world", "-t", "inference", "-d", DAY, "--out", "out/", "--backend", "replay"),
        2,
        said=("cassette folder", "does not exist", "[llm] cassettes in world/predigest.toml"),
        where=_lone_workspace,
    ),
    # 3. every topic replays out of the box
    "all-topics-replay": Row(
        ("run", "examples/world", "--all-topics", "-d", DAY, "--backend", "replay", "--out", "out/"),
        0,
        briefing="out/2026-09-22-risk-e1prep.md",
    ),
    "a-topic-with-no-answers-is-said-once": Row(
        ("run", "examples/world-1021", "--all-topics", "-d", "2026-10-21", "--backend", "replay", "--out", "out/"),
        2,
        said=("every extraction for llm-infra failed (11 of 11)", "First: inbox/"),
        briefing="out/2026-10-21-agents-e1prep.md",  # the topics with answers are written
        where=_llm_infra_unanswered,
    ),
    # 4. cron: a re-run of the evening, and a quiet evening
    "cron-rerun-of-the-same-evening": Row(
        ("run", "examples/world", "-t", "inference", "-d", DAY, "--backend", "replay"),
        0,
        where=_demo_ran,
    ),
    "quiet-evening-writes-its-briefing": Row(
        ("run", "examples/world", "-t", "inference", "-d", "2026-09-24", "--backend", "replay", "--out", "out/"),
        0,
        not_said=("no model will answer",),
        briefing="out/2026-09-24-inference-e1prep.md",
        in_briefing=("今晚窗口内没有新文档", "2026-09-23 22:00 ~ 2026-09-24 22:00", "延续自 9-21"),
        not_in_briefing=("model gpt-4o-mini",),
    ),
    # 5. no machine path in a briefing: siblings written outside the workspace
    "siblings-outside-the-workspace": Row(
        ("run", "examples/world", "--all-topics", "-d", DAY, "--backend", "offline", "--out", "out/"),
        0,
        briefing="out/2026-09-22-inference-e1prep.md",
        in_briefing=("| inbox/tom | 2026-09-22-risk-e1prep.md",),
        not_in_briefing=("/repo/",),
    ),
    "partial-evening-names-no-machine-path": Row(
        ("run", "examples/world", "-t", "inference", "-d", DAY, "--backend", "replay", "--out", "out/"),
        3,
        where=_one_answer_gone,
        briefing="out/2026-09-22-inference-e1prep.md",
        in_briefing=(
            "未读取：no cassette for inbox/jay/2026-09-22-1050-jay-engineering-filter.md",
            "../../cassettes/world",
        ),
        not_in_briefing=("/repo/", " — pass"),
    ),
    # 6. hints that point the right way
    "topic-typo": Row(
        ("run", "examples/world", "-t", "inferance", "-d", DAY),
        2,
        said=("did you mean --topic inference", "examples/world/predigest.toml"),
        not_said=("[topics.inferance]",),
    ),
    "document-typo": Row(
        (
            "prompt",
            "show",
            "examples/world",
            "-t",
            "inference",
            "-d",
            DAY,
            "--doc",
            "inbox/jay/2026-09-22-1050-jay-engineering-fliter.md",
        ),
        2,
        said=("did you mean 'inbox/jay/2026-09-22-1050-jay-engineering-filter.md'",),
    ),
    "eval-from-another-folder": Row(
        ("eval",),
        2,
        said=("eval/cases: the cases folder does not exist", "--cases"),
        not_said=("pass --cases eval/cases",),
        where=_elsewhere,
    ),
    # 7. the offline extractor's text
    "offline-link-ends-where-the-link-ends": Row(
        ("run", "examples/world", "-t", "inference", "-d", "2026-09-23", "--backend", "offline", "--out", "out/"),
        0,
        briefing="out/2026-09-23-inference-e1prep.md",
        in_briefing=("github.com/vllm-project/vllm/releases\n", "归类：推理；"),
        not_in_briefing=("releases（22:05", "⭐⭐；", "归类：3 ·"),
    ),
    "offline-run-names-no-model-judgement": Row(
        ("run", "examples/world", "-t", "risk", "-d", DAY, "--backend", "offline", "--out", "out/", "--explain"),
        0,
        said=("offline extractor judged it covered",),
        not_said=("model judged", "the model said"),
    ),
}


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_a_first_week(row: Row, repo: Path) -> None:
    here = row.where(repo)
    r = predigest(*row.args, cwd=here, env={"PATH": "/usr/bin:/bin", "PREDIGEST_LOGS_DB": "off"})
    said = r.stdout + r.stderr
    assert r.returncode == row.status, said
    for text in row.said:
        assert text in said, said
    for text in row.not_said:
        assert text not in said, said
    if row.status == 2:
        assert sum(ln.startswith("error:") for ln in r.stderr.splitlines()) == 1, r.stderr  # said once, one line
    if row.briefing:
        md = (here / row.briefing).read_text(encoding="utf-8")
        for text in row.in_briefing:
            assert text in md, md
        for text in row.not_in_briefing:
            assert text not in md, md


@pytest.mark.parametrize(
    ("error", "said"),
    [
        pytest.param(
            "no cassette (request ab12) in /m/repo/cassettes/world: none — pass --cassettes X",
            "no cassette (request ab12) in ../../cassettes/world: none",
            id="a-folder-of-the-machine",
        ),
        pytest.param(
            "POST https://api.example.com/v1/chat/completions: 500",
            "POST https://api.example.com/v1/chat/completions: 500",
            id="a-url-stays",
        ),
        pytest.param("timed out after 3 attempts", "timed out after 3 attempts", id="no-path"),
    ],
)
def test_an_unread_reason_as_the_briefing_says_it(error: str, said: str) -> None:
    from agent.pipeline import said_in_briefing

    assert said_in_briefing(error, Path("/m/repo/examples/world")) == said


def test_a_copied_workspace_missing_another_topics_cassette_folder_still_replays_its_own(tmp_path: Path) -> None:
    """A copy whose first cassette folder was pointed back at the repository (as a user, or cron's
    set-up script, does for the topic it runs) replays that topic: the other topics' folders, gone
    in the copy, are no reason to stop a run that does not ask them."""
    ws = tmp_path / "w"
    shutil.copytree(WORLD, ws)
    toml = ws / "predigest.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(text.replace('"../../cassettes/', f'"{ROOT / "cassettes"}/', 1), encoding="utf-8")
    for _ in range(2):  # as cron runs it, twice into the inbox
        r = predigest("run", str(ws), "--topic", "inference", "--date", "2026-09-22", "--backend", "replay", "--force")
        assert r.returncode == 0, r.stderr
