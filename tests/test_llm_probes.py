"""Endpoints that misbehave, each a row: a loopback server (or none), the settings, and what the
run must do — stay within its time bound, send no more than it should, and say what is wrong."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import agent.extract.llm.client  # noqa: F401 - imported before any clock starts: the bounds are the calls'
from agent.core.errors import PredigestError
from agent.extract.llm import LLMExtractor
from tests.fake_openai import FakeOpenAI, Reply, completion, make_config, make_request, sample_extraction
from tests.paths import WORLD, predigest

REFUSED = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: every connection is refused
PRICED = {"prices": {"fake-model": (0.0, 10.0)}, "max_cost_usd": 0.0412, "concurrency": 1}


def _usage(usage: Any) -> Callable[[Any], Reply]:
    """A valid answer whose `usage` is `usage` (None: no usage at all)."""

    def answer(body: Any) -> Reply:
        reply = completion(body, sample_extraction())
        if usage is None:
            del reply["usage"]
        else:
            reply["usage"] = usage
        return Reply(body=reply)

    return answer


@dataclass(frozen=True)
class Probe:
    reply: Callable[[Any], Reply] | None  # None: no server at all
    config: dict[str, Any] = field(default_factory=dict)
    docs: int = 1
    sources: tuple[str, ...] = ("live",)
    error: tuple[str, ...] = ()  # in the last document's error
    not_error: tuple[str, ...] = ()
    max_requests: int | None = None
    max_attempts: int | None = None  # HTTP attempts over the whole run
    max_s: float = 10.0


PROBES = {
    "one byte every 0.2 s, timeout_s bounds each attempt": Probe(
        lambda body: Reply(body=completion(body, sample_extraction()), trickle_s=0.2),
        {"timeout_s": 0.5, "max_attempts": 2, "max_total_s": 10.0},
        error=("timed out after 2 attempts",),
        max_requests=2,
        max_s=6.0,  # two attempts of 0.5 s, with room for a busy machine; unbounded, one attempt takes minutes
    ),
    "one byte every 0.2 s, max_total_s bounds the attempts": Probe(
        lambda body: Reply(body=completion(body, sample_extraction()), trickle_s=0.2),
        {"timeout_s": 5.0, "max_attempts": 5, "max_total_s": 0.8},
        error=("timed out",),
        max_s=5.0,
    ),
    "connection refused: a few refusals stop the run's calls": Probe(
        None,
        {"max_attempts": 5, "concurrency": 1},
        docs=6,
        sources=("live",) * 6,
        error=(REFUSED, "3 times in a row", "Connection refused", "no further call"),
        max_attempts=3,
    ),
    "usage.prompt_tokens 'lots'": Probe(_usage({"prompt_tokens": "lots", "completion_tokens": 40})),
    "usage missing: estimated, so max_cost still trips": Probe(
        _usage(None), PRICED, docs=3, sources=("live", "skipped", "skipped"), error=("max_cost_usd",)
    ),
    "usage negative: estimated, so max_cost still trips": Probe(
        _usage({"prompt_tokens": -5, "completion_tokens": -1}),
        PRICED,
        docs=3,
        sources=("live", "skipped", "skipped"),
        error=("max_cost_usd",),
    ),
    "an HTML page with 200": Probe(
        lambda body: Reply(raw=b"<!doctype html><html>Welcome</html>", headers={"content-type": "text/html"}),
        {"concurrency": 1},
        docs=3,
        sources=("live",) * 3,
        error=("without a completion", "is not JSON", "text/html", "not an OpenAI-compatible chat completion"),
        not_error=("no choices", "No choices"),
        max_requests=1,  # once for the run: every further call would get the same page
    ),
    "JSON with 200 but no choices": Probe(
        lambda body: Reply(body={"object": "list", "data": []}),
        error=("is JSON without choices", "not an OpenAI-compatible chat completion"),
        max_requests=1,
    ),
    "a Retry-After longer than max_total_s leaves": Probe(
        lambda body: Reply(status=429, body={"error": {"message": "slow down"}}, headers={"Retry-After": "3600"}),
        {"max_total_s": 30.0},
        error=("asked to wait 3600s (Retry-After)", "max_total_s=30"),
        max_requests=1,
        max_s=8.0,
    ),
}


@pytest.mark.parametrize("probe", PROBES.values(), ids=PROBES.keys())
def test_a_misbehaving_endpoint(tmp_path: Path, probe: Probe) -> None:
    requests = [make_request(f"inbox/jay/2026-09-22-{i:02d}-doc.md") for i in range(probe.docs)]
    server = FakeOpenAI(default=probe.reply) if probe.reply is not None else None
    with server if server is not None else _Nothing():
        url = server.base_url if server is not None else REFUSED
        config = make_config(tmp_path, url, backend="live", **probe.config)
        started = time.monotonic()
        with LLMExtractor(config) as extractor:
            results = extractor.extract_all(requests)
        elapsed = time.monotonic() - started
    assert elapsed < probe.max_s
    assert [r.record.source for r in results] == list(probe.sources)
    answered = [r for r in results if r.record.source == "live" and not r.record.error]
    assert all(r.extraction is not None and r.record.input_tokens > 0 for r in answered)
    last = results[-1].record.error
    assert all(part in last for part in probe.error), last
    assert not any(part in last for part in probe.not_error), last
    if probe.max_requests is not None:
        assert server is not None and server.count <= probe.max_requests
    if probe.max_attempts is not None:
        assert sum(r.record.attempts for r in results) <= probe.max_attempts


class _Nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _invalid_then_valid(body: Any) -> Reply:
    broken = sample_extraction()
    broken["claims"][0]["stars"] = 9
    return Reply(body=completion(body, sample_extraction() if len(body["messages"]) > 2 else broken))


def test_a_replayed_answer_that_fails_validation_is_reported_as_its_validation_error(tmp_path: Path) -> None:
    """The re-ask of an invalid recorded answer has no cassette: the error is the answer's, not a miss."""
    with FakeOpenAI(default=_invalid_then_valid) as server:
        config = make_config(tmp_path, server.base_url, cache_dir=None)
        with LLMExtractor(config) as extractor:
            (recorded,) = extractor.extract_all([make_request()])
    assert recorded.extraction is not None and recorded.record.attempts == 2
    for cassette in config.cassette_dir.glob("*.json"):
        if len(json.loads(cassette.read_text(encoding="utf-8"))["request"]["body"]["messages"]) > 2:
            cassette.unlink()  # the re-ask's cassette (its request carries the invalid answer)
    with LLMExtractor(config.with_(backend="replay", api_key="")) as extractor:
        (replayed,) = extractor.extract_all([make_request()])
    error = replayed.record.error
    assert replayed.extraction is None
    assert "does not fit the schema" in error and "stars" in error and "re-ask turns differ" not in error


def test_a_missing_cassette_folder_is_an_error_before_any_call(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(PredigestError, match=r"cassette folder .* does not exist"):
        LLMExtractor(make_config(tmp_path, REFUSED, backend="replay", cassette_dir=missing))
    args = ["run", str(WORLD), "-t", "inference", "-d", "2026-09-22", "--backend", "replay"]
    done = predigest(*args, "--cassettes", str(missing), "--out", f"{tmp_path}/out/")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("does not exist") == 1 and str(missing) in done.stderr
    assert not (tmp_path / "out").exists()
