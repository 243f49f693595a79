"""A validated answer kept for a request (the cache when live, a cassette when replaying) is
served without the openai client: the key must be the one the client's request would have, the
call record must say the same as when the transport served it, and anything unusual must still
go through the client."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.extract.llm import LLMExtractor
from agent.extract.llm.reference import current_request_body
from tests.fake_openai import FakeOpenAI, make_config, make_request


def _requests() -> list:
    return [
        make_request(f"inbox/jay/2026-09-22-r{i}.md", document=f"第 {i} 篇：vLLM 0.{i} 默认开启前缀缓存。")
        for i in range(3)
    ]


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_the_body_is_the_one_the_client_sends(tmp_path: Path, mode: str) -> None:
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", mode=mode, backend="replay")
    with LLMExtractor(config) as extractor:
        for request in _requests():
            assert extractor._body(request) == current_request_body(request, config)


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_warm_and_replayed_records_match_the_transports(server: FakeOpenAI, tmp_path: Path, mode: str) -> None:
    record = make_config(tmp_path, server.base_url, mode=mode)
    with LLMExtractor(record) as extractor:
        first = extractor.extract_all(_requests())
    assert server.count == 3 and all(r.record.source == "live" for r in first)

    live = record.with_(backend="live")
    with LLMExtractor(live) as extractor:
        warm = extractor.extract_all(_requests())
        assert extractor._client is None  # stored answers need no client: it was never built
    assert server.count == 3  # the cache answered every one
    replay = record.with_(backend="replay", cache_dir=None)
    with LLMExtractor(replay) as extractor:
        replayed = extractor.extract_all(_requests())
        assert extractor._client is None
    for a, w, r in zip(first, warm, replayed, strict=True):
        assert w.extraction == r.extraction == a.extraction
        assert (w.record.source, r.record.source) == ("cache", "cassette")
        assert w.record.request_hash == r.record.request_hash == a.record.request_hash != ""
        assert (w.record.input_tokens, w.record.output_tokens) == (a.record.input_tokens, a.record.output_tokens)
        assert (r.record.input_tokens, r.record.attempts, r.record.cost_usd) == (a.record.input_tokens, 1, 0.0)
        assert r.record.cassette == a.record.cassette != ""


def test_a_replay_miss_still_names_the_nearest_cassette(server: FakeOpenAI, tmp_path: Path) -> None:
    record = make_config(tmp_path, server.base_url)
    with LLMExtractor(record) as extractor:
        extractor.extract_all(_requests()[:1])
    edited = make_request("inbox/jay/2026-09-22-r0.md", document="第 0 篇：改过的文字。")
    with LLMExtractor(record.with_(backend="replay", cache_dir=None)) as extractor:
        (result,) = extractor.extract_all([edited])
    assert result.extraction is None
    assert "inbox-jay-2026-09-22-r0" in result.record.error
