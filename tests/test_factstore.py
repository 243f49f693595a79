"""A live run keeps each document's facts beside its answers; the next run reads them back
instead of computing them, and anything it cannot trust (other code, a damaged entry) is
computed again. The briefing is the same every time."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import diskcache
import pytest

from agent import factstore, factworker, rules
from agent.pipeline import Settings, run
from tests.fake_openai import FAKE_KEY, FakeOpenAI, world_answers, world_responder
from tests.paths import WORLD

DATE = dt.date(2026, 9, 22)


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(default=world_responder(world_answers())) as s:
        yield s


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts whose facts were computed (rather than read back) during a test."""
    texts: list[str] = []
    real = factworker.facts
    monkeypatch.setattr(factworker, "facts", lambda t: texts.append(t) or real(t))
    return texts


def _run(server: FakeOpenAI, tmp_path: Path, computed: list[str], name: str, **kw: object) -> tuple[str, int]:
    """One live run as a new process would start it (nothing in memory); its briefing and how
    many documents' facts it computed."""
    rules.forget_document_facts()
    settings = Settings(
        workspace=WORLD,
        topic="inference",
        date=DATE,
        out=tmp_path / f"{name}.md",
        backend="live",
        api_key=FAKE_KEY,
        base_url=server.base_url,
        cache_dir=tmp_path / "cache",
        **kw,  # type: ignore[arg-type]
    )
    report = run(settings)
    documents = {d.text for d in report.evening.sources}
    n = len(documents & set(computed))
    computed.clear()
    return report.outcome.markdown, n


def test_a_rerun_reads_every_documents_facts_back(server: FakeOpenAI, tmp_path: Path, computed: list[str]) -> None:
    first, n_first = _run(server, tmp_path, computed, "first")
    assert n_first > 0
    second, n_second = _run(server, tmp_path, computed, "second")
    assert (second, n_second) == (first, 0)


def test_other_code_is_a_miss(
    server: FakeOpenAI, tmp_path: Path, computed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    first, n_first = _run(server, tmp_path, computed, "first")
    monkeypatch.setattr(factstore, "code_version", lambda: "changed-code")
    second, n_second = _run(server, tmp_path, computed, "second")
    assert (second, n_second) == (first, n_first)


@pytest.mark.parametrize(
    "damage",
    [("x", "y"), (["2026"], [3]), None, ["a", "b"], ("only one",)],
    ids=["strings", "not-strings", "none", "a-list", "one-item"],
)
def test_a_damaged_entry_is_computed_again(
    server: FakeOpenAI, tmp_path: Path, computed: list[str], damage: object
) -> None:
    first, n_first = _run(server, tmp_path, computed, "first")
    with diskcache.Cache(str(tmp_path / "cache")) as cache:
        keys = [k for k in cache.iterkeys() if str(k).startswith("facts:")]
        assert len(keys) == n_first
        for k in keys:
            cache.set(k, damage)
    second, n_second = _run(server, tmp_path, computed, "second")
    assert (second, n_second) == (first, n_first)


def test_without_a_cache_nothing_is_kept(server: FakeOpenAI, tmp_path: Path, computed: list[str]) -> None:
    first, n_first = _run(server, tmp_path, computed, "first", no_cache=True)
    second, n_second = _run(server, tmp_path, computed, "second", no_cache=True)
    assert (second, n_second) == (first, n_first) and n_first > 0
    assert not (tmp_path / "cache").exists()


class _CountingCache(dict):  # type: ignore[type-arg]
    """The two calls the store makes on a diskcache, counted."""

    def __init__(self) -> None:
        super().__init__()
        self.gets = 0
        self.sets = 0

    def get(self, key: object, default: object = None) -> object:  # type: ignore[override]
        self.gets += 1
        return super().get(key, default)

    def set(self, key: object, value: object) -> None:
        self.sets += 1
        self[key] = value


def test_each_document_is_looked_up_once_and_kept_once() -> None:
    """`start` looks every document up; `prepare` neither looks a missing one up again nor
    hashes it again, and keeps it once. The next run reads each back with one look-up."""
    texts = [f"document {i}: 1.{i} 倍, 2401.0000{i}" for i in range(5)]
    cache = _CountingCache()
    for gets, sets in ((5, 5), (5, 0)):
        rules.forget_document_facts()
        cache.gets = cache.sets = 0
        store = factstore.FactStore(cache, worker_from=10**9)  # type: ignore[arg-type]
        store.start(texts)
        assert all(store.prepare(t) for t in texts)
        assert (cache.gets, cache.sets) == (gets, sets)
        assert all(rules.document_facts(t) == factworker.derive(t) for t in texts)
