"""The httpx2 transport chain handed to the openai client: cassettes, cache, retries, network.

    replay:  Replay                                  (never touches the network)
    live:    Cache -> Retry -> network
    record:  Record -> Cache -> Retry -> network

The openai client and instructor above it are unaware of any of this, so replay exercises the
real client, instructor's parsing and its validation re-asks. Every layer keys on the
canonical request body; no layer ever reads, keys on or stores a header.
"""

from __future__ import annotations

import json
import logging
import threading
import urllib.request
from dataclasses import replace
from typing import Any

import httpx2

from agent.extract.llm.budget import Budget
from agent.extract.llm.calllog import current_call
from agent.extract.llm.cassettes import (
    Cassette,
    CassetteIndex,
    Exchange,
    Provenance,
    ProvenanceKind,
    body_topics,
    library_versions,
    request_key,
    write_cassette,
)
from agent.extract.llm.config import LLMConfig
from agent.extract.llm.network import BoundedNetwork
from agent.extract.llm.retry import EXCHANGE_EXT, RetryTransport
from agent.extract.llm.store import ResponseCache

logger = logging.getLogger("predigest")


def exchange_response(exchange: Exchange) -> httpx2.Response:
    """A stored answer as the client expects it: JSON, with the exchange attached."""
    return httpx2.Response(
        exchange.status,
        headers={"content-type": "application/json"},
        content=json.dumps(exchange.response_body, ensure_ascii=False).encode(),
        extensions={EXCHANGE_EXT: exchange},
    )


class KeyedTransport(httpx2.BaseTransport):
    """Notes each exchange's request hash on the call's log (the run log names every request by it)."""

    def __init__(self, inner: httpx2.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        current_call().keys.append(request_key(request.read()))
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()


class ReplayTransport(httpx2.BaseTransport):
    """Answers from cassettes only; a miss raises `CassetteMiss` naming the nearest cassette.

    With `allow_stale`, a miss is answered by the first-turn answer to the same document, part and
    topics recorded under another prompt (never another topic's answer), and the call's log names
    that prompt: after a prompt edit, a rule change can still be measured on the answers a real
    model gave."""

    def __init__(self, index: CassetteIndex, *, allow_stale: bool = False) -> None:
        self._index = index
        self._allow_stale = allow_stale

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        raw = request.read()
        cassette = self._index.get(request_key(raw))
        log = current_call()
        if cassette is None:
            body: Any = json.loads(raw) if raw else None
            topics = log.topics or body_topics(body)
            stale = self._index.stale(log.doc_path, log.part, topics) if self._allow_stale and log.doc_path else None
            if stale is None:
                raise self._index.miss(body, doc=log.doc_path, prompt=log.prompt, part=log.part, topics=topics)
            cassette = stale
            log.stale.append(stale.provenance.prompt or "unknown prompt")
        ex = cassette.exchange
        log.note_stored("cassette", ex.usage, ex.latency_s, cassette.path.name)
        log.provenance = (cassette.provenance.kind, cassette.provenance.model)
        return exchange_response(ex)


class CacheTransport(httpx2.BaseTransport):
    """Answers a request seen before from the on-disk cache. A 2xx JSON answer is stored only
    once the extractor has validated it (the write is deferred onto the call's log). The cache
    is its owner's to close (the extractor reads it before any transport is built)."""

    def __init__(self, inner: httpx2.BaseTransport, store: ResponseCache) -> None:
        self._inner = inner
        self._store = store

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        key = request_key(request.read())
        exchange = self._store.stored(key)
        if exchange is not None:
            current_call().note_stored("cache", exchange.usage)
            return exchange_response(exchange)
        response = self._inner.handle_request(request)
        answered = response.extensions.get(EXCHANGE_EXT)
        if isinstance(answered, Exchange):
            current_call().deferred.append(lambda: self._store.keep(key, answered))
        return response

    def close(self) -> None:
        self._inner.close()


class RecordTransport(httpx2.BaseTransport):
    """Writes one cassette per answered exchange (2xx JSON), then passes the answer on.

    An answer the cache gave is recorded too, with the model and date it was first obtained,
    so deleting a cassette and recording again never needs the network.
    """

    def __init__(
        self,
        inner: httpx2.BaseTransport,
        index: CassetteIndex,
        *,
        kind: ProvenanceKind = "recorded",
        note: str = "",
        date: str = "",
        replace_reference: bool = False,
    ) -> None:
        self._inner = inner
        self._replace_reference = replace_reference
        self._kept: set[str] = set()
        self._index = index
        self._kind: ProvenanceKind = kind
        self._note = note
        self._date = date  # when the answer was obtained, if not now (a relayed answer)
        self._versions = library_versions()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = self._inner.handle_request(request)
        exchange = response.extensions.get(EXCHANGE_EXT)
        if isinstance(exchange, Exchange):
            if exchange.request_body is None:  # the layers below keep only its key
                raw = request.read()
                exchange = replace(exchange, request_body=json.loads(raw) if raw else None)
            log = current_call()
            known = self._index.get(exchange.key)
            if (
                known is not None
                and known.path.exists()
                and known.provenance.kind == self._kind
                and known.exchange.response_body == exchange.response_body
            ):  # already on disk (e.g. a cache hit): rewriting would only churn the date
                log.cassettes.append(known.path.name)
                return response
            if known is not None and known.provenance.kind == "reference" and not self._replace_reference:
                # a hand-written expected answer is a test fixture: a recording never replaces it silently
                log.cassettes.append(known.path.name)
                if known.path.name not in self._kept:
                    self._kept.add(known.path.name)
                    logger.warning("kept the reference cassette %s (pass --force to record over it)", known.path.name)
                return response
            provenance = Provenance(
                kind=self._kind,
                model=exchange.model,
                date=self._date or exchange.date,
                prompt=log.prompt,
                instructor=self._versions[0],
                openai=self._versions[1],
                document=log.doc_path,
                note=self._note,
                part=log.part,
                # said in the file only when the request does not say it (a prompt of one's own)
                topics=() if body_topics(exchange.request_body) == log.topics else log.topics,
            )
            # two threads answering one request at once both write it: the same file, each write whole
            path = write_cassette(self._index.root, exchange, provenance)
            self._index.add(Cassette(path=path, provenance=provenance, exchange=exchange))
            log.cassettes.append(path.name)
        return response

    def close(self) -> None:
        self._inner.close()


def network_transport(base_url: str) -> httpx2.BaseTransport:
    """The real network, each attempt bounded by its deadline (`agent.extract.llm.network`). A
    client given its own transport ignores HTTP(S)_PROXY, so the proxy from the environment is
    applied here (never for a loopback server)."""
    url = httpx2.URL(base_url)
    proxy = None
    if url.host not in ("127.0.0.1", "localhost", "::1") and not urllib.request.proxy_bypass(url.host):
        proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and "://" not in proxy:  # "host:port", as curl, requests and httpx read it: an http:// proxy
        proxy = f"http://{proxy}"
    return BoundedNetwork(proxy)


class LazyNetwork(httpx2.BaseTransport):
    """The network transport, made on the first request: making one loads the system's CA
    certificates, which a run answered wholly from the cache never needs."""

    def __init__(self, base_url: str) -> None:
        self._base_url = base_url
        self._inner: httpx2.BaseTransport | None = None
        self._lock = threading.Lock()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        with self._lock:
            if self._inner is None:
                self._inner = network_transport(self._base_url)
        return self._inner.handle_request(request)

    def close(self) -> None:
        with self._lock:
            if self._inner is not None:
                self._inner.close()


def build_transport(
    config: LLMConfig,
    budget: Budget,
    index: CassetteIndex,
    *,
    cache: ResponseCache | None = None,
    kind: ProvenanceKind = "recorded",
    note: str = "",
    date: str = "",
) -> httpx2.BaseTransport:
    """The chain for the configured backend (see the module docstring), over `cache` (opened by
    `agent.extract.llm.store.open_cache`, closed by whoever opened it); a recording's cassettes
    say `kind`, `note` and `date` (see `RecordTransport`)."""
    backend = config.effective_backend
    if backend == "replay":
        return KeyedTransport(ReplayTransport(index, allow_stale=config.allow_stale))
    chain: httpx2.BaseTransport = RetryTransport(LazyNetwork(config.base_url), config, budget)
    if cache is not None:
        chain = CacheTransport(chain, cache)
    if backend == "record":
        chain = RecordTransport(
            chain, index, kind=kind, note=note, date=date, replace_reference=config.replace_reference
        )
    return KeyedTransport(chain)
