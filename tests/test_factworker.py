"""The facts worker derives on another core exactly what this process would, and a worker that
cannot start, dies, talks nonsense or is still busy only means the facts are derived here: the
facts, and so the briefing, are the same."""

from __future__ import annotations

import datetime as dt
import os
import stat
import sys
from pathlib import Path

import pytest

from agent import factstore, factworker, rules
from agent.factstore import FactStore
from agent.factworker import FactWorker, derive
from agent.pipeline import Settings, run
from tests.paths import WORLD

DATE = dt.date(2026, 9, 22)


def _texts() -> list[str]:
    """A few awkward texts (none stating a fact first, then empty, escapes, astral, a lone
    surrogate) and the demo's documents."""
    docs = [p.read_text(encoding="utf-8") for p in sorted(WORLD.rglob("*.md"))]
    awkward = ["line\nbreaks \\ \"quotes\" \u2028 🙂 1.5 倍, 2401.00001v2", "a lone surrogate \ud800 in 2026"]
    return ["no facts at all", "", *awkward, *docs]


def test_the_worker_derives_what_this_process_derives() -> None:
    """It runs with -S, without site-packages: this fails if it ever imports beyond the stdlib."""
    texts = _texts()
    assert derive(texts[0]) == (frozenset(), frozenset())  # what the stopping worker below answers
    worker = FactWorker(texts)
    try:
        assert [worker.get(t) for t in texts] == [derive(t) for t in texts]
        assert worker.get("a text it was never sent") is None
        assert not worker.pending(texts[0])
        if Path(f"/proc/{worker._proc.pid}/stat").exists():  # Linux: it runs below this process
            nice = int(Path(f"/proc/{worker._proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[16])
            assert nice == min(19, os.nice(0) + 10)
    finally:
        worker.close()
    assert worker._proc.poll() is not None  # reaped


def _script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize(
    ("interpreter", "body"),
    [
        ("missing", ""),
        ("script", "exit 1"),  # dies at once
        ("script", "cat > /dev/null; echo '{\"not\": \"facts\"}'"),  # says something else
        ("script", 'read line; echo \'[["1.5"], [3]]\''),  # says facts of the wrong shape
        ("script", "read line; echo '[[], []]'; exit 0"),  # answers the first text (no facts), then stops
        ("script", "exec sleep 30"),  # still busy when the run ends: killed, not waited for
    ],
    ids=["no-interpreter", "dies", "nonsense", "wrong-shape", "stops-early", "busy"],
)
def test_whatever_the_worker_does_the_facts_are_derived(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interpreter: str, body: str
) -> None:
    exe = str(tmp_path / "no-such-python") if interpreter == "missing" else _script(tmp_path, body)
    monkeypatch.setattr(sys, "executable", exe)
    monkeypatch.setattr(factworker, "spare_cores", lambda: 1)
    texts = _texts()
    rules.forget_document_facts()
    store = FactStore(None, worker_from=1)
    store.start(texts)
    try:
        if body == "exec sleep 30":
            assert store.prepare(texts[0], wait=False) is False  # left to the worker for now
            store.close()  # the run ends: the worker is stopped
        for t in texts:
            assert store.prepare(t) is True
            assert rules.document_facts(t) == derive(t)
    finally:
        store.close()


def test_a_small_evening_or_a_single_core_starts_no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[int] = []
    monkeypatch.setattr(factstore, "FactWorker", lambda texts: started.append(len(texts)))
    texts = [f"document {i}: 1.{i} 倍" for i in range(10)]
    FactStore(None, worker_from=11).start(texts)
    monkeypatch.setattr(factstore, "spare_cores", lambda: 0)
    FactStore(None, worker_from=1).start(texts)
    assert started == []
    monkeypatch.setattr(factstore, "spare_cores", lambda: 1)
    FactStore(None, worker_from=10).start([*texts, texts[0]])  # each text once
    assert started == [10]


def test_a_run_with_the_worker_writes_the_same_briefing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo evening, offline, with every document's facts from the worker and with none."""
    started: list[int] = []
    real = factstore.FactWorker

    def counted(texts: list[str]) -> FactWorker:
        started.append(len(texts))
        return real(texts)

    monkeypatch.setattr(factstore, "FactWorker", counted)
    monkeypatch.setattr(factstore, "spare_cores", lambda: 1)
    briefings = []
    for worker_from in (1, 10_000):
        monkeypatch.setattr(factstore, "WORKER_FROM", worker_from)
        rules.forget_document_facts()
        settings = Settings(
            workspace=WORLD, topic="inference", date=DATE, out=tmp_path / f"{worker_from}.md", backend="offline"
        )
        briefings.append(run(settings).outcome.markdown)
    assert len(started) == 1 and started[0] > 0
    assert briefings[0] == briefings[1]
