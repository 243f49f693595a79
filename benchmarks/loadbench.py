"""`python -m benchmarks.bench --load`: what a real evening costs, against a latency-simulating endpoint.

The claim under test: a live run costs `calls × latency ÷ concurrency`, and everything else
(client, instructor, cache, rules, rendering) is noise beside it — also after months of history.

Each live row runs in a fresh child process (`--load-row`), so its peak RSS and CPU are its own;
the endpoint (`python -m benchmarks.endpoint`) is a separate process too, started and stopped here,
so its CPU is not counted as the pipeline's (on a 2-core machine it still competes for a core,
which makes the figures conservative). The workspaces are generated into a temporary folder
(`eval/evening.py`) and deleted afterwards.

A live row's wall time starts after the client's one-time start (importing openai and
instructor, and what their first call builds once: `agent.extract.llm.reference.warm_up`, ~1 s of CPU
paid once per process whatever the evening's size; no part of what concurrency buys), which the
row reports on its own, with the efficiency counting it beside.
"""

from __future__ import annotations

import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks.evening import DATE, TOPIC, write_evening

ROOT = Path(__file__).resolve().parent.parent
FAKE_KEY = "sk-bench-not-a-key"

# name -> (target, unit, lower is better)
TARGETS: dict[str, tuple[float, str, bool]] = {
    "efficiency at 16 in flight": (0.85, "", False),
    "overhead per document at 0 ms": (10.0, "ms", True),
    "peak RSS, 200 documents": (300.0, "MB", True),
    "prompt tokens per document, grown / today": (1.25, "×", True),
    "anchors load after 100 evenings": (300.0, "ms", True),
    "rules after 100 evenings / today": (2.0, "×", True),
    "warm re-run": (1000.0, "ms", True),
    "warm re-run requests": (0.0, "", True),
    "demo run, replayed, whole process": (2000.0, "ms", True),
    "inspection command, whole process (slowest)": (500.0, "ms", True),
}


# --- one live run, in its own process --------------------------------------------------------------


def run_row(spec: dict[str, Any]) -> dict[str, Any]:
    """One evening, live against `spec['base_url']`: the run's stages timed one by one (what
    `agent.pipeline.run` does), and what the process used."""
    from agent.pipeline import Settings, brief, extract, plan, write

    started_cpu = time.process_time()
    client_import_s = 0.0
    if spec.get("warm_up"):  # what any live run pays once, before its first call: timed apart
        from agent.extract.llm.config import LLMConfig
        from agent.extract.llm.reference import warm_up

        t = time.perf_counter()
        warm_up(LLMConfig(mode=spec.get("mode", "tools")))
        client_import_s = time.perf_counter() - t
    settings = Settings(
        workspace=Path(spec["workspace"]),
        topic=TOPIC,
        date=DATE,
        out=Path(spec["out"]),
        force=True,
        backend="live",
        api_key=FAKE_KEY,
        base_url=spec["base_url"],
        mode=spec.get("mode", "tools"),
        concurrency=spec["concurrency"],
        cache_dir=Path(spec["cache_dir"]) if spec.get("cache_dir") else None,
        no_cache=not spec.get("cache_dir"),
    )
    stages: dict[str, float] = {}
    t = time.perf_counter()
    ev = plan(settings)
    stages["plan_s"] = time.perf_counter() - t
    results = extract(ev)
    stages["extract_s"] = time.perf_counter() - t - stages["plan_s"]
    outcome = brief(ev, results)
    stages["brief_s"] = time.perf_counter() - t - stages["plan_s"] - stages["extract_s"]
    write(outcome, force=True)
    wall = time.perf_counter() - t
    stages["write_s"] = wall - sum(stages.values())
    records = outcome.records
    return {
        "wall_s": wall,
        "client_import_s": client_import_s,
        "client_imported": "openai" in sys.modules,
        **stages,
        "cpu_s": time.process_time() - started_cpu,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        # the facts worker's (agent.factworker, reaped by the end of `extract`): reported, not hidden. Its
        # peak RSS is not: a child's ru_maxrss counts this process's pages between fork and exec (18 MB by
        # /proc VmHWM for 200 documents)
        "worker_cpu_s": os.times().children_user + os.times().children_system,
        "documents": len(ev.sources),
        "calls": len(records),
        "sources": {s: sum(r.source == s for r in records) for s in {r.source for r in records}},
        "errors": sum(bool(r.error) for r in records),
        "input_tokens": sum(r.input_tokens for r in records),
        "output_tokens": sum(r.output_tokens for r in records),
        "increments": len(outcome.composed.briefing.increments),
    }


# --- the orchestration -------------------------------------------------------------------------------


@contextmanager
def endpoint(latency_ms: float, jitter_ms: float = 0.0, error_rate: float = 0.0) -> Iterator[str]:
    """The simulated endpoint as a child process; yields its base URL. Closing its stdin ends it."""
    args = ["--latency-ms", str(latency_ms), "--jitter-ms", str(jitter_ms), "--error-rate", str(error_rate)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.endpoint", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _call(base_url: str, path: str, post: bool = False) -> dict[str, Any]:
    req = urllib.request.Request(base_url + path, data=b"{}" if post else None, method="POST" if post else "GET")
    with urllib.request.urlopen(req, timeout=10) as resp:  # loopback only: our own endpoint
        result: dict[str, Any] = json.loads(resp.read())
        return result


@dataclass(frozen=True)
class Row:
    key: str
    name: str
    workspace: Path
    concurrency: int
    latency_ms: float
    cache_dir: Path | None = None
    warm_up: bool = True  # start the client before the clock; a warm re-run never imports it: timed as it runs


def live_row(row: Row, base_url: str, out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run `row` in a child process against the endpoint at `base_url` (in `env`, from
    `installed_bytecode`, or this process's environment); join both sides' figures."""
    _call(base_url, "/_reset", post=True)
    spec = {
        "workspace": str(row.workspace),
        "out": str(out),
        "base_url": base_url,
        "concurrency": row.concurrency,
        "cache_dir": str(row.cache_dir) if row.cache_dir else None,
        "warm_up": row.warm_up,
    }
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.bench", "--load-row", json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        env=env,
    )
    if done.returncode != 0:
        raise RuntimeError(f"load row {row.name} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    server = _call(base_url, "/_stats")
    calls = server["requests"]
    ideal = calls * row.latency_ms / 1000 / row.concurrency
    docs = result["documents"]
    result.update(
        key=row.key,
        name=row.name,
        concurrency=row.concurrency,
        latency_ms=row.latency_ms,
        requests=calls,
        max_in_flight=server["max_in_flight"],
        prefix_share_mean=server["prefix_share_mean"],
        prefix_share_min=server["prefix_share_min"],
        common_prefix_tokens=server["common_prefix_tokens"],
        ideal_s=ideal,
        efficiency=ideal / result["wall_s"] if ideal else None,
        efficiency_with_import=ideal / (result["wall_s"] + result["client_import_s"]) if ideal else None,
        outside_ms_per_doc=(result["wall_s"] - ideal) * 1000 / docs,
        cpu_ms_per_doc=result["cpu_s"] * 1000 / docs,
        prompt_tokens_per_doc=result["input_tokens"] / docs,
        completion_tokens_per_doc=result["output_tokens"] / docs,
    )
    return result


def median_row(run: Callable[[int], dict[str, Any]], times: int) -> dict[str, Any]:
    """The run with the median wall time of `times` runs (`run(i)` is the i-th), with every run's
    wall time beside it."""
    runs = sorted((run(i) for i in range(times)), key=lambda r: r["wall_s"])
    return {**runs[(len(runs) - 1) // 2], "wall_s_runs": [r["wall_s"] for r in runs]}


def median_ms(fn: Callable[[], object], repeat: int, *, warm_up: bool = False) -> float:
    """Median wall time of `fn` in ms over `repeat` runs; after one untimed run with `warm_up`
    (in-process timings of steady work), without it where the first run is the one that counts
    (a whole process, a cold registry)."""
    if warm_up:
        fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def growth(today: Path, grown: Path) -> dict[str, Any]:
    """Anchors load and rules on the same evening, with one evening of history and with 100."""
    from agent.plan.anchors import LISTED_ANCHORS, build_registry
    from agent.plan.ingest import scan, sources
    from agent.plan.workspace import load_workspace
    from agent.rules.claims import DocResult
    from agent.rules.compose import Limits, compose
    from benchmarks.endpoint import extraction_for
    from schemas.extraction import FileExtraction

    out: dict[str, Any] = {"listed_anchors_bound": LISTED_ANCHORS}
    for label, root in (("today", today), ("grown", grown)):
        ws = load_workspace(root)
        docs = scan(ws, TOPIC, DATE)
        reg = build_registry(docs, TOPIC, DATE)
        results = [DocResult(d, FileExtraction.model_validate(extraction_for(d.text))) for d in sources(docs)]
        baselines = [d for d in docs if d.kind == "baseline" and d.read]
        limits = Limits(**ws.config.limits.model_dump())

        rules_ms = []
        for _ in range(3):
            t = time.perf_counter()
            fresh = replace(reg)  # and its lookup indexes built again, as in a new run
            compose(results, fresh, baselines, topic=TOPIC, date=DATE, window="w", limits=limits, footer="f")
            rules_ms.append((time.perf_counter() - t) * 1000)

        out[label] = {
            "anchors": len(reg.anchors),
            "baselines": len(baselines),
            "anchors_load_ms": median_ms(lambda ws=ws: _cold_registry(ws), 3),
            "rules_ms": statistics.median(rules_ms),
            "listed_anchors_max": max(len(reg.relevant_to(d.text)) for d in sources(docs)),
        }
    return out


def _cold_registry(ws: Any) -> Any:
    """The registry as a fresh process builds it."""
    from agent.plan.anchors import build_registry
    from agent.plan.ingest import scan

    return build_registry(scan(ws, TOPIC, DATE), TOPIC, DATE)


def processes(env: dict[str, str], repeat: int = 5) -> dict[str, float]:
    """Whole-process wall times, median of `repeat` after one untimed run of each (what a user
    waits for, imports included), in `env` (`installed_bytecode`)."""
    world = str(ROOT / "examples" / "world")
    seed = str(ROOT / "examples" / "world" / "inbox" / "tom" / "2026-09-21-inference-e1prep.md")
    day = ["--topic", TOPIC, "--date", DATE.isoformat()]
    out_dir = tempfile.mkdtemp(prefix="predigest-bench-")
    commands = {
        "demo run, replayed": ["run", world, *day, "--out", out_dir, "--force", "--backend", "replay", "--no-cache"],
        "inbox": ["inbox", world, *day],
        "anchors": ["anchors", world, *day],
        "parse": ["parse", seed, "--json"],
    }
    entry = [sys.executable, "-c", "from agent.cli import main; main()"]
    env = env | {"OPENAI_API_KEY": ""}
    return {
        name: median_ms(
            lambda args=args: subprocess.run([*entry, *args], capture_output=True, check=True, env=env),
            repeat,
            warm_up=True,
        )
        for name, args in commands.items()
    }


@contextmanager
def installed_bytecode() -> Iterator[dict[str, str]]:
    """The environment of the benchmark's child processes: the package's bytecode compiled, as
    an installed package has it (pip compiles it at install), into a folder of their own. With
    PYTHONDONTWRITEBYTECODE set, as it may be where the benchmark runs, every process would
    compile each of our modules it imports again, which no user waits for: some 50 ms of an
    inspection command, and inside a live row's clock the modules a run imports on first need
    (the extractor's, the facts worker's)."""
    with tempfile.TemporaryDirectory(prefix="predigest-pyc-") as pycache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = pycache
        packages = [str(ROOT / p) for p in ("agent", "schemas", "eval", "benchmarks")]
        subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], env=env, check=True, capture_output=True)
        yield env


def measure(
    docs: int,
    c1_docs: int,
    latency_ms: float,
    history: int,
    living_anchors: int,
    repeat: int = 5,
    row_repeat: int = 3,
) -> dict[str, Any]:
    """Every row and figure of the load benchmark. The rows that carry a target (c=16, 0 ms, the
    warm re-run, the grown evening) run `row_repeat` times, each a fresh process, and report their
    median run: this machine's speed drifts from minute to minute, and one slow minute should not
    decide a figure, nor one fast one. The c=1 and c=4 rows (20–30 s each, no target) run once."""
    speed_before = calibration_ms()
    with tempfile.TemporaryDirectory(prefix="predigest-load-") as tmp, installed_bytecode() as env:
        base = Path(tmp)
        today = write_evening(base / "today", docs)
        small = write_evening(base / "c1", c1_docs)
        grown = write_evening(base / "grown", docs, history=history, living_anchors=living_anchors)
        out = base / "out"
        rows: list[dict[str, Any]] = []
        with endpoint(latency_ms) as url:
            rows.append(live_row(Row("c1", f"c=1, {latency_ms:g} ms", small, 1, latency_ms), url, out, env))
            rows.append(live_row(Row("c4", f"c=4, {latency_ms:g} ms", today, 4, latency_ms), url, out, env))
            c16 = Row("c16", f"c=16, {latency_ms:g} ms", today, 16, latency_ms)
            rows.append(median_row(lambda i: live_row(c16, url, out, env), row_repeat))
        with endpoint(0) as url:
            caches = [base / f"cache-{i}" for i in range(row_repeat)]  # each 0 ms run starts with an empty cache
            zero = [Row("zero", "c=16, 0 ms (overhead)", today, 16, 0, cache) for cache in caches]
            rows.append(median_row(lambda i: live_row(zero[i], url, out, env), row_repeat))
            warm = Row("warm", "c=16, warm re-run (cache)", today, 16, 0, caches[-1], warm_up=False)
            rows.append(median_row(lambda i: live_row(warm, url, out, env), row_repeat))
            grown_row = Row("grown", f"c=16, 0 ms, {history} evenings before", grown, 16, 0)
            rows.append(median_row(lambda i: live_row(grown_row, url, out, env), row_repeat))
        grow = growth(today, grown)
        procs = processes(env, repeat)
    return {
        "machine": machine(),
        "calibration_ms": {"start": speed_before, "end": calibration_ms()},
        "documents": docs,
        "rows": rows,
        "growth": grow,
        "processes_ms": procs,
        "summary": summary(rows, grow, procs),
    }


def summary(rows: list[dict[str, Any]], grow: dict[str, Any], procs: dict[str, float]) -> dict[str, float]:
    by = {r["key"]: r for r in rows}
    zero, warm, grown = by["zero"], by["warm"], by["grown"]
    return {
        "efficiency at 16 in flight": by["c16"]["efficiency"],
        "overhead per document at 0 ms": zero["outside_ms_per_doc"],
        "peak RSS, 200 documents": max(r["peak_rss_mb"] for r in rows),
        "prompt tokens per document, grown / today": grown["prompt_tokens_per_doc"] / zero["prompt_tokens_per_doc"],
        "anchors load after 100 evenings": grow["grown"]["anchors_load_ms"],
        "rules after 100 evenings / today": grow["grown"]["rules_ms"] / grow["today"]["rules_ms"],
        "warm re-run": warm["wall_s"] * 1000,
        "warm re-run requests": warm["requests"],
        "demo run, replayed, whole process": procs["demo run, replayed"],
        "inspection command, whole process (slowest)": max(procs[k] for k in ("inbox", "anchors", "parse")),
    }


def calibration_ms(repeat: int = 5) -> float:
    """How long a fixed piece of pure-Python work takes now (median of `repeat`): this VM's speed
    drifts by up to 1.7x from minute to minute, so every run reports it at its start and its end,
    and a figure can be read against the speed of the minute it was measured in."""

    def work() -> None:  # small objects made, serialised, parsed and sorted: what a run does most
        text = " ".join(f"{chr(0x4E00 + i % 2000)}{chr(0x4E80 + i)} 2401.{i:05d}v2 {i / 7:.1f}" for i in range(800))
        records = [{"id": f"s{i}", "doc": text[i % 97 : i % 97 + 40], "at": [i, i + 7]} for i in range(10_000)]
        parsed = json.loads(json.dumps(records, ensure_ascii=False))
        sorted(parsed, key=lambda r: (r["doc"], r["id"]))
        re.findall(r"\d+(?:\.\d+)?", text * 20)

    return median_ms(work, repeat, warm_up=True)


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return f"{os.cpu_count()} cores, {cpu}, Python {sys.version.split()[0]}, load average {load:.1f} at start"


def print_report(result: dict[str, Any]) -> None:
    speed = result["calibration_ms"]
    print(f"load benchmark · {result['machine']}")
    print(
        f"calibration (a fixed piece of Python, lower is faster): {speed['start']:.0f} ms at the start, "
        f"{speed['end']:.0f} ms at the end"
    )
    head = f"{'row':<34} {'docs':>4} {'calls':>5} {'wall s':>7} {'ideal s':>7} {'eff':>5} {'out ms/doc':>10}"
    head += f" {'cpu ms/doc':>10} {'RSS MB':>6} {'prompt/doc':>10} {'compl/doc':>9} {'prefix':>6} {'peak':>4}"
    print(head)
    for r in result["rows"]:
        eff = f"{r['efficiency']:.2f}" if r["efficiency"] is not None else "-"
        print(
            f"{r['name']:<34} {r['documents']:>4} {r['requests']:>5} {r['wall_s']:>7.2f} {r['ideal_s']:>7.2f} "
            f"{eff:>5} {r['outside_ms_per_doc']:>10.1f} {r['cpu_ms_per_doc']:>10.1f} {r['peak_rss_mb']:>6.0f} "
            f"{r['prompt_tokens_per_doc']:>10.0f} {r['completion_tokens_per_doc']:>9.0f} "
            f"{r['prefix_share_mean']:>6.1%} {r['max_in_flight']:>4}"
        )
    print("where the wall time goes, s (plan / extract / brief / write), and the client import before the run:")
    for r in result["rows"]:
        stages = " / ".join(f"{r[k]:.2f}" for k in ("plan_s", "extract_s", "brief_s", "write_s"))
        counted = r["efficiency_with_import"]
        with_import = f" · efficiency counting it {counted:.2f}" if counted is not None else ""
        worker = ""
        if r["worker_cpu_s"]:
            worker = f" · facts worker {r['worker_cpu_s']:.2f} s CPU"
        runs = r.get("wall_s_runs", [])
        median_of = f" · median of {len(runs)} runs: " + " / ".join(f"{w:.2f}" for w in runs) if len(runs) > 1 else ""
        print(f"  {r['name']:<34} {stages} · import {r['client_import_s']:.2f}{with_import}{worker}{median_of}")
    g = result["growth"]
    for label in ("today", "grown"):
        x = g[label]
        print(
            f"history {label:<5}: {x['baselines']} briefings, {x['anchors']} anchors · anchors load "
            f"{x['anchors_load_ms']:.0f} ms · rules {x['rules_ms']:.0f} ms · anchors listed per prompt ≤ "
            f"{x['listed_anchors_max']} (bound {g['listed_anchors_bound']})"
        )
    print("whole processes (median): " + " · ".join(f"{k} {v:.0f} ms" for k, v in result["processes_ms"].items()))
    print(f"{'target':<45} {'measured':>9} {'target':>8}")
    for name, value in result["summary"].items():
        target, unit, lower = TARGETS[name]
        ok = value <= target if lower else value >= target
        print(
            f"{name:<45} {value:>9.3f} {('≤ ' if lower else '≥ ') + f'{target:g}{unit}':>8}{'' if ok else '  ← miss'}"
        )
