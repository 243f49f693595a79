"""A small OpenAI-compatible server on loopback, for the LLM layer's tests.

It serves POST /v1/chat/completions from a script of replies (then from a default responder),
records every request's headers and body, and counts how many requests were in flight at
once. Tests talk to it through the real openai client over real HTTP, so retries, timeouts
and headers behave as they would against a provider.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent.extract import ExtractionRequest, PromptStamp
from agent.llm import LLMConfig

FAKE_KEY = "sk-test-FAKEKEY0123456789abcdef"
SYSTEM = "You extract claims about LLM inference from one research report. Copy evidence verbatim."


@dataclass
class Reply:
    """One scripted answer: a JSON body, or raw bytes, after an optional delay."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class SeenRequest:
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Any], Reply]


def sample_extraction(title: str = "vLLM 0.11 enables prefix caching by default") -> dict[str, Any]:
    """A valid `FileExtraction` as plain JSON (tests corrupt copies of it)."""
    return {
        "relevance": "高",
        "relevance_reason": "Release notes of an inference engine the living document tracks.",
        "held": "vLLM 0.11 · prefix caching",
        "claims": [
            {
                "title": title,
                "stars": 4,
                "key_points": [{"text": "Prefix caching is on by default", "children": []}],
                "evidence": ["prefix caching is now enabled by default"],
                "section_ref": "§条目 1",
                "arxiv": [{"arxiv_id": "2309.06180", "title": "PagedAttention"}],
                "urls": [],
                "credibility": "高",
                "credibility_reason": "official release notes",
                "relation": "supplement",
                "anchor": "vLLM",
                "relation_note": "adds the new default to the vLLM anchor",
                "suggested_section": "§1.3 KV Cache",
                "to_verify": [],
            }
        ],
        "skipped": [],
    }


def completion(body: Any, extraction: Any, usage: tuple[int, int] = (120, 40)) -> dict[str, Any]:
    """A chat completion answering `body` with `extraction`, shaped for the request's mode."""
    arguments = json.dumps(extraction, ensure_ascii=False)
    if body.get("tools"):
        name = body["tools"][0]["function"]["name"]
        call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": arguments}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": arguments}
        finish = "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1790000000,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def answer_with(extraction: Any, delay_s: float = 0.0) -> Responder:
    return lambda body: Reply(body=completion(body, extraction), delay_s=delay_s)


class FakeOpenAI:
    """Use as a context manager; `base_url` is ready inside it."""

    def __init__(self, default: Responder | None = None) -> None:
        self.script: deque[Reply | Responder] = deque()
        self.default: Responder = default or answer_with(sample_extraction())
        self.requests: list[SeenRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def count(self) -> int:
        return len(self.requests)

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply | Responder) -> None:
        self.script.extend(replies)

    def _next(self, body: Any) -> Reply:
        with self._lock:
            step = self.script.popleft() if self.script else self.default
        return step if isinstance(step, Reply) else step(body)

    def __enter__(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with fake._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    fake.requests.append(SeenRequest(self.path, headers, body))
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if self.path != "/v1/chat/completions":
                        reply = Reply(status=404, body={"error": {"message": f"no route {self.path}"}})
                    else:
                        reply = fake._next(body)
                    time.sleep(reply.delay_s)
                    payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                    self.send_response(reply.status)
                    headers = {"content-type": "application/json", **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that timed out and hung up is expected here

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def make_request(
    doc_path: str = "inbox/jay/2026-09-22-vllm.md",
    *,
    system: str = SYSTEM,
    document: str = "vLLM 0.11: prefix caching is now enabled by default.",
    version: str = "1",
) -> ExtractionRequest:
    return ExtractionRequest(
        doc_path=doc_path,
        messages=(
            {"role": "system", "content": system},
            {"role": "user", "content": f"Document {doc_path}:\n\n{document}"},
        ),
        prompt=PromptStamp(name="extract", version=version, sha256="0123456789ab"),
    )


def make_config(tmp_path: Path, base_url: str, **overrides: Any) -> LLMConfig:
    """Record against the fake server, caches in tmp_path, backoff tiny so tests stay fast."""
    settings: dict[str, Any] = {
        "base_url": base_url,
        "api_key": FAKE_KEY,
        "model": "fake-model",
        "backend": "record",
        "cassette_dir": tmp_path / "cassettes",
        "cache_dir": tmp_path / "cache",
        "concurrency": 4,
        "timeout_s": 5.0,
        "max_attempts": 3,
        "max_total_s": 20.0,
        "backoff_initial_s": 0.01,
        "backoff_max_s": 0.05,
        "max_validation_retries": 2,
    }
    settings.update(overrides)
    return LLMConfig(**settings)


def world_answers() -> dict[str, Any]:
    """Document path → its reference extraction for the demo evening, read from the committed cassettes."""
    from agent.llm.cassettes import read_cassette

    out = {}
    for f in (Path(__file__).resolve().parent.parent / "cassettes" / "world").glob("*.json"):
        c = read_cassette(f)
        msg = c.exchange.response_body["choices"][0]["message"]
        args = msg["tool_calls"][0]["function"]["arguments"] if msg.get("tool_calls") else msg["content"]
        out[c.provenance.document] = json.loads(args)
    return out


def world_responder(answers: dict[str, Any]) -> Responder:
    """Answers each document of the demo evening with its reference answer (found by its path in
    the prompt); an unknown document gets a 400."""

    def answer(body: Any) -> Reply:
        user = body["messages"][-1]["content"]
        doc = re.search(r'<document path="([^"]+)">', user)
        if doc is None or doc.group(1) not in answers:
            return Reply(status=400, body={"error": {"message": "unknown document"}})
        return Reply(body=completion(body, answers[doc.group(1)], usage=(2000, 300)))

    return answer
