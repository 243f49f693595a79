"""The client predigest builds: the openai client's own serialisation goes out untouched, and
every layer keys a request on its canonical JSON, so a cassette matches whatever the client's
key order; the warm-up sends nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from agent.extract.llm import cassettes
from agent.extract.llm.client import build_client, create_extraction
from agent.extract.llm.transport import network_transport
from tests.fake_openai import (
    FAKE_KEY,
    FakeOpenAI,
    Reply,
    completion,
    make_config,
    make_request,
    sample_extraction,
)


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
def test_a_request_is_keyed_on_its_canonical_json_not_the_clients_bytes(tmp_path: Path, mode: str) -> None:
    """The client serialises in its own key order; the key (cassettes, cache, run log) is the
    hash of the body re-serialised canonically, which is what every cassette was keyed on."""
    with FakeOpenAI(default=_invalid_then_valid) as server:
        transport = _Sent(server.base_url)
        config = make_config(tmp_path, server.base_url, backend="live", mode=mode)
        answer = create_extraction(build_client(config, transport), make_request(), config)
    assert answer.claims[0].stars == 4
    assert len(transport.sent) == 2  # the first answer and the re-ask
    for raw, headers in transport.sent:
        body = json.loads(raw)
        assert raw != cassettes.canonical_json(body).encode()  # the client's serialisation, untouched
        assert cassettes.request_key(raw) == cassettes.body_key(body)
        assert headers["authorization"] == f"Bearer {FAKE_KEY}"
        assert ("tools" in body) == (mode == "tools") and ("response_format" in body) == (mode == "json_schema")
