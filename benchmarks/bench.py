"""Speed, measured: `python -m benchmarks.bench` prints timings against the targets in the README.

`python -m benchmarks.bench` times the deterministic parts on the demo; `--load [--json]` runs a
generated evening live against a latency-simulating endpoint (see eval/loadbench.py).

Targets are numbers to look at, not assertions in unit tests: a loaded CI machine must not
turn a slow moment into a red build.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from agent.core.text import locate
from agent.extract.offline.extractor import context, extract_document
from agent.pipeline import Settings, run
from agent.plan.anchors import build_registry
from agent.plan.ingest import scan, sources
from agent.plan.parse import parse
from agent.plan.workspace import load_workspace
from agent.rules.claims import DocResult
from agent.rules.dedupe import dedupe
from agent.rules.grounding import ground
from agent.rules.merge import merge
from agent.rules.select import select
from agent.write.page import load_record, render_page
from agent.write.render import render
from benchmarks import loadbench
from benchmarks.loadbench import median_ms
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import Claim, FileExtraction

ROOT = Path(__file__).resolve().parent.parent
WORLD = ROOT / "examples" / "world"
DATE = dt.date(2026, 9, 22)
TOPIC = "inference"
SEED_GOLD = ROOT / "eval" / "cases" / "2026-09-22-inference" / "gold.md"

# name -> (target in ms, what it measures)
TARGETS = {
    "parse+render the seed": 50.0,
    "scan + anchors, demo evening": 300.0,
    "ground 30 quotes in a 20 kB document": 100.0,
    "rules on 400 claims from 40 documents": 1500.0,
    "demo run, replayed (cold process excluded)": 3000.0,
    "offline extraction, demo evening (14 documents)": 1000.0,
    "demo run, offline extractor": 3000.0,
    "briefing page from the demo run's JSON": 500.0,
}


def _synthetic_claims() -> list[DocResult]:
    body = "\n".join(f"## 条目 {i}\n引擎 {i} 的吞吐提升 {i}.5%，延迟 {i * 3} ms，flag --opt-{i}。" for i in range(10))
    results = []
    for d in range(40):
        doc = SourceDoc(path=f"inbox/x/2026-09-22-{d:02d}.md", kind="report", read=True, in_window=True, text=body)
        claims = [
            Claim(
                title=f"引擎 {i} 吞吐 文档{d}",
                stars=3 + i % 3,
                key_points=[KeyPoint(text=f"吞吐提升 {i}.5%")],
                evidence=[f"引擎 {i} 的吞吐提升 {i}.5%"],
                section_ref=f"§条目 {i}",
                credibility="高",
                credibility_reason="r",
                relation="new",
                relation_note="n",
                suggested_section=f"§1.{i % 3 + 1} x",
            )
            for i in range(10)
        ]
        results.append(DocResult(doc, FileExtraction(relevance="高", relevance_reason="r", held="h", claims=claims)))
    return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--load", action="store_true", help="the load benchmark against a simulated endpoint")
    parser.add_argument("--json", action="store_true", help="with --load: print the figures as JSON")
    parser.add_argument("--docs", type=int, default=200, help="documents in the generated evening")
    parser.add_argument(
        "--c1-docs", type=int, default=40, help="documents for the c=1 row (its efficiency is per call, so comparable)"
    )
    parser.add_argument("--latency-ms", type=float, default=500.0)
    parser.add_argument("--history", type=int, default=100, help="earlier evenings for the growth rows")
    parser.add_argument("--living-anchors", type=int, default=2000, help="anchors in the grown living document")
    parser.add_argument(
        "--row-repeat", type=int, default=3, help="runs of each row with a target (their median is reported)"
    )
    parser.add_argument("--load-row", help=argparse.SUPPRESS)  # internal: one live row, in a child process
    args = parser.parse_args(argv)
    if args.load_row:
        print(json.dumps(loadbench.run_row(json.loads(args.load_row))))
    elif args.load:
        result = loadbench.measure(
            args.docs, args.c1_docs, args.latency_ms, args.history, args.living_anchors, row_repeat=args.row_repeat
        )
        if args.json:
            print(json.dumps(result, ensure_ascii=False, indent=2))
        else:
            loadbench.print_report(result)
    else:
        demo()


def demo() -> None:
    seed_text = SEED_GOLD.read_text(encoding="utf-8")
    ws = load_workspace(WORLD)
    docs = scan(ws, "inference", DATE)
    reg = build_registry(docs, "inference", DATE)
    big = next(d for d in docs if d.name == "2026-09-22-inference-engineering-filter.md").text
    raw = [big[i : i + 40] for i in range(0, min(len(big) - 40, 30 * 250), 250)][:30]
    # a third exact, a third with whitespace changed (folded), a third with one character off (fuzzy)
    quotes = [
        q if i % 3 == 0 else q.replace(" ", "\n  ") if i % 3 == 1 else q[:20] + "X" + q[21:] for i, q in enumerate(raw)
    ]
    synthetic = _synthetic_claims()

    def rules() -> None:
        cands, _ = ground(synthetic)
        kept, _, _ = dedupe(cands, reg)
        groups, _ = merge(kept)
        select(groups, min_stars=4, secondary_min_stars=3, max_increments=8)

    out = Path(tempfile.mkdtemp()) / "b.md"
    settings = Settings(
        workspace=WORLD, topic="inference", date=DATE, out=out, force=True, backend="replay", no_cache=True
    )
    offline = Settings(
        workspace=WORLD, topic="inference", date=DATE, out=out, force=True, backend="offline", no_cache=True
    )
    living = next(d.text for d in docs if d.kind == "living")

    def offline_extraction() -> None:
        # a fresh context: every document parsed and scored from its text
        ctx = context("inference", ws.topic("inference"), reg, living)
        for doc in sources(docs):
            extract_document(doc, ctx)

    def timed(fn: Callable[[], object], repeat: int) -> float:
        return median_ms(fn, repeat, warm_up=True)

    measured = {
        "parse+render the seed": timed(lambda: render(parse(seed_text)), 20),
        "scan + anchors, demo evening": timed(lambda: build_registry(scan(ws, TOPIC, DATE), TOPIC, DATE), 5),
        "ground 30 quotes in a 20 kB document": timed(lambda: [locate(q, big) for q in quotes], 20),
        "rules on 400 claims from 40 documents": timed(rules, 3),
        "demo run, replayed (cold process excluded)": timed(lambda: run(settings), 3),
        "offline extraction, demo evening (14 documents)": timed(offline_extraction, 5),
        "demo run, offline extractor": timed(lambda: run(offline), 3),
        "briefing page from the demo run's JSON": timed(lambda: render_page(load_record(out.with_suffix(".json"))), 5),
    }
    width = max(map(len, measured))
    print(f"{'what':<{width}}  {'median ms':>10}  {'target ms':>10}")
    for name, ms in measured.items():
        flag = "" if ms <= TARGETS[name] else "  ← over target"
        print(f"{name:<{width}}  {ms:>10.1f}  {TARGETS[name]:>10.0f}{flag}")


if __name__ == "__main__":
    main()
