"""The loopback OpenAI-compatible server of `benchmarks.endpoint`, set up for the LLM layer's tests.

It serves POST /v1/chat/completions from a script of replies (then from a default responder),
records every request's headers and body, and counts how many requests were in flight at
once. Tests talk to it through the real openai client over real HTTP, so retries, timeouts
and headers behave as they would against a provider. The benchmark uses the same server.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent.extract import ExtractionRequest, PromptStamp
from agent.extract.llm import LLMConfig
from benchmarks.endpoint import Endpoint, Reply, Responder, SeenRequest, answer_with, completion

__all__ = [
    "FakeOpenAI",
    "Reply",
    "SeenRequest",
    "answer_with",
    "completion",
    "make_config",
    "make_request",
    "shared_responder",
    "world_answers",
    "world_responder",
    "world_topic_answers",
]

FAKE_KEY = "sk-test-FAKEKEY0123456789abcdef"
SYSTEM = "You extract claims about LLM inference from one research report. Copy evidence verbatim."


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


class FakeOpenAI(Endpoint):
    """The loopback endpoint of `benchmarks.endpoint`, answering `sample_extraction()` by default."""

    def __init__(self, default: Responder | None = None, *, composer: Responder | None = None) -> None:
        super().__init__(default or answer_with(sample_extraction()), composer=composer)


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


# What the demo evening (examples/world, 2026-09-22, one topic) asks an endpoint: one extraction per
# document, and the topic's composing call.
WORLD_DOCS = 14
WORLD_CALLS = WORLD_DOCS + 1


def world_answers(folder: str = "world") -> dict[str, Any]:
    """Document path → its reference extraction for the demo evening, read from the committed
    cassettes (`folder`: one topic's set, cassettes/world is inference's)."""
    from agent.extract.llm.cassettes import read_cassette

    out = {}
    for f in (Path(__file__).resolve().parent.parent / "cassettes" / folder).glob("*.json"):
        c = read_cassette(f)
        if c.provenance.document.startswith("compose/"):  # the evening's composing answer, not a document's
            continue
        msg = c.exchange.response_body["choices"][0]["message"]
        args = msg["tool_calls"][0]["function"]["arguments"] if msg.get("tool_calls") else msg["content"]
        out[c.provenance.document] = json.loads(args)
    return out


def world_composition(folder: str = "world", topic: str = "inference") -> Responder:
    """Answers a topic's composing call of the demo evening with its committed reference answer."""
    from agent.extract.llm.cassettes import read_cassette

    root = Path(__file__).resolve().parent.parent / "cassettes" / folder
    found = [read_cassette(f) for f in root.glob("compose-*.json")]
    (cassette,) = [c for c in found if c.provenance.document == f"compose/{topic}"]
    args = cassette.exchange.response_body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    answer = json.loads(args) if isinstance(args, str) else args

    def compose(body: Any) -> Reply:
        return Reply(body=completion(body, answer, usage=(4000, 1500)))

    return compose


def world_responder(answers: dict[str, Any]) -> Responder:
    """Answers each document of the demo evening with its reference answer (found by its path in
    the prompt); an unknown document gets a 400. (The endpoint answers the composing call itself.)"""

    def answer(body: Any) -> Reply:
        user = body["messages"][-1]["content"]
        doc = re.search(r'<document path="([^"]+)">', user)
        if doc is None or doc.group(1) not in answers:
            return Reply(status=400, body={"error": {"message": "unknown document"}})
        return Reply(body=completion(body, answers[doc.group(1)], usage=(2000, 300)))

    return answer


# which committed cassette set answers which topic of the demo evening (eval/cases/2026-09-22-*/case.toml)
WORLD_SETS = {"inference": "world", "llm-infra": "world-llm-infra", "risk": "world-risk"}
_TOPICS_LINE = re.compile(r"^Evening: \S+ · topics: (.+)$", re.M)


def world_topic_answers() -> dict[str, dict[str, Any]]:
    """Topic → document path → that topic's reference extraction for the demo evening."""
    return {topic: world_answers(folder) for topic, folder in WORLD_SETS.items()}


def shared_responder(
    by_topic: dict[str, dict[str, Any]],
    *,
    left_out: tuple[str, str] = ("", ""),
    misnamed: tuple[str, str] = ("", ""),
    cached: int = 0,
) -> Responder:
    """Answers a shared request with each topic's own reference answer for the document, in the
    order of the topics the prompt reads it for (a topic without one reads it as background), and
    what the document held said once (the first topic's that says it). `left_out` (document,
    topic) leaves that topic's part out; `misnamed` (document, name) puts the first part under a
    topic never asked, the first time only (a re-ask carries the validation error after the
    prompt). `cached` is the prompt tokens the usage reports as served from a prompt cache."""

    def answer(body: Any) -> Reply:
        user = body["messages"][1]["content"]
        doc, topics = re.search(r'<document path="([^"]+)">', user), _TOPICS_LINE.search(user)
        if doc is None or topics is None:
            return Reply(status=400, body={"error": {"message": "not a shared extraction request"}})
        path = doc.group(1)
        readings = {t: by_topic.get(t, {}).get(path, _background(t)) for t in topics.group(1).split(", ")}
        parts = [
            {"topic": t, **{k: v for k, v in reading.items() if k != "held"}}
            for t, reading in readings.items()
            if (path, t) != left_out
        ]
        if path == misnamed[0] and len(body["messages"]) == 2:
            parts[0] = {**parts[0], "topic": misnamed[1]}
        held = next((r["held"] for r in readings.values() if r.get("held")), "")
        reply = completion(body, {"held": held, "topics": parts}, usage=(6000, 900))
        if cached:
            reply["usage"]["prompt_tokens_details"] = {"cached_tokens": cached}
        return Reply(body=reply)

    return answer


def _background(topic: str) -> dict[str, Any]:
    return {"relevance": "参考", "relevance_reason": f"nothing in it for {topic}", "held": "", "claims": []}
