"""The load benchmark: what an evening costs against a simulated endpoint, beside docs/reference.md's targets.

`python -m benchmarks.bench [--json]` generates a 200-document evening (`benchmarks/evening.py`) and
the same evening after 100 evenings of history, serves them from a latency-simulating
OpenAI-compatible endpoint on loopback (`benchmarks/endpoint.py`), and runs each row `--repeat`
times, each in a fresh process, reporting the median. The claim under test: a live run costs
`calls × latency ÷ concurrency`, and what the process does besides is small beside it, also after
months of history. `--topics` compares per-topic and shared extraction of three topics; `--span`
runs seven evenings in order (`predigest run --from --to --apply-patch`), so that the history
each evening reads is the one the evenings before it wrote.

Targets are numbers to read, not assertions: a shared machine must not turn a slow minute into a
red build. The suite runs a tiny evening through this module only to check that it reports every
target.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

from benchmarks.endpoint import Endpoint, simulated
from benchmarks.evening import DATE, TOPIC, span_dates, write_evening

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
SPAN_TARGET = "span of 7 evenings: last evening / first"  # `--span`'s own row, measured apart
TARGETS[SPAN_TARGET] = (1.2, "×", True)


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
    """One row in this process: a span's (`span_row`) for a spec with a span, every topic's
    (`topics_row`) for a spec with an extraction, else one evening."""
    if "span" in spec:
        return span_row(spec)
    return topics_row(spec) if "extraction" in spec else run_row(spec)


# --- a span of evenings, as `predigest run --from --to --apply-patch` runs it ----------------------------


class _Stamped(io.StringIO):
    """A stdout that notes when each piece of output was written: a span prints each evening as it
    ends, so the time its last line arrives is when that evening (its patch and log included) ended.
    The product says only its run's seconds (without the patch), rounded to a tenth; nothing is added
    to it to time an evening."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[tuple[int, float]] = []  # (characters written so far, when)

    def write(self, s: str) -> int:
        n = super().write(s)
        self.stamps.append((self.tell(), time.perf_counter()))
        return n

    def lines(self) -> list[tuple[str, float]]:
        """Each line printed, with when its end was written."""
        out, start, stamps = [], 0, iter(self.stamps)
        end, when = next(stamps, (0, 0.0))
        for line in self.getvalue().splitlines(keepends=True):
            start += len(line)
            while end < start:
                end, when = next(stamps)
            out.append((line.rstrip("\n"), when))
        return out


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """`values` in os.environ for the block (the CLI reads its key, endpoint and run log from there),
    with the settings a developer's shell may hold that would send it elsewhere removed; put back after."""
    saved = dict(os.environ)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PREDIGEST_MODEL", "PREDIGEST_CACHE_DIR", "PREDIGEST_LOGS_DB"):
        os.environ.pop(var, None)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _cli(args: list[str]) -> tuple[int, _Stamped, str]:
    """`predigest ARGS` through the CLI's entry point in this process: its status, its stamped
    stdout and its stderr."""
    from agent.cli import main

    stdout, stderr = _Stamped(), io.StringIO()
    with redirect_stdout(stdout), redirect_stderr(stderr):
        try:
            main(args)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return code, stdout, stderr.getvalue()


def span_args(spec: dict[str, Any]) -> list[str]:
    """The span's command line after `predigest`: one topic, every evening's patch applied, live, no cache."""
    first, last = spec["span"]
    args = ["run", str(spec["workspace"]), "--topic", TOPIC, "--from", first, "--to", last, "--apply-patch"]
    return [*args, "--backend", "live", "--no-cache", "--concurrency", str(spec["concurrency"])]


def span_row(spec: dict[str, Any]) -> dict[str, Any]:
    """`predigest run --from --to --apply-patch` through the CLI in this (fresh) process, each
    evening's figures read from what the span printed and wrote. A one-document evening runs first,
    through the CLI too: it pays what any process pays once (the imports, the client, the response
    model), which would otherwise fall on the first evening alone and flatter the ratio (reported apart)."""
    environment = {"OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": spec["base_url"], "PREDIGEST_LOGS_DB": spec["logs"]}
    with _environment(environment):
        warm = ["run", spec["first"], "--topic", TOPIC, "--date", DATE.isoformat(), "--out", spec["out"], "--force"]
        t = time.perf_counter()
        code, _, said = _cli([*warm, "--backend", "live", "--no-cache"])
        first_s = time.perf_counter() - t
        if code:
            raise RuntimeError(f"the one-document evening failed ({code}):\n{said[-2000:]}")
        reset = urllib.request.Request(spec["base_url"] + "/_reset", data=b"{}", method="POST")
        urllib.request.urlopen(reset, timeout=10).close()  # the endpoint counts the span only
        t = time.perf_counter()
        code, stdout, said = _cli(span_args(spec))
        wall = time.perf_counter() - t
    if code:
        raise RuntimeError(f"the span failed ({code}):\n{stdout.getvalue()[-2000:]}\n{said[-2000:]}")
    evenings = span_evenings(stdout.lines(), t)
    before = Path(evenings[0]["previous"]).stat().st_size if evenings and evenings[0]["previous"] else 0
    calls = sum(e["calls"] for e in evenings)
    return {"wall_s": wall, "first_evening_s": first_s, "evenings": evenings, "calls": calls, "living_before": before}


_EVENING = re.compile(r"^evening (\d{4}-\d{2}-\d{2}):$")
_WROTE = re.compile(r"^wrote (.+\.md) \(\+ \.json, \.calls\.jsonl\)$")
_SECONDS = re.compile(r"^calls \d+ .* · (\d+(?:\.\d+)?)s$")
_PATCHED = re.compile(r"^patched (.+) \(previous version: (.+)\)$")


def span_evenings(lines: list[tuple[str, float]], started: float) -> list[dict[str, Any]]:
    """Each evening of a span from its printed block (`evening D:` … `patched …`) and the files it
    names: its wall time (from the end of the block before, or `started`, to the end of its own),
    the run's own seconds as the span printed them, its calls and prompt tokens from its call
    record, and the living document's size once its patch is in (the previous version of the next
    evening's patch, or the document itself after the last)."""
    blocks: list[list[tuple[str, float]]] = []
    for line, when in lines:
        if _EVENING.match(line):
            blocks.append([])
        if blocks and not line.startswith("span "):
            blocks[-1].append((line, when))
    evenings, before = [], started
    for block in blocks:
        found = {rx: m for rx in (_EVENING, _WROTE, _SECONDS, _PATCHED) for line, _ in block if (m := rx.match(line))}
        briefing = Path(found[_WROTE][1]) if _WROTE in found else None
        calls = [] if briefing is None else _records(briefing.with_suffix(".calls.jsonl"))
        patched = found.get(_PATCHED)
        end = block[-1][1]
        evenings.append(
            {
                "date": found[_EVENING][1],
                "wall_s": end - before,
                "run_s": float(found[_SECONDS][1]) if _SECONDS in found else None,
                "calls": len(calls),
                "sources": dict(Counter(r["source"] for r in calls)),
                "prompt_tokens": sum(r["input_tokens"] for r in calls),
                "briefing": bool(briefing and briefing.is_file() and briefing.with_suffix(".json").is_file()),
                "living": patched[1] if patched else None,
                "previous": patched[2] if patched else None,
            }
        )
        before = end
    afterwards = [e["previous"] for e in evenings[1:]] + [e["living"] for e in evenings[-1:]]
    for e, after in zip(evenings, afterwards, strict=True):
        text = Path(after).read_text(encoding="utf-8") if after else ""
        e["living_bytes"], e["living_lines"] = len(text.encode()), text.count("\n")
    return evenings


def _records(path: Path) -> list[dict[str, Any]]:
    """An evening's call record (one JSON object a line), [] when it was not written."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.is_file() else []


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
        own = {"OPENAI_API_KEY": "", "PREDIGEST_LOGS_DB": str(Path(out) / "logs.db")}  # never the user's run log
        subprocess.run([*entry, *demo_args(out)], capture_output=True, check=True, env=env | own)
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


def measure_span(
    docs: int = 40, evenings: int = 7, concurrency: int = 16, latency_ms: float = 500, repeat: int = 3
) -> dict[str, Any]:
    """A span of `evenings` evenings of `docs` reports each, live at `latency_ms` with `concurrency`
    in flight, `repeat` times, each in a fresh process on a fresh copy of the generated workspace
    (a span writes into its inbox and living document) against a fresh provider (its prompt cache
    cold). Each evening's wall time (and the run's own seconds) is the median of the runs; the
    target is the median of the runs' last / first. 40 reports make 40 or 41 requests (a long one
    is sent in two parts on some evenings): three rounds of 16 on every evening, so no evening
    waits a round more than another for a reason that is not its history."""
    load = os.getloadavg()[0]
    env = child_env()
    days = span_dates(evenings)
    with tempfile.TemporaryDirectory(prefix="predigest-span-") as tmp:
        base = Path(tmp)
        seeded, first = write_evening(base / "span", docs, evenings=evenings), write_evening(base / "first", 1, seed=1)
        runs = []
        for i in range(repeat):
            workspace = shutil.copytree(seeded, base / f"run-{i}")
            spec = {"span": [days[0].isoformat(), days[-1].isoformat()], "workspace": workspace, "first": first}
            spec |= {"out": base / "out", "logs": base / f"logs-{i}.db", "concurrency": concurrency}
            with Endpoint(simulated(latency_ms / 1000), keep_bodies=False) as endpoint:
                runs.append(live_row(endpoint, spec, env))
    ratios = [r["evenings"][-1]["wall_s"] / r["evenings"][0]["wall_s"] for r in runs]
    middle = runs[sorted(range(len(runs)), key=ratios.__getitem__)[(len(runs) - 1) // 2]]
    table = []  # calls, tokens and sizes are the same in every run (the workspace and answers are)
    for i, e in enumerate(middle["evenings"]):
        walls = [r["evenings"][i]["wall_s"] for r in runs]
        run_s = statistics.median(r["evenings"][i]["run_s"] or 0.0 for r in runs)
        table.append({**e, "run_s": run_s, "wall_s": statistics.median(walls), "wall_s_runs": walls})
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    machine += f", load average {load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    setup = {"machine": machine, "documents": docs, "concurrency": concurrency, "latency_ms": latency_ms}
    figures = {"evenings": table, "ratio_runs": ratios, "runs": runs}
    return setup | {"topic": TOPIC, **figures, "summary": {SPAN_TARGET: statistics.median(ratios)}}


def print_span(result: dict[str, Any]) -> None:
    print(
        f"span · {len(result['evenings'])} evenings × {result['documents']} documents · topic {result['topic']} · "
        f"{result['latency_ms']:g} ms · {result['concurrency']} in flight · {result['machine']}"
    )
    head = f"{'evening':<10} {'calls':>5} {'prompt tokens':>13} {'living B':>9} {'lines':>5} {'run s':>5}"
    print(f"{head}  wall s (runs)")
    for e in result["evenings"]:
        runs = " / ".join(f"{w:.2f}" for w in e["wall_s_runs"])
        print(
            f"{e['date']:<10} {e['calls']:>5} {e['prompt_tokens']:>13} {e['living_bytes']:>9} {e['living_lines']:>5} "
            f"{e['run_s']:>5.1f}  {e['wall_s']:.2f} ({runs})"
        )
    first = " / ".join(f"{r['first_evening_s']:.2f}" for r in result["runs"])
    print(f"living document before the span: {result['runs'][0]['living_before']} B")
    print(f"one-document evening before the span (apart): {first} s")
    print("last / first, each run: " + " / ".join(f"{x:.3f}" for x in result["ratio_runs"]))
    print_targets(result["summary"])


def print_targets(summary: dict[str, float]) -> None:
    """Each measured target beside its bound, a miss marked."""
    print(f"{'target':<50} {'measured':>9} {'target':>8}")
    for name, value in summary.items():
        target, unit, lower = TARGETS[name]
        ok = value <= target if lower else value >= target
        bound = ("≤ " if lower else "≥ ") + f"{target:g}{unit}"
        print(f"{name:<50} {value:>9.3f} {bound:>8}{'' if ok else '  ← miss'}")


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
    print_targets(result["summary"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print every figure as JSON")
    parser.add_argument("--docs", type=int, help="documents in the generated evening (200; 40 an evening with --span)")
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each row (their median is reported)")
    parser.add_argument("--topics", action="store_true", help="three topics, per-topic vs shared extraction")
    parser.add_argument("--span", action="store_true", help="evenings in order, each patch applied before the next")
    parser.add_argument("--evenings", type=int, default=7, help="evenings of the --span row")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # internal: one live row, in a child process
    args = parser.parse_args(argv)
    if args.row:
        print(json.dumps(row(json.loads(args.row))))
        return
    if args.span:
        span = measure_span(args.docs or 40, args.evenings, latency_ms=args.latency_ms, repeat=args.repeat)
        print(json.dumps(span, ensure_ascii=False, indent=2, default=str) if args.json else "", end="")
        if not args.json:
            print_span(span)
        return
    if args.topics:
        topics = measure_topics(args.docs or 200, latency_ms=args.latency_ms, repeat=args.repeat)
        print(json.dumps(topics, indent=2, default=str) if args.json else "", end="")
        if not args.json:
            print_topics(topics)
        return
    result = measure(args.docs or 200, latency_ms=args.latency_ms, repeat=args.repeat)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2, default=str))
    else:
        print_report(result)


if __name__ == "__main__":
    main()
