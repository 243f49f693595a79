"""Transport retries, timeouts, validation re-asks and broken replies, over real HTTP."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent.extract.llm import LLMExtractor
from tests.fake_openai import (
    FakeOpenAI,
    Reply,
    completion,
    make_config,
    make_request,
    sample_extraction,
)

ERROR_BODY = {"error": {"message": "slow down", "type": "rate_limit_error"}}


def _one(config, request=None):
    with LLMExtractor(config) as extractor:
        (result,) = extractor.extract_all([request or make_request()])
    return result


def test_429_honours_retry_after(server: FakeOpenAI, tmp_path: Path) -> None:
    server.push(Reply(status=429, body=ERROR_BODY, headers={"Retry-After": "1"}))
    started = time.monotonic()
    result = _one(make_config(tmp_path, server.base_url))
    waited = time.monotonic() - started
    assert result.extraction is not None and not result.record.error
    assert result.record.attempts == 2 and server.count == 2
    assert waited >= 0.95  # the server's second, not our 10 ms backoff
    assert result.record.source == "live"
    # the openai client did not retry on its own: the retry-count header never moved
    assert {r.headers.get("x-stainless-retry-count") for r in server.requests} == {"0"}


def test_5xx_then_success(server: FakeOpenAI, tmp_path: Path) -> None:
    server.push(Reply(status=500, body=ERROR_BODY), Reply(status=503, body=ERROR_BODY))
    result = _one(make_config(tmp_path, server.base_url))
    assert result.extraction is not None
    assert result.record.attempts == 3 and server.count == 3


def test_always_500_gives_an_error_result_after_max_attempts(tmp_path: Path) -> None:
    with FakeOpenAI(default=lambda body: Reply(status=500, body=ERROR_BODY)) as server:
        config = make_config(tmp_path, server.base_url, max_attempts=4)
        result = _one(config)
        assert server.count == 4
    assert result.extraction is None
    assert result.record.attempts == 4
    assert "HTTP 500" in result.record.error and "after 4 attempts" in result.record.error
    assert not list(config.cassette_dir.glob("*.json"))  # failures are neither recorded ...
    config.cassette_dir.mkdir(exist_ok=True)
    again = _one(config.with_(backend="replay"))
    assert "no cassette" in again.record.error  # ... nor replayable


def test_slow_reply_is_retried_then_fails(tmp_path: Path) -> None:
    slow = Reply(body=completion({"tools": None}, sample_extraction()), delay_s=1.0)
    with FakeOpenAI(default=lambda body: slow) as server:
        result = _one(make_config(tmp_path, server.base_url, timeout_s=0.4, max_attempts=2))
        assert server.count == 2
    assert result.extraction is None
    assert result.record.attempts == 2
    assert "timed out after 2 attempts" in result.record.error


def test_slow_reply_then_fast_one_succeeds(server: FakeOpenAI, tmp_path: Path) -> None:
    server.push(Reply(status=200, body={"never": "read"}, delay_s=1.0))
    result = _one(make_config(tmp_path, server.base_url, timeout_s=0.4))
    assert result.extraction is not None and result.record.attempts == 2


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_schema_invalid_answer_is_reasked(server: FakeOpenAI, tmp_path: Path, mode: str) -> None:
    bad = sample_extraction()
    bad["claims"][0]["stars"] = 9
    server.push(lambda body: Reply(body=completion(body, bad)))
    config = make_config(tmp_path, server.base_url, mode=mode)

    result = _one(config)
    assert result.extraction is not None and result.extraction.claims[0].stars == 4
    assert server.count == 2
    reask = server.requests[1].body["messages"]
    assert len(reask) == 4  # system, user, the failed answer, the error
    assert "stars" in reask[-1]["content"] and "less than or equal to 5" in reask[-1]["content"]
    assert result.record.attempts == 2
    assert (result.record.input_tokens, result.record.output_tokens) == (240, 80)  # both answers
    cassettes = sorted(config.cassette_dir.glob("*.json"))
    assert len(cassettes) == 2  # the re-ask is its own exchange
    assert result.record.cassette.count(".json") == 2

    replayed = _one(config.with_(backend="replay", cache_dir=None))
    assert server.count == 2
    assert replayed.extraction == result.extraction
    assert replayed.record.attempts == 2 and replayed.record.source == "cassette"


def test_answer_that_never_validates_is_an_error(tmp_path: Path) -> None:
    bad = copy.deepcopy(sample_extraction())
    bad["relevance"] = "very"
    with FakeOpenAI(default=lambda body: Reply(body=completion(body, bad))) as server:
        result = _one(make_config(tmp_path, server.base_url, max_validation_retries=1))
        assert server.count == 2
    assert result.extraction is None
    assert "never fit the schema after 2 attempts" in result.record.error
    assert "relevance" in result.record.error


def test_malformed_body_is_a_clean_error(tmp_path: Path) -> None:
    broken = Reply(raw=b"<html>502 Bad Gateway</html>", headers={"content-type": "application/json"})
    with FakeOpenAI(default=lambda body: broken) as server:
        config = make_config(tmp_path, server.base_url)
        result = _one(config)
    assert result.extraction is None
    assert "not JSON" in result.record.error and "<html>" in result.record.error
    assert not list(config.cassette_dir.glob("*.json"))


@pytest.mark.parametrize("cached", [True, False], ids=["cache", "no-cache"])
def test_ctrl_c_stops_retries_and_new_requests_within_two_seconds(
    server: FakeOpenAI, tmp_path: Path, cached: bool
) -> None:
    """A server that keeps saying 'come back in 30 s': Ctrl-C must not wait that out, nor send
    the queued documents, and it says how far the run got and whether its answers are cached."""
    import os
    import signal
    import threading

    from agent.extract.llm.extractor import RunInterrupted

    server.default = lambda body: Reply(status=429, body=ERROR_BODY, headers={"Retry-After": "30"})
    config = make_config(tmp_path, server.base_url, concurrency=2, max_attempts=10, max_total_s=300.0)
    if not cached:
        config = config.with_(cache_dir=None)
    requests = [make_request(f"inbox/jay/2026-09-22-{i:04d}-doc.md") for i in range(8)]
    timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))  # a real Ctrl-C
    # a shell that starts the tests in the background ignores SIGINT; at a terminal it is this handler
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(RunInterrupted) as stopped, LLMExtractor(config) as extractor:
            started = time.monotonic()
            timer.start()  # Ctrl-C half a second into the calls
            extractor.extract_all(requests)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - started < 10  # the server asked for 30 s: the stop did not wait it out
    sent = server.count
    assert sent <= 2  # the two in flight; none of the six queued documents was sent
    time.sleep(0.5)
    assert server.count == sent  # and no retry went out after the stop
    assert (stopped.value.answered, stopped.value.total, stopped.value.cached) == (0, 8, cached)
    assert ("not cached" in str(stopped.value)) is not cached


# (the second request's reply, whether the callback fails on the second result, answers counted, callback heard)
LATE = [
    ("answered", "200", False, 2, 2),
    ("failing-callback", "200", True, 2, 2),  # the count holds though the progress bar fails on it
    ("refused", "400", False, 1, 1),  # a request that failed is not an answer received
]


@pytest.mark.parametrize(
    ("reply", "callback_fails", "answered", "heard"), [r[1:] for r in LATE], ids=[r[0] for r in LATE]
)
def test_ctrl_c_counts_an_answer_that_finished_before_it_was_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reply: str, callback_fails: bool, answered: int, heard: int
) -> None:
    """Ctrl-C lands while the first answer is being taken, after the second request has finished
    in its thread: what the interruption says was received counts the second if it is an answer
    (cached by then), and the progress callback hears of it."""
    import concurrent.futures

    import agent.extract.llm.extractor as extractor_module
    from agent.extract import ExtractionResult
    from agent.extract.llm.extractor import RunInterrupted

    futures: list[concurrent.futures.Future[ExtractionResult]] = []

    def noted(
        fs: dict[concurrent.futures.Future[ExtractionResult], int],
    ) -> Iterator[concurrent.futures.Future[ExtractionResult]]:
        futures.extend(fs)
        return concurrent.futures.as_completed(fs)

    monkeypatch.setattr(extractor_module, "as_completed", noted)
    got: list[str] = []

    def on_result(result: ExtractionResult) -> None:
        got.append(result.request.doc_path)
        if len(got) == 1:
            concurrent.futures.wait(futures, timeout=30)  # the other request is through the client, validated
            raise KeyboardInterrupt
        if callback_fails:
            raise RuntimeError("the progress bar broke")

    first = "inbox/jay/2026-09-22-0000-doc.md"

    def respond(body: Any) -> Reply:
        if first in json.dumps(body):
            return Reply(body=completion(body, sample_extraction()))
        late = 0.3  # the first request's result is the one taken first
        if reply == "400":
            error = {"error": {"message": "bad request", "type": "invalid_request_error"}}
            return Reply(status=400, body=error, delay_s=late)
        return Reply(body=completion(body, sample_extraction()), delay_s=late)

    with FakeOpenAI(default=respond) as server:
        config = make_config(tmp_path, server.base_url, concurrency=2)
        requests = [make_request(first), make_request("inbox/jay/2026-09-22-0001-doc.md")]
        with pytest.raises(RunInterrupted) as stopped, LLMExtractor(config) as extractor:
            extractor.extract_all(requests, on_result)
    assert (stopped.value.answered, stopped.value.total) == (answered, 2)
    assert len(got) == heard


def test_a_shared_answer_is_an_answer() -> None:
    """What an interruption counts as received: one topic's extraction or a shared request's answer."""
    from agent.extract import CallRecord, ExtractionResult
    from schemas.extraction import SharedExtraction

    record = CallRecord("inbox/x.md", 0, "live", "m")
    request = make_request("inbox/x.md")
    shared = SharedExtraction.model_construct(topics=[])
    assert ExtractionResult(request, None, record, shared=shared).answered
    assert not ExtractionResult(request, None, record).answered
