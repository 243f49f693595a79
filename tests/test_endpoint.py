"""The simulated endpoint of the load benchmark (`eval/endpoint.py`), through the real client.

What the benchmark's figures rest on: the endpoint answers each document with an extraction the
rule layer accepts (quotes found, IDs written there), in the request's structured-output mode;
it fails on demand and the run recovers; it really holds `concurrency` requests at once; and it
measures the prompt prefix that every request shares. No test here times anything.
"""

from __future__ import annotations

import datetime as dt
import random
import subprocess
import sys
from pathlib import Path

import pytest

from agent.core.text import locate
from agent.extract.llm import LLMExtractor
from agent.pipeline import Settings, plan, run
from benchmarks.endpoint import Endpoint, extraction_for, request_document, simulated
from benchmarks.evening import report
from schemas.extraction import FileExtraction
from tests.fake_openai import FAKE_KEY, make_config
from tests.paths import ROOT, WORLD

DATE = dt.date(2026, 9, 22)


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_a_live_run_of_the_demo_evening_is_answered_and_grounded(tmp_path: Path, mode: str) -> None:
    with Endpoint(simulated()) as endpoint:
        settings = Settings(
            workspace=WORLD,
            topic="inference",
            date=DATE,
            out=tmp_path / "b.md",
            backend="live",
            api_key=FAKE_KEY,
            base_url=endpoint.base_url,
            mode=mode,
            no_cache=True,
        )
        report_ = run(settings)
    bodies = [r.body for r in endpoint.requests]
    assert bodies and all(("tools" in b) == (mode == "tools") for b in bodies)
    assert all(("response_format" in b) == (mode == "json_schema") for b in bodies)
    assert all(r.source == "live" and not r.error for r in report_.records)
    assert report_.composed.briefing.increments  # the rules kept what the endpoint claimed
    dropped = [f for f in report_.findings if f.rule == "grounding" and f.decision == "dropped"]
    assert dropped == []  # every quote and every arXiv ID was found in its document


def test_failures_are_retried_and_the_evening_completes(tmp_path: Path) -> None:
    requests = plan(Settings(workspace=WORLD, topic="inference", date=DATE), for_writing=False).requests
    # one worker: the seeded failures fall on the same requests every time
    with Endpoint(simulated(error_rate=0.3, seed=3)) as endpoint:
        config = make_config(tmp_path, endpoint.base_url, backend="live", concurrency=1, max_attempts=8)
        with LLMExtractor(config) as extractor:
            results = extractor.extract_all(requests)
    assert endpoint.count > len(requests)  # some answers were 429 / 500 and were asked again
    assert all(r.extraction is not None and not r.record.error for r in results)
    assert sum(r.record.attempts for r in results) == endpoint.count


def test_requests_in_flight_reach_the_concurrency_limit(tmp_path: Path) -> None:
    requests = plan(Settings(workspace=WORLD, topic="inference", date=DATE), for_writing=False).requests[:8]
    with Endpoint(simulated(latency_s=0.2)) as endpoint:
        config = make_config(tmp_path, endpoint.base_url, backend="live", concurrency=4, cache_dir=None)
        with LLMExtractor(config) as extractor:
            extractor.extract_all(requests)
        stats = endpoint.stats()
    assert stats["requests"] == 8
    assert stats["max_in_flight"] == 4


def test_the_shared_prompt_prefix_is_measured(tmp_path: Path) -> None:
    requests = plan(Settings(workspace=WORLD, topic="inference", date=DATE), for_writing=False).requests[:3]
    with Endpoint(simulated()) as endpoint:
        config = make_config(tmp_path, endpoint.base_url, backend="live", cache_dir=None)
        with LLMExtractor(config) as extractor:
            extractor.extract_all(requests)
        stats = endpoint.stats()
    # the schema and the system prompt are common; each document is not
    assert stats["common_prefix_tokens"] > 500
    assert 0.0 < stats["prefix_share_min"] <= stats["prefix_share_mean"] < 1.0


@pytest.mark.parametrize(
    ("document", "claims", "relevance"),
    [
        ("", 0, "参考"),
        ("没有标题的一段话，也没有可以引用的条目。", 0, "参考"),
        ("## 条目 1：vLLM\n\nvLLM 在 H100 上开启前缀缓存后吞吐提升 12.5%。", 1, "高"),
        ("## 条目 1：短\n\n太短。", 0, "参考"),  # a sentence under 12 characters is not quoted
        (
            "## A\n\n论文 arXiv:2609.19657 给出了前缀缓存的消融实验结果。\n"
            "## B\n\n第二节也有一个足够长的句子可以引用。",
            2,
            "高",
        ),
    ],
)
def test_extraction_for_a_document(document: str, claims: int, relevance: str) -> None:
    answer = FileExtraction.model_validate(extraction_for(document))
    assert (len(answer.claims), answer.relevance) == (claims, relevance)
    for claim in answer.claims:
        assert all(locate(q, document).kind == "exact" for q in claim.evidence)
        assert all(a.arxiv_id in document for a in claim.arxiv)


def test_extraction_for_a_generated_report_is_grounded() -> None:
    text = report(random.Random(5), 8000)
    answer = FileExtraction.model_validate(extraction_for(text))
    assert len(answer.claims) == 3
    assert all(text.count(q) for c in answer.claims for q in c.evidence)


def test_request_document_reads_the_prompt_envelope() -> None:
    user = 'x\n<document path="a/b.md">\n正文\n</document>'
    body = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": user}]}
    assert request_document(body) == ("a/b.md", "正文")
    assert request_document({"messages": []}) == ("", "")


def test_the_endpoint_runs_as_its_own_process_until_stdin_closes() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.endpoint", "--latency-ms", "0"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    url = proc.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
