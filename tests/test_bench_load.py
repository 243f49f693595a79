"""`python -m benchmarks.bench --load` end to end on a tiny evening: every row runs, the warm re-run
sends nothing, every call is answered, and the summary has each target's figure. Nothing here
judges a time: speed is the benchmark's job, on a quiet machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.loadbench import TARGETS, installed_bytecode, measure


def test_the_load_benchmark_runs_every_row() -> None:
    result = measure(docs=6, c1_docs=2, latency_ms=20, history=3, living_anchors=60, repeat=1, row_repeat=2)
    rows = {r["key"]: r for r in result["rows"]}
    assert set(rows) == {"c1", "c4", "c16", "zero", "warm", "grown"}
    assert rows["c1"]["documents"] == 2 and rows["c16"]["documents"] == 6
    for key, row in rows.items():
        assert row["errors"] == 0, key
        if key != "warm":
            assert row["requests"] == row["calls"] and row["sources"] == {"live": row["calls"]}, key
    # the rows with a target report the median of their runs; each 0 ms run starts with an empty cache
    assert all(len(rows[k]["wall_s_runs"]) == 2 for k in ("c16", "zero", "warm", "grown"))
    assert rows["warm"]["requests"] == 0 and rows["warm"]["sources"] == {"cache": rows["warm"]["calls"]}
    # the client import is timed apart where a live run pays it; the warm re-run pays it within its calls
    assert rows["warm"]["client_import_s"] == 0  # no warm-up before the clock: its import is timed as it runs
    assert all(rows[k]["client_imported"] and rows[k]["client_import_s"] > 0 for k in rows if k != "warm")
    assert rows["c4"]["max_in_flight"] <= 4 and rows["c1"]["max_in_flight"] == 1
    assert 0 < rows["c16"]["prefix_share_mean"] < 1
    assert result["growth"]["grown"]["baselines"] == 3
    assert result["growth"]["grown"]["listed_anchors_max"] <= result["growth"]["listed_anchors_bound"]
    assert set(result["summary"]) == set(TARGETS)
    assert all(result["calibration_ms"][k] > 0 for k in ("start", "end"))  # the speed of the minute, reported


def test_child_processes_find_our_bytecode_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    """As an installed package has it, even where PYTHONDONTWRITEBYTECODE is set: no timed process
    compiles our modules."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    with installed_bytecode() as env:
        assert "PYTHONDONTWRITEBYTECODE" not in env
        compiled = {p.name.split(".")[0] for p in Path(env["PYTHONPYCACHEPREFIX"]).rglob("*.pyc")}
        assert {"pipeline", "extractor", "loadbench"} <= compiled
    assert not Path(env["PYTHONPYCACHEPREFIX"]).exists()
