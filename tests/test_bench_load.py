"""`python -m benchmarks.bench` end to end on a tiny evening: every call is answered over HTTP, the
warm re-run sends nothing, and the summary has a figure for each target. The benchmark runs each
row in a child process; here one row does (the three-topic test's first), and the others run their
child's command in the test's own process, since a fresh process pays some 2 s of imports that
measure nothing here. Nothing here judges a time: speed is the benchmark's job, on a quiet machine."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

import pytest

from benchmarks import bench
from benchmarks.bench import TARGETS, measure, measure_topics
from tests.paths import predigest

Run = Callable[..., subprocess.CompletedProcess[str]]


def _children(real: int) -> Run:
    """`subprocess.run` for the benchmark: its first `real` rows run in child processes, as it runs
    every row; the others do here what their child would (`python -m benchmarks.bench --row SPEC`,
    or the demo's `python -c "from agent.cli import main; main()" ARGS` in the environment given).
    Any other command (git, for the run log) runs as it would."""
    child, rows = subprocess.run, iter(range(real))

    def run(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if command[1:3] == ["-m", "benchmarks.bench"] and next(rows, None) is None:
            stdout = io.StringIO()
            with redirect_stdout(stdout):
                bench.main(command[3:])
            return subprocess.CompletedProcess(command, 0, stdout.getvalue(), "")
        if command[1:3] == ["-c", "from agent.cli import main; main()"]:
            done = predigest(*command[3:], env=kwargs["env"])
            if kwargs.get("check"):
                done.check_returncode()
            return done
        return child(command, **kwargs)

    return run


def test_the_benchmark_runs_every_row_and_reports_every_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.subprocess, "run", _children(real=0))
    result = measure(docs=10, concurrency=2, latency_ms=20, history=3, repeat=1)
    rows = result["rows"]
    assert set(rows) == {"live", "warm", "grown"}
    for key, row in rows.items():
        assert row["documents"] == 10 and row["errors"] == 0, key
    for key in ("live", "grown"):
        assert rows[key]["requests"] == rows[key]["calls"] and rows[key]["sources"] == {"live": rows[key]["calls"]}
    assert rows["live"]["first_evening_s"] > 0 and rows["live"]["max_in_flight"] == 2
    assert rows["warm"]["requests"] == 0 and rows["warm"]["sources"] == {"cache": rows["warm"]["calls"]}
    assert set(result["summary"]) == set(TARGETS)
    assert all(value > 0 for value in result["summary"].values())


def test_the_three_topic_rows_compare_per_topic_and_shared_extraction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench.subprocess, "run", _children(real=1))
    result = measure_topics(docs=4, concurrency=2, latency_ms=10)
    per, shared = result["rows"]["per-topic"], result["rows"]["shared"]
    assert (per["topics"], shared["topics"]) == (3, 3) and per["errors"] == shared["errors"] == 0
    assert (per["calls"], shared["calls"]) == (12, 4), "a request per document and topic, or per document"
    assert 0 < shared["prompt_tokens"] < per["prompt_tokens"]
    assert 0 < shared["cached_tokens"] < shared["prompt_tokens"], "the shared prefix served from the cache"
