"""What the transport layers learn about one extraction request, handed back to the extractor.

The openai client and instructor stand between the extractor and the transport, and neither
passes our context through. A contextvar does: the extractor opens a `call_scope` around each
request (in the worker thread that runs it); the transport layers read the document path and
prompt stamp from it for cassette provenance, and note in it every attempt and every answer.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

ExchangeSource = Literal["live", "cache", "cassette"]


@dataclass
class CallLog:
    """Mutable, and owned by the one thread that runs its request: no lock needed."""

    doc_path: str = ""
    prompt: str = ""
    part: int = 0  # 0-based part of a split document: a stale replay matches on document and part
    answers: int = 1  # the readings one answer holds: a shared request's answer has one per topic
    topics: tuple[str, ...] = ()  # the topics the request reads the document for (`ExtractionRequest.read_for`)
    attempts: int = 0  # HTTP attempts sent, plus exchanges answered by the cache or a cassette
    usages: list[dict[str, Any]] = field(default_factory=list)  # every answer's usage, once
    paid_usages: list[dict[str, Any]] = field(default_factory=list)  # those the network answered
    sources: list[ExchangeSource] = field(default_factory=list)  # one per answered exchange
    recorded_latency_s: float = 0.0  # sum over replayed exchanges of their recorded latency
    cassettes: list[str] = field(default_factory=list)  # cassette files that answered or were written
    keys: list[str] = field(default_factory=list)  # request hash of every exchange, the first one first
    stale: list[str] = field(default_factory=list)  # prompt stamps of cassettes replayed under another prompt
    provenance: tuple[str, str] = ("", "")  # (kind, model) of the last cassette that answered
    # cache writes held back until the extractor has validated the answer: an answer that never
    # fit the schema must not be served again from the cache after the endpoint is fixed
    deferred: list[Callable[[], None]] = field(default_factory=list)

    def note_attempt(self, usage: dict[str, Any]) -> None:
        """One HTTP attempt went out; a retried 429 counts as much as the final 200."""
        self.attempts += 1
        if usage:
            self.usages.append(usage)
            self.paid_usages.append(usage)

    def note_stored(
        self, source: ExchangeSource, usage: dict[str, Any], latency_s: float = 0.0, cassette: str = ""
    ) -> None:
        """The cache or a cassette answered an exchange without any HTTP call."""
        self.attempts += 1
        self.sources.append(source)
        if usage:
            self.usages.append(usage)
        if source == "cassette":
            self.recorded_latency_s += latency_s
        if cassette:
            self.cassettes.append(cassette)


_current: contextvars.ContextVar[CallLog | None] = contextvars.ContextVar("predigest_llm_call", default=None)


def current_call() -> CallLog:
    """The log of the request being served; a throwaway one outside any scope."""
    log = _current.get()
    return log if log is not None else CallLog()


@contextmanager
def call_scope(
    doc_path: str, prompt: str, part: int = 0, answers: int = 1, topics: tuple[str, ...] = ()
) -> Iterator[CallLog]:
    """Open the log for one request; always reset, because pool threads are reused."""
    log = CallLog(doc_path=doc_path, prompt=prompt, part=part, answers=answers, topics=topics)
    token = _current.set(log)
    try:
        yield log
    finally:
        _current.reset(token)
