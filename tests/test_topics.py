"""Several topics of one evening in one run (`--all-topics`, `--topic` several times): the same
briefings as one run per topic, but for 一 listing the others; everything checked before the
first call; one budget for the evening. The demo evening, through the real CLI entry point."""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from pathlib import Path

import pytest

import agent.pipeline as pipeline
import agent.rules.grounding as grounding
from agent.core.labels import ZH
from agent.core.settings import Settings
from tests.fake_openai import FAKE_KEY, FakeOpenAI, world_answers, world_responder
from tests.paths import ROOT, WORLD, predigest

TOPICS = ("inference", "llm-infra", "risk")
DAY = "2026-09-22"
# which committed cassette set answers which topic of the demo evening (eval/cases/2026-09-22-*/case.toml)
CASSETTES = {"inference": "world", "llm-infra": "world-llm-infra", "risk": "world-risk"}


def _name(topic: str) -> str:
    return f"{DAY}-{topic}-e1prep.md"


def _split(md: str) -> tuple[str, list[str], str]:
    """(what comes before 一, the rows of 一, what comes after it)."""
    head, rest = md.split(f"{ZH.sources}\n", 1)
    table, tail = rest.split(f"{ZH.increments}\n", 1)
    return head, table.splitlines(), tail


def _backend_args(backend: str, tmp: Path) -> list[str]:
    """Offline, or replay from one folder holding the three topics' cassette sets (copies: no
    two of them answer the same request, since each request names its topic)."""
    if backend == "offline":
        return ["--backend", "offline"]
    union = tmp / "cassettes"
    for name in CASSETTES.values():
        shutil.copytree(ROOT / "cassettes" / name, union / name)
    return ["--backend", "replay", "--no-cache", "--cassettes", str(union)]


@pytest.mark.parametrize("backend", ["offline", "replay"])
def test_one_run_writes_what_three_runs_write_but_for_the_siblings_in_one(backend: str, tmp_path: Path) -> None:
    args = _backend_args(backend, tmp_path)
    together = predigest("run", str(WORLD), "--all-topics", "-d", DAY, "--out", f"{tmp_path / 'all'}/", *args)
    assert together.returncode == 0, together.stderr
    assert [ln.split(":", 1)[0] for ln in together.stdout.splitlines() if ln.startswith(TOPICS)] == list(TOPICS)
    composing = 3 if backend == "replay" else 0  # each topic's composing call; offline, no model composes
    assert f"topics 3 · calls {14 + 13 + 13 + composing}" in together.stdout.splitlines()[-1]
    for topic in TOPICS:
        alone = predigest("run", str(WORLD), "-t", topic, "-d", DAY, "--out", f"{tmp_path / 'one'}/", *args)
        assert alone.returncode == 0, alone.stderr
        one = (tmp_path / "one" / _name(topic)).read_text(encoding="utf-8")
        both = (tmp_path / "all" / _name(topic)).read_text(encoding="utf-8")
        (head1, rows1, tail1), (head3, rows3, tail3) = _split(one), _split(both)
        assert (head3, tail3) == (head1, tail1), f"{topic}: only 一 may differ"
        added = [r for r in rows3 if r not in rows1]
        assert [r for r in rows3 if r in rows1] == rows1, f"{topic}: every row of the single run, in its order"
        others = [t for t in TOPICS if t != topic]
        assert [r.split(" | ")[1].split("（", 1)[0] for r in added] == [_name(t) for t in others]
        assert all(r.endswith(f"| {ZH.adjacent_level} |") and "本次运行同晚" in r for r in added)
        after = 1 + max(i for i, r in enumerate(rows1) if r.endswith(f"| {ZH.adjacent_level} |"))
        assert rows3 == [*rows1[:after], *added, *rows1[after:]], f"{topic}: listed after the adjacent briefings"


def test_a_run_into_the_inbox_reads_none_of_its_own_siblings(tmp_path: Path) -> None:
    """A second evening run into the inbox would otherwise read the first's other-topic briefings
    as adjacent documents (and extract them) while listing the new ones beside them."""
    ws = tmp_path / "world"
    shutil.copytree(WORLD, ws)
    first = predigest("run", str(ws), "--all-topics", "-d", DAY, "--backend", "offline")
    assert first.returncode == 0, first.stderr
    written = {t: (ws / "inbox" / "tom" / _name(t)).read_text(encoding="utf-8") for t in TOPICS}
    again = predigest("run", str(ws), "--all-topics", "-d", DAY, "--backend", "offline", "--force")
    assert again.returncode == 0, again.stderr
    assert {t: (ws / "inbox" / "tom" / _name(t)).read_text(encoding="utf-8") for t in TOPICS} == written
    assert "calls 40" in again.stdout.splitlines()[-1]


def _no_living(ws: Path, out: Path) -> list[str]:
    (ws / "living" / "risk.md").unlink()
    return ["--all-topics"]


def _page_in_the_way(ws: Path, out: Path) -> list[str]:
    (out / _name("risk")).mkdir(parents=True)
    return ["--all-topics"]


def _briefing_there(ws: Path, out: Path) -> list[str]:
    out.mkdir()
    shutil.copy(WORLD / "inbox" / "flyp" / "2026-09-21-risk-e1prep.md", out / _name("risk"))
    return ["-t", "inference", "-t", "risk"]


@pytest.mark.parametrize(
    ("case", "setup", "said"),
    [
        ("an unknown topic", lambda ws, out: ["-t", "inference", "-t", "nope"], "topic 'nope' is not in"),
        ("a missing living document", _no_living, "living document"),
        ("a folder where a topic's briefing goes", _page_in_the_way, "is a folder"),
        ("a topic's briefing already there", _briefing_there, "already exists"),
        ("both selections", lambda ws, out: ["--all-topics", "-t", "risk"], "both given"),
        ("no selection", lambda ws, out: [], "no topic given"),
    ],
)
def test_a_bad_topic_of_several_stops_the_run_before_any_call(
    case: str, setup: object, said: str, tmp_path: Path
) -> None:
    ws, out = tmp_path / "world", tmp_path / "out"
    shutil.copytree(WORLD, ws)
    selection = setup(ws, out)  # type: ignore[operator]
    before = sorted(p.name for p in out.rglob("*")) if out.exists() else []
    with FakeOpenAI(default=world_responder(world_answers())) as server:
        env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.base_url}
        r = predigest("run", str(ws), *selection, "-d", DAY, "--out", f"{out}/", "--backend", "live", env=env)
        assert server.count == 0, case
    assert r.returncode == 2, f"{case}: {r.stdout}{r.stderr}"
    assert len(r.stderr.strip().splitlines()) == 1 and said in r.stderr, case
    assert (sorted(p.name for p in out.rglob("*")) if out.exists() else []) == before, case


def test_max_calls_bounds_the_evening_not_each_topic(tmp_path: Path) -> None:
    with FakeOpenAI(default=world_responder(world_answers())) as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": server.base_url,
            "PREDIGEST_CACHE_DIR": str(tmp_path / "cache"),
        }
        r = predigest(
            "run", str(WORLD), "--all-topics", "-d", DAY, "--out", f"{tmp_path}/", "--backend", "live",
            "--max-calls", "30", "--concurrency", "1", env=env,
        )  # fmt: skip
        assert server.count == 30
    assert r.returncode == 3, r.stderr  # the topic the budget cut short is partial: the worst status
    lines = {ln.split(":", 1)[0]: ln for ln in r.stdout.splitlines() if ln.startswith(TOPICS)}
    assert lines["inference"].endswith("exit 0") and lines["llm-infra"].endswith("exit 0")
    assert lines["risk"].endswith("exit 3") and r.stdout.splitlines()[-1].endswith("exit 3")
    assert all((tmp_path / _name(t)).is_file() for t in TOPICS)


@pytest.mark.parametrize(
    "command",
    [
        ["inbox"],
        ["anchors"],
        ["prompt", "show", "--doc", "inbox/jay/2026-09-22-1050-jay-engineering-filter.md"],
    ],
)
def test_the_inspection_commands_take_the_same_selection(command: list[str]) -> None:
    every = predigest(*command, str(WORLD), "--all-topics", "-d", DAY, "--json")
    assert every.returncode == 0, every.stderr
    by_topic = json.loads(every.stdout)
    assert list(by_topic) == list(TOPICS)
    for topic in TOPICS:
        alone = predigest(*command, str(WORLD), "-t", topic, "-d", DAY, "--json")
        assert alone.returncode == 0, alone.stderr
        assert by_topic[topic] == json.loads(alone.stdout), f"{command[0]} {topic}"
    two = predigest(*command, str(WORLD), "-t", "risk", "-t", "inference", "-d", DAY)
    assert two.returncode == 0, two.stderr
    heads = [ln.removeprefix("# topic ").split(" ", 1)[0] for ln in two.stdout.splitlines()]
    assert [h for h in heads if h in TOPICS][:1] == ["risk"] and "inference" in heads, "per topic, as given"


def test_a_document_every_topic_reads_is_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its facts, arXiv keys and folded text are a function of its text: one run of three topics
    computes each once per document (screening, grounding, settled items, 四 and the trace share
    them), not once per topic or per rule."""
    computed = Counter[tuple[str, str]]()

    def counting(name: str) -> None:
        real = getattr(grounding, name)

        def counted(text: str) -> object:
            computed[name, text] += 1
            return real(text)

        monkeypatch.setattr(grounding, name, counted)

    for name in ("facts", "id_keys", "fold_map"):
        counting(name)
    s = Settings(workspace=WORLD, topic=TOPICS[0], date=DAY, out=tmp_path, llm={"backend": "offline"})
    report = pipeline.run_topics(s, list(TOPICS))
    sources = {d.text for rep in report.reports for d in rep.evening.sources}
    of_documents = {key: n for key, n in computed.items() if key[1] in sources}
    assert len(report.reports) == 3 and {name for name, _ in of_documents} == {"facts", "id_keys", "fold_map"}
    assert set(of_documents.values()) == {1}
