"""The extractor as the pipeline sees it: bounded concurrency, budgets, costs, settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent.core.errors import PredigestError
from agent.extract import ExtractionResult
from agent.extract.llm import LLMConfig, LLMExtractor
from tests.fake_openai import (
    FAKE_KEY,
    FakeOpenAI,
    answer_with,
    make_config,
    make_request,
    sample_extraction,
)


def _requests(n: int):
    return [make_request(f"inbox/jay/2026-09-22-report-{i:02d}.md") for i in range(n)]


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    with FakeOpenAI(default=answer_with(sample_extraction(), delay_s=0.2)) as server:
        config = make_config(tmp_path, server.base_url, concurrency=3)
        seen: list[ExtractionResult] = []
        requests = _requests(10)
        with LLMExtractor(config) as extractor:
            results = extractor.extract_all(requests, on_result=seen.append)
        assert server.count == 10
        assert 2 <= server.max_in_flight <= 3
    assert [r.request for r in results] == requests  # request order, whatever the finish order
    assert len(seen) == 10 and {id(r) for r in seen} == {id(r) for r in results}
    assert all(r.extraction is not None for r in results)


def test_call_budget_skips_the_rest(server: FakeOpenAI, tmp_path: Path) -> None:
    config = make_config(tmp_path, server.base_url, max_calls=2, concurrency=2)
    with LLMExtractor(config) as extractor:
        results = extractor.extract_all(_requests(4))
    assert server.count == 2
    skipped = [r for r in results if r.record.source == "skipped"]
    assert len(skipped) == 2
    for result in skipped:
        assert result.extraction is None and result.record.attempts == 0
        assert "budget reached" in result.record.error and "max_calls=2" in result.record.error
    assert sum(r.extraction is not None for r in results) == 2

    # answers already paid for are still served: the cache is not the endpoint
    with LLMExtractor(config) as extractor:
        again = extractor.extract_all(_requests(4))
    assert server.count == 4
    assert sorted(r.record.source for r in again) == ["cache", "cache", "live", "live"]


def test_costs_are_the_endpoints_usage_at_the_configured_price(server: FakeOpenAI, tmp_path: Path) -> None:
    config = make_config(tmp_path, server.base_url, prices={"fake-model": (1.0, 10.0)})  # USD per 1M in / out
    with LLMExtractor(config) as extractor:
        (result,) = extractor.extract_all(_requests(1))
    assert result.record.cost_usd == pytest.approx((120 * 1.0 + 40 * 10.0) / 1e6)


# Output at $10 per 1M tokens, input free: a call's worst case is WORST_ANSWER_TOKENS of output
# ($0.04096), what it costs is the fake's 40 output tokens ($0.0004).
@pytest.mark.parametrize(
    ("cap", "concurrency", "sources"),
    [
        (0.0412, 1, ["live", "skipped", "skipped"]),  # after one answer, the next worst case would pass the cap
        (0.0412, 3, ["live", "skipped", "skipped"]),  # in flight together, the first call's reservation counts
        (0.0415, 1, ["live", "live", "skipped"]),
        (0.0415, 3, ["live", "live", "skipped"]),  # the second waits for the first to settle, then fits
        (0.0001, 2, ["skipped", "skipped", "skipped"]),  # no call's worst case fits: none is sent
    ],
)
def test_a_call_whose_worst_case_would_pass_the_cost_cap_is_not_sent(
    server: FakeOpenAI, tmp_path: Path, cap: float, concurrency: int, sources: list[str]
) -> None:
    config = make_config(
        tmp_path, server.base_url, prices={"fake-model": (0.0, 10.0)}, max_cost_usd=cap, concurrency=concurrency
    )
    with LLMExtractor(config) as extractor:
        results = extractor.extract_all(_requests(3))
        spent = extractor.budget.cost_usd
    assert sorted(r.record.source for r in results) == sorted(sources)
    assert server.count == sources.count("live") and spent <= cap
    assert all("max_cost_usd" in r.record.error for r in results if r.record.source == "skipped")


def test_cost_budget_needs_a_price(tmp_path: Path) -> None:
    with pytest.raises(PredigestError, match="no price"):
        LLMExtractor(make_config(tmp_path, "http://127.0.0.1:9/v1", max_cost_usd=1.0))


def test_unreachable_endpoint_is_an_error_result(tmp_path: Path) -> None:
    # port 9 (discard) on loopback: nothing listens, the connection is refused at once
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", max_attempts=2)
    with LLMExtractor(config) as extractor:
        (result,) = extractor.extract_all([make_request()])
    assert result.extraction is None and result.record.attempts == 2
    assert "could not reach http://127.0.0.1:9/v1 after 2 attempts" in result.record.error


def test_config_keeps_the_key_out_of_sight(tmp_path: Path) -> None:
    config = make_config(tmp_path, "http://127.0.0.1:9/v1")
    assert FAKE_KEY not in repr(config) and FAKE_KEY not in str(config.public_dict())
    assert config.with_(backend="auto").effective_backend == "live"
    assert config.with_(backend="auto", api_key="").effective_backend == "replay"
    with pytest.raises(PredigestError, match="needs an API key"):
        LLMExtractor(config.with_(backend="live", api_key=""))
    with pytest.raises(PredigestError, match="concurrency"):
        LLMConfig().with_(concurrency=0)
    assert LLMConfig(cache_dir=None).cache_dir is None
    assert "predigest" in str(LLMConfig().cache_dir)  # platformdirs, redirected by the autouse fixture
    assert str(LLMConfig().cache_dir).startswith(os.environ["XDG_CACHE_HOME"])


def test_a_run_answered_from_the_cache_makes_no_network_transport(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Making the network transport loads the CA certificates; only a request that goes out needs it."""
    from agent.extract.llm import transport

    made: list[str] = []
    real = transport.network_transport
    monkeypatch.setattr(transport, "network_transport", lambda url: made.append(url) or real(url))
    with FakeOpenAI(default=answer_with(sample_extraction())) as server:
        config = make_config(tmp_path, server.base_url, backend="live")
        for expected_made, expected_sent in ((1, 3), (0, 0)):  # cold, then warm
            made.clear()
            server.reset_stats()
            with LLMExtractor(config) as extractor:
                results = extractor.extract_all(_requests(3))
            assert all(r.extraction is not None for r in results)
            assert (len(made), server.count) == (expected_made, expected_sent)


def test_the_cache_keeps_answers_without_their_request_and_a_recording_from_it_has_it(tmp_path: Path) -> None:
    """The request body is what the key hashes, and most of an exchange's bytes: the cache keeps
    the answer alone. Recording from the cache, with no endpoint, still writes whole cassettes."""
    import json

    import diskcache

    from agent.extract.llm.cassettes import body_key, read_cassette

    with FakeOpenAI(default=answer_with(sample_extraction())) as server:
        config = make_config(tmp_path, server.base_url, backend="live")
        with LLMExtractor(config) as extractor:
            assert all(r.extraction is not None for r in extractor.extract_all(_requests(3)))
    with diskcache.Cache(str(config.cache_dir)) as cache:
        kept = [json.loads(cache[k]) for k in cache if str(k).startswith("exchange/")]
    assert len(kept) == 3 and all(e["request_body"] is None and e["response_body"] for e in kept)
    offline = config.model_copy(update={"backend": "record", "base_url": "http://127.0.0.1:9/v1"})
    with LLMExtractor(offline) as extractor:
        assert all(r.extraction is not None for r in extractor.extract_all(_requests(3)))
    cassettes = [read_cassette(f) for f in sorted(config.cassette_dir.glob("*.json"))]
    assert len(cassettes) == 3
    assert all(body_key(c.exchange.request_body) == c.exchange.key for c in cassettes)


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_cached_and_replayed_records_say_what_the_live_one_said(server: FakeOpenAI, tmp_path: Path, mode: str) -> None:
    """The same requests answered live, then from the cache, then from cassettes: the same
    extraction, request hash and tokens; nothing paid after the first run; one exchange each."""
    requests = [
        make_request(f"inbox/jay/2026-09-22-r{i}.md", document=f"第 {i} 篇：vLLM 0.{i} 默认开启前缀缓存。")
        for i in range(3)
    ]
    record = make_config(tmp_path, server.base_url, mode=mode)
    with LLMExtractor(record) as extractor:
        first = extractor.extract_all(requests)
    assert server.count == 3 and all(r.record.source == "live" for r in first)
    with LLMExtractor(record.with_(backend="live")) as extractor:
        warm = extractor.extract_all(requests)
    with LLMExtractor(record.with_(backend="replay", cache_dir=None)) as extractor:
        replayed = extractor.extract_all(requests)
    assert server.count == 3  # the cache and the cassettes answered every one
    for a, w, r in zip(first, warm, replayed, strict=True):
        assert w.extraction == r.extraction == a.extraction
        assert (w.record.source, r.record.source) == ("cache", "cassette")
        assert w.record.request_hash == r.record.request_hash == a.record.request_hash != ""
        assert (w.record.input_tokens, w.record.output_tokens) == (a.record.input_tokens, a.record.output_tokens)
        assert (r.record.input_tokens, r.record.attempts, r.record.cost_usd) == (a.record.input_tokens, 1, 0.0)
        assert w.record.cost_usd == 0.0
        assert r.record.cassette == a.record.cassette != ""
