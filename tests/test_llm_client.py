"""The client predigest builds: instructor's async-validator check is remembered per model,
and still refuses what it refused; a call sends the body the client's own `create` would send,
serialised once."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import instructor
import pytest
from instructor.v2.core.errors import InstructorRetryException
from openai import OpenAI
from pydantic import BaseModel

from agent.extract.llm import LLMExtractor, cassettes
from agent.extract.llm.client import INSTRUCTOR_MODES, _remembering, _response_model, build_client, create_extraction
from agent.extract.llm.transport import network_transport
from tests.fake_openai import (
    FAKE_KEY,
    FakeOpenAI,
    Reply,
    answer_with,
    completion,
    make_config,
    make_request,
    sample_extraction,
)

_NOWHERE = "http://127.0.0.1:9/v1"  # clients built here never send
instructor_validators = pytest.importorskip("instructor.v2.validation.async_validators")


class _Plain(BaseModel):
    x: int


def _counting() -> tuple[list[Any], Any]:
    seen: list[Any] = []

    def check(model: Any) -> None:
        seen.append(model)
        if model is _Refused:
            raise ValueError("refused")

    return seen, check


class _Refused(BaseModel):
    y: int


def test_a_model_that_passed_is_not_walked_again() -> None:
    seen, check = _counting()
    remembering = _remembering(check)
    for _ in range(7):
        remembering(_Plain)
    assert seen == [_Plain]


def test_a_refused_model_is_refused_every_time() -> None:
    seen, check = _counting()
    remembering = _remembering(check)
    for _ in range(3):
        with pytest.raises(ValueError, match="refused"):
            remembering(_Refused)
    assert seen == [_Refused] * 3


def test_an_unhashable_argument_is_checked_every_time() -> None:
    seen, check = _counting()
    remembering = _remembering(check)
    unhashable = [_Plain]
    remembering(unhashable)
    remembering(unhashable)
    assert seen == [unhashable, unhashable]


def test_every_instructor_module_holding_the_check_gets_the_remembering_one(tmp_path: Path) -> None:
    build_client(make_config(tmp_path, _NOWHERE), transport=_NoCalls())
    holders = {
        name: module.reject_async_validators
        for name, module in sys.modules.items()
        if name.startswith("instructor") and hasattr(module, "reject_async_validators")
    }
    assert "instructor.v2.core.patch" in holders  # bound at import: must be replaced there too
    assert all(getattr(f, "remembers_passes", False) for f in holders.values()), holders


def test_instructor_still_refuses_an_async_validator_through_our_client(tmp_path: Path) -> None:
    class WithAsync(BaseModel):
        z: int

        @instructor_validators.async_field_validator("z")
        async def check_z(self, value: int) -> int:  # pragma: no cover - never run
            return value

    client = build_client(make_config(tmp_path, _NOWHERE), transport=_NoCalls())
    for _ in range(2):  # refused again: a failure is never remembered
        with pytest.raises(ValueError, match="async validators"):
            client.chat.completions.create(response_model=WithAsync, messages=[{"role": "user", "content": "x"}])


def test_live_calls_still_validate_through_the_remembered_check(tmp_path: Path) -> None:
    with FakeOpenAI(default=answer_with(sample_extraction())) as server:
        config = make_config(tmp_path, server.base_url, backend="live", concurrency=4, cache_dir=None)
        with LLMExtractor(config) as extractor:
            results = extractor.extract_all([make_request(f"inbox/jay/r{i}.md") for i in range(6)])
        assert server.count == 6
    assert all(r.extraction is not None and r.record.source == "live" for r in results)


class _NoCalls:
    """A transport for clients that must never send: building one sends nothing."""

    def handle_request(self, request: Any) -> Any:  # pragma: no cover - a call here is the failure
        raise AssertionError(f"unexpected request to {request.url}")

    def close(self) -> None:
        pass


def test_the_warm_up_sends_nothing_and_parses_an_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """`warm_up` drives the real client once through an in-memory answer: no transport to the
    network is made, and the answer goes through instructor's parsing and our validation."""
    from agent.extract.llm import transport
    from agent.extract.llm.config import LLMConfig
    from agent.extract.llm.reference import warm_up

    made: list[str] = []
    monkeypatch.setattr(transport, "network_transport", lambda url: made.append(url))
    for mode in ("tools", "json_schema"):
        warm_up(LLMConfig(mode=mode))
    assert made == []


class _Sent(httpx2.BaseTransport):
    """The network transport, noting the bytes and headers of each request it sends."""

    def __init__(self, base_url: str) -> None:
        self._inner = network_transport(base_url)
        self.sent: list[tuple[bytes, httpx2.Headers]] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.sent.append((request.read(), request.headers))
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


def _invalid_then_valid(body: Any) -> Reply:
    """The first answer breaks the schema (instructor re-asks with the error), the second holds."""
    broken = sample_extraction()
    broken["claims"][0]["stars"] = 9
    valid = len(body["messages"]) > 2
    return Reply(body=completion(body, sample_extraction() if valid else broken))


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_a_call_sends_what_the_clients_own_create_sends(tmp_path: Path, mode: str) -> None:
    """Same requests, re-ask included, as instructor over an untouched openai client: the same JSON
    with the same auth and content type, only serialised canonically, and every layer keys it
    without parsing it again."""
    config = make_config(tmp_path, "", backend="live", mode=mode)
    request = make_request()
    sent: dict[str, list[tuple[bytes, httpx2.Headers]]] = {}
    for name in ("ours", "untouched"):
        with FakeOpenAI(default=_invalid_then_valid) as server:
            transport = _Sent(server.base_url)
            live = config.model_copy(update={"base_url": server.base_url})
            if name == "ours":
                client = build_client(live, transport)
            else:
                http = httpx2.Client(transport=transport)
                plain = OpenAI(api_key=FAKE_KEY, base_url=server.base_url, max_retries=0, http_client=http)
                client = instructor.from_openai(plain, mode=INSTRUCTOR_MODES[mode])
            parsed_before = cassettes._parsed_key.cache_info().misses
            answer = create_extraction(client, request, live)
            if name == "ours":
                for raw, _ in transport.sent:
                    cassettes.request_key(raw)
                assert cassettes._parsed_key.cache_info().misses == parsed_before  # keyed as serialised
            assert answer.claims[0].stars == 4
            sent[name] = transport.sent
    assert len(sent["ours"]) == len(sent["untouched"]) == 2  # the first answer and the re-ask
    for (ours, our_headers), (theirs, their_headers) in zip(sent["ours"], sent["untouched"], strict=True):
        assert json.loads(ours) == json.loads(theirs)
        assert ours == cassettes.canonical_json(json.loads(ours)).encode() != theirs  # theirs: openai's key order
        assert cassettes.request_key(ours) == cassettes.request_key(theirs)
        for header in ("authorization", "content-type", "accept"):
            assert our_headers[header] == their_headers[header], header


@pytest.mark.parametrize(
    "extra",
    [{"timeout": 3.0}, {"extra_headers": {"x-trace": "1"}}, {"metadata": {"nan": float("nan")}}],
    ids=["a request option", "extra headers", "a body that is not plain JSON"],
)
def test_what_the_plain_post_cannot_carry_goes_through_create(tmp_path: Path, extra: dict[str, Any]) -> None:
    """A call with request options, or a body canonical JSON refuses, is the client's own `create`:
    the bytes sent are openai's serialisation (or its refusal), not ours."""
    with FakeOpenAI() as server:
        transport = _Sent(server.base_url)
        client = build_client(make_config(tmp_path, server.base_url, backend="live"), transport)
        kwargs: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "x"}], **extra}
        if "metadata" in extra:
            with pytest.raises(InstructorRetryException, match="JSON compliant"):  # openai's own refusal of NaN
                client.chat.completions.create(response_model=_response_model(), max_retries=0, **kwargs)
            assert transport.sent == []
            return
        client.chat.completions.create(response_model=_response_model(), max_retries=0, **kwargs)
    ((raw, headers),) = transport.sent
    assert raw != cassettes.canonical_json(json.loads(raw)).encode()
    if "extra_headers" in extra:
        assert headers["x-trace"] == "1"


def test_building_the_client_keeps_its_imports_out_of_the_collector() -> None:
    """In a fresh process: before the client, nothing is frozen; after it, what the imports made is."""
    import subprocess

    probe = (
        "import gc\n"
        "from agent.extract.llm.client import build_client\n"
        "from agent.extract.llm.config import LLMConfig\n"
        "from tests.test_llm_client import _NoCalls\n"
        "before = gc.get_freeze_count()\n"
        "build_client(LLMConfig(api_key='sk-x', base_url='http://127.0.0.1:9/v1'), _NoCalls())\n"
        "print(before, gc.get_freeze_count())\n"
    )
    from tests.paths import ROOT

    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    before, after = map(int, done.stdout.split())
    assert before == 0 and after > 50_000
