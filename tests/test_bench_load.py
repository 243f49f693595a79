"""`python -m benchmarks.bench` end to end on a tiny evening: every call is answered over HTTP, the
warm re-run sends nothing, and the summary has a figure for each target; and its `--span` row on a
tiny span: every evening answered, written and patched. The benchmark runs each row in a child
process; here one row does, the warm re-run, so that what it is served comes from the cache on disk
alone and not from anything the live row left in memory. The others run in the test's own process:
a fresh process pays for its imports, which measure nothing here. Nothing here judges a time: speed
is the benchmark's job, on a quiet machine."""

from __future__ import annotations

import tempfile
import time
from typing import Any

import pytest

from benchmarks import bench
from benchmarks.bench import SPAN_TARGET, TARGETS, live_row, measure, measure_span, measure_topics
from benchmarks.endpoint import Endpoint
from benchmarks.evening import span_dates
from tests.paths import predigest


def _row_here(endpoint: Endpoint, spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """`bench.live_row` with the row run in this process — but for the warm re-run (a cache and no
    first evening), which runs in its child process as the benchmark runs every row."""
    return live_row(endpoint, spec, env, child=bool(spec.get("cache_dir") and not spec.get("first")))


def _demo_here(env: dict[str, str]) -> float:
    """`bench.demo_seconds` in this process: the replayed demo through the CLI's entry point."""
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="predigest-demo-") as out:
        done = predigest(*bench.demo_args(out), env=env | {"OPENAI_API_KEY": ""})
    done.check_returncode()
    return time.perf_counter() - t


@pytest.fixture
def rows_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmark's functions that start a child process replaced, for this test only; nothing
    else that starts a process is touched."""
    monkeypatch.setattr(bench, "live_row", _row_here)
    monkeypatch.setattr(bench, "demo_seconds", _demo_here)


@pytest.mark.usefixtures("rows_here")
def test_the_benchmark_runs_every_row_and_reports_every_target() -> None:
    result = measure(docs=10, concurrency=2, latency_ms=20, history=3, repeat=1)
    rows = result["rows"]
    assert set(rows) == {"live", "warm", "grown"}
    for key, row in rows.items():
        assert row["documents"] == 10 and row["errors"] == 0, key
    for key in ("live", "grown"):
        assert rows[key]["requests"] == rows[key]["calls"] and rows[key]["sources"] == {"live": rows[key]["calls"]}
    assert rows["live"]["first_evening_s"] > 0 and rows["live"]["max_in_flight"] == 2
    assert rows["warm"]["requests"] == 0 and rows["warm"]["sources"] == {"cache": rows["warm"]["calls"]}
    assert set(result["summary"]) == set(TARGETS) - {SPAN_TARGET}  # the span's is `--span`'s
    assert all(value > 0 for value in result["summary"].values())


@pytest.mark.usefixtures("rows_here")
def test_the_three_topic_rows_compare_per_topic_and_shared_extraction() -> None:
    result = measure_topics(docs=4, concurrency=2, latency_ms=10)
    per, shared = result["rows"]["per-topic"], result["rows"]["shared"]
    assert (per["topics"], shared["topics"]) == (3, 3) and per["errors"] == shared["errors"] == 0
    # a request per document and topic, or per document; and each topic's composing call in both
    assert (per["calls"], shared["calls"]) == (12 + 3, 4 + 3), "a request per document and topic, or per document"
    assert 0 < shared["prompt_tokens"] < per["prompt_tokens"]
    assert 0 < shared["cached_tokens"] < shared["prompt_tokens"], "the shared prefix served from the cache"


@pytest.mark.usefixtures("rows_here")
def test_the_span_row_answers_writes_and_patches_every_evening_in_order() -> None:
    result = measure_span(docs=3, evenings=3, concurrency=2, latency_ms=10, repeat=1)
    (run,) = result["runs"]
    evenings = result["evenings"]
    assert [e["date"] for e in evenings] == [d.isoformat() for d in span_dates(3)]
    for e in evenings:
        # each document's extraction and the composing call, every one answered over HTTP
        assert e["calls"] == 3 + 1 and e["sources"] == {"live": e["calls"]}, e["date"]
        assert e["prompt_tokens"] > 0 and e["wall_s"] > 0, e["date"]
        assert e["briefing"] and e["living"], f"{e['date']}: its briefing and its patch written"
    assert all(e["run_s"] is not None for e in run["evenings"]), "each evening's summary read"
    assert run["requests"] == run["calls"] == sum(e["calls"] for e in evenings) and run["max_in_flight"] <= 2
    sizes = [run["living_before"], *(e["living_bytes"] for e in evenings)]
    assert sizes == sorted(set(sizes)), "each evening's patch grows the living document the next one reads"
    assert run["first_evening_s"] > 0, "the process's one-time start paid before the span, apart"
    assert set(result["summary"]) == {SPAN_TARGET} and result["summary"][SPAN_TARGET] > 0
