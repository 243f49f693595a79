"""The load benchmark: what an evening costs against a simulated endpoint, beside docs/reference.md's targets.

`python -m benchmarks.bench [--json]` generates a 200-document evening (`benchmarks/evening.py`) and
the same evening after 100 evenings of history, serves them from a latency-simulating
OpenAI-compatible endpoint on loopback (`benchmarks/endpoint.py`), and runs each row `--repeat`
times, each in a fresh process, reporting the median. The claim under test: a live run costs
`calls × latency ÷ concurrency`, and what the process does besides is small beside it, also after
months of history.

Targets are numbers to read, not assertions: a shared machine must not turn a slow minute into a
red build. The suite runs a tiny evening through this module only to check that it reports every
target.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.endpoint import Endpoint, simulated
from benchmarks.evening import DATE, TOPIC, write_evening

ROOT = Path(__file__).resolve().parent.parent
FAKE_KEY = "sk-bench-not-a-key"

# name -> (target, unit, True if lower is better)
TARGETS: dict[str, tuple[float, str, bool]] = {
    "efficiency at 16 in flight": (0.85, "", False),
    "demo run, replayed, whole process": (3.0, "s", True),
    "warm re-run": (2.0, "s", True),
    "prompt tokens per document, 100 evenings / today": (1.25, "×", True),
    "anchors load after 100 evenings": (1.0, "s", True),
}


def run_row(spec: dict[str, Any]) -> dict[str, Any]:
    """One evening, live against `spec['base_url']`, in this (fresh) process. With `first`, a
    one-document evening runs before the clock starts: it pays what every live process pays once
    whatever the evening's size (importing openai and instructor, building the response model),
    which is not part of what concurrency buys (reported apart)."""
    from agent.pipeline import Settings, run

    given = {"topic": TOPIC, "date": DATE, "out": Path(spec["out"]), "force": True, "backend": "live"}
    given |= {"api_key": FAKE_KEY, "base_url": spec["base_url"], "concurrency": spec["concurrency"]}
    t = time.perf_counter()
    if spec["first"]:
        run(Settings(workspace=Path(spec["first"]), no_cache=True, **given))
    first_s = time.perf_counter() - t
    reset = urllib.request.Request(spec["base_url"] + "/_reset", data=b"{}", method="POST")
    urllib.request.urlopen(reset, timeout=10).close()  # the endpoint counts the timed evening only
    cache = {"cache_dir": Path(spec["cache_dir"])} if spec["cache_dir"] else {"no_cache": True}
    planned: list[float] = []
    t = time.perf_counter()
    report = run(
        Settings(workspace=Path(spec["workspace"]), **cache, **given),
        on_plan=lambda _: planned.append(time.perf_counter() - t),
    )
    wall = time.perf_counter() - t
    records = report.records
    return {
        "wall_s": wall,
        "plan_s": planned[0],
        "first_evening_s": first_s,
        "documents": report.documents,
        "calls": len(records),
        "sources": dict(Counter(r.source for r in records)),
        "errors": sum(bool(r.error) for r in records),
        "prompt_tokens": sum(r.input_tokens for r in records),
    }


def topics_row(spec: dict[str, Any]) -> dict[str, Any]:
    """Every topic of the evening in one run, with `spec['extraction']` (per-topic or shared),
    live against `spec['base_url']` with no cache, in this (fresh) process."""
    from agent.core.settings import Settings
    from agent.pipeline import run_topics
    from agent.plan.workspace import load_workspace

    workspace = Path(spec["workspace"])
    llm = {"api_key": FAKE_KEY, "base_url": spec["base_url"], "concurrency": spec["concurrency"]}
    llm |= {"backend": "live", "cache_dir": None, "extraction": spec["extraction"]}
    topics = load_workspace(workspace).select([], all_topics=True)
    given = {"workspace": workspace, "topic": topics[0], "date": DATE, "out": Path(spec["out"]), "force": True}
    t = time.perf_counter()
    report = run_topics(Settings(**given, llm=llm), topics)
    records = report.records
    return {
        "wall_s": time.perf_counter() - t,
        "plan_s": 0.0,
        "first_evening_s": 0.0,
        "documents": max(rep.documents for rep in report.reports),
        "topics": len(topics),
        "calls": len(records),
        "sources": dict(Counter(r.source for r in records)),
        "errors": sum(bool(r.error) for r in records),
        "prompt_tokens": sum(r.input_tokens for r in records),
        "cached_tokens": sum(r.cached_tokens for r in records),
    }


def row(spec: dict[str, Any]) -> dict[str, Any]:
    """One row in this process: every topic's (`topics_row`) for a spec with an extraction, else one evening."""
    return topics_row(spec) if "extraction" in spec else run_row(spec)


def live_row(endpoint: Endpoint, spec: dict[str, Any], env: dict[str, str], *, child: bool = True) -> dict[str, Any]:
    """`row(spec)` against `endpoint`, in a child process under `env` (`child=False`: in this one,
    under this process's environment, the spec read as the child reads it), with what the endpoint saw."""
    spec = {"base_url": endpoint.base_url, "cache_dir": None, "first": None, **spec}
    spec = json.loads(json.dumps(spec, default=str))  # as the child reads it from its command line
    if child:
        command = [sys.executable, "-m", "benchmarks.bench", "--row", json.dumps(spec)]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=ROOT, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"load row failed ({spec['workspace']}):\n{done.stderr[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    else:
        result = row(spec)
    stats = endpoint.stats()
    return {**result, "requests": stats["requests"], "max_in_flight": stats["max_in_flight"]}


def demo_args(out: str) -> list[str]:
    """The replayed demo's command line, as a user types it after `predigest`."""
    world = ROOT / "examples" / "world"
    args = ["run", str(world), "--topic", TOPIC, "--date", DATE.isoformat(), "--out", out, "--force"]
    return [*args, "--backend", "replay", "--no-cache"]


def demo_seconds(env: dict[str, str]) -> float:
    """One replayed demo run as a user starts it: a whole process, imports included."""
    with tempfile.TemporaryDirectory(prefix="predigest-demo-") as out:
        t = time.perf_counter()
        entry = [sys.executable, "-c", "from agent.cli import main; main()"]
        subprocess.run([*entry, *demo_args(out)], capture_output=True, check=True, env=env | {"OPENAI_API_KEY": ""})
        return time.perf_counter() - t


def child_env() -> dict[str, str]:
    """The child processes' environment, without PYTHONDONTWRITEBYTECODE: the first child writes our
    bytecode beside the sources and the others read it, as an installed package's processes do. With
    it set, as it may be where the benchmark runs, every process would compile each of our modules
    again, which no user waits for. (A bytecode prefix folder would not do: Python then looks there
    for every module's bytecode, and the first child compiles openai, pydantic and the rest too.)"""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def repeated(run: Callable[[int], dict[str, Any]], times: int) -> dict[str, Any]:
    """The run with the median wall time of `times` (`run(i)` is the i-th), every wall time beside it."""
    runs = sorted((run(i) for i in range(times)), key=lambda r: r["wall_s"])
    return {**runs[(len(runs) - 1) // 2], "wall_s_runs": [r["wall_s"] for r in runs]}


def measure(
    docs: int = 200, concurrency: int = 16, latency_ms: float = 500, history: int = 100, repeat: int = 3
) -> dict[str, Any]:
    """Every row of the benchmark: the evening at `latency_ms` with `concurrency` in flight (each
    run with an empty cache, which it fills), a warm re-run from that cache, the evening after
    `history` evenings at 0 ms, and the replayed demo as a whole process."""
    load = os.getloadavg()[0]
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="predigest-load-") as tmp:
        base = Path(tmp)
        today, first = write_evening(base / "today", docs), write_evening(base / "first", 1, seed=1)
        grown = write_evening(base / "grown", docs, history=history, living_anchors=2000)
        spec = {"out": base / "out", "concurrency": concurrency, "workspace": today}
        caches = [base / f"cache-{i}" for i in range(repeat)]
        with Endpoint(simulated(latency_ms / 1000), keep_bodies=False) as endpoint:
            live = repeated(lambda i: live_row(endpoint, spec | {"first": first, "cache_dir": caches[i]}, env), repeat)
            warm = repeated(lambda i: live_row(endpoint, spec | {"cache_dir": caches[-1]}, env), repeat)
        with Endpoint(simulated(0.0), keep_bodies=False) as endpoint:
            grew = repeated(lambda i: live_row(endpoint, spec | {"workspace": grown}, env), repeat)
        demo = sorted(demo_seconds(env) for _ in range(repeat))  # after the rows: a warm disk cache
    ideal = live["calls"] * latency_ms / 1000 / concurrency
    per_doc = {k: r["prompt_tokens"] / r["documents"] for k, r in (("live", live), ("grown", grew))}
    summary = {
        "efficiency at 16 in flight": ideal / live["wall_s"],
        "demo run, replayed, whole process": statistics.median(demo),
        "warm re-run": warm["wall_s"],
        "prompt tokens per document, 100 evenings / today": per_doc["grown"] / per_doc["live"],
        "anchors load after 100 evenings": grew["plan_s"],
    }
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    machine += f", load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    setup = {"machine": machine, "documents": docs, "concurrency": concurrency, "latency_ms": latency_ms}
    rows = {"live": live, "warm": warm, "grown": grew}
    return setup | {"history": history, "ideal_s": ideal, "rows": rows, "demo_s_runs": demo, "summary": summary}


def measure_topics(docs: int = 200, concurrency: int = 16, latency_ms: float = 500, repeat: int = 1) -> dict[str, Any]:
    """The generated evening with three topics, per-topic and shared extraction: calls, prompt
    tokens (and of them, those the simulated provider's prefix cache served) and wall time."""
    env = child_env()
    with tempfile.TemporaryDirectory(prefix="predigest-topics-") as tmp:
        workspace = write_evening(Path(tmp) / "evening", docs, topics=3)
        rows = {}
        for extraction in ("per-topic", "shared"):
            spec = {"workspace": workspace, "out": Path(tmp) / extraction, "concurrency": concurrency}
            spec["extraction"] = extraction

            def cold(_: int, spec: dict[str, Any] = spec) -> dict[str, Any]:
                # a provider whose prompt cache is cold for every run: a repeat must not be served
                # the prompts an earlier run sent
                with Endpoint(simulated(latency_ms / 1000), keep_bodies=False) as endpoint:
                    return live_row(endpoint, spec, env)

            rows[extraction] = repeated(cold, repeat)
    return {"documents": docs, "concurrency": concurrency, "latency_ms": latency_ms, "rows": rows}


def print_topics(result: dict[str, Any]) -> None:
    print(
        f"three topics · {result['documents']} documents · {result['latency_ms']:g} ms · "
        f"{result['concurrency']} in flight"
    )
    print(f"{'extraction':<10} {'calls':>5} {'prompt tokens':>13} {'cached':>9} {'not cached':>10} {'wall s':>7}")
    for key, r in result["rows"].items():
        tokens, cached = r["prompt_tokens"], r["cached_tokens"]
        print(f"{key:<10} {r['calls']:>5} {tokens:>13} {cached:>9} {tokens - cached:>10} {r['wall_s']:>7.2f}")


def print_report(result: dict[str, Any]) -> None:
    print(f"load benchmark · {result['machine']}")
    print(f"{'row':<6} {'docs':>4} {'calls':>5} {'requests':>8} {'in flight':>9} {'plan s':>6} {'wall s (runs)'}")
    for key, r in result["rows"].items():
        runs = " / ".join(f"{w:.2f}" for w in r["wall_s_runs"])
        print(
            f"{key:<6} {r['documents']:>4} {r['calls']:>5} {r['requests']:>8} {r['max_in_flight']:>9} "
            f"{r['plan_s']:>6.2f} {r['wall_s']:.2f} ({runs})"
        )
    live = result["rows"]["live"]
    print(f"ideal {result['ideal_s']:.2f} s · one-document evening before the clock {live['first_evening_s']:.2f} s")
    print("demo, whole process: " + " / ".join(f"{s:.2f}" for s in result["demo_s_runs"]) + " s")
    print(f"{'target':<50} {'measured':>9} {'target':>8}")
    for name, value in result["summary"].items():
        target, unit, lower = TARGETS[name]
        ok = value <= target if lower else value >= target
        bound = ("≤ " if lower else "≥ ") + f"{target:g}{unit}"
        print(f"{name:<50} {value:>9.3f} {bound:>8}{'' if ok else '  ← miss'}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    parser.add_argument("--docs", type=int, default=200, help="documents in the generated evening")
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each row (their median is reported)")
    parser.add_argument("--topics", action="store_true", help="three topics, per-topic vs shared extraction")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # internal: one live row, in a child process
    args = parser.parse_args(argv)
    if args.row:
        print(json.dumps(row(json.loads(args.row))))
        return
    if args.topics:
        topics = measure_topics(args.docs, latency_ms=args.latency_ms, repeat=args.repeat)
        print(json.dumps(topics, indent=2, default=str) if args.json else "", end="")
        if not args.json:
            print_topics(topics)
        return
    result = measure(args.docs, latency_ms=args.latency_ms, repeat=args.repeat)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
