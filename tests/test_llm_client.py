"""The client predigest builds: instructor's async-validator check is remembered per model,
and still refuses what it refused."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent.llm import LLMExtractor
from agent.llm.client import _remembering, build_client
from tests.fake_openai import FakeOpenAI, answer_with, make_config, make_request, sample_extraction

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
    from agent.llm import transport
    from agent.llm.config import LLMConfig
    from agent.llm.reference import warm_up

    made: list[str] = []
    monkeypatch.setattr(transport, "network_transport", lambda url: made.append(url))
    for mode in ("tools", "json_schema"):
        warm_up(LLMConfig(mode=mode))
    assert made == []
