"""`LLMExtractor`: the `Extractor` that asks an OpenAI-compatible endpoint (or its cassettes).

Requests run in a bounded thread pool, so never more than `concurrency` are in flight. One
document's failure (endpoint down, answer never valid, cassette missing, budget reached) comes
back as a result with `extraction=None` and a one-line `record.error`; it never raises, so the
evening's run goes on and the briefing can report the document in section 五.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from queue import Empty, SimpleQueue
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

import diskcache
from pydantic import ValidationError

from agent.core.errors import BudgetExceeded, LLMError
from agent.extract import CallRecord, CallSource, ExtractionRequest, ExtractionResult
from agent.extract.llm.body import request_body
from agent.extract.llm.budget import Budget
from agent.extract.llm.calllog import CallLog, ExchangeSource, call_scope
from agent.extract.llm.cassettes import CassetteIndex, Exchange, body_key, canonical_json, token_counts
from agent.extract.llm.config import LLMConfig, require_key
from agent.extract.llm.store import ResponseCache, open_cache
from schemas.extraction import FileExtraction

if TYPE_CHECKING:
    import httpx2
    import instructor

# agent.extract.llm.client and agent.extract.llm.reference import instructor and openai (~1.5 s), and
# agent.extract.llm.transport the HTTP stack (~50 ms): they are imported only when a request needs the
# client, so an evening answered wholly by stored answers (a replayed demo, a warm re-run)
# never loads them.

_E = TypeVar("_E", bound=BaseException)
_IDLE_S = 0.02  # no answer for this long: the calling thread may do a piece of `on_idle` work


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during the calls, with how far the run got: validated answers are cached, so a
    re-run resumes from there."""

    def __init__(self, answered: int, total: int) -> None:
        super().__init__(f"{answered} of {total} answers received")
        self.answered = answered
        self.total = total


class LLMExtractor:
    """Answers extraction requests through instructor + openai over our transport chain.

    `network` replaces the real HTTP transport (tests hand in a loopback one if they wish;
    the default is the network, with the environment's proxy).
    """

    def __init__(self, config: LLMConfig, *, network: httpx2.BaseTransport | None = None) -> None:
        self.config = config
        self.backend = config.effective_backend
        self.budget = Budget(config)
        self._index = (
            CassetteIndex.load(config.cassette_dir)
            if self.backend in ("replay", "record")
            else CassetteIndex(config.cassette_dir)
        )
        require_key(config)  # before any call, though the client is built only when first needed
        # opened now: a cache folder that cannot be written is an error before any call
        self._store = open_cache(config.cache_dir) if self.backend in ("live", "record") else None
        self._network = network
        self._transport: httpx2.BaseTransport | None = None  # built with the client
        self._client: instructor.Instructor | None = None
        self._client_lock = threading.Lock()
        self._template: dict[str, Any] | None = None  # the body around the messages, once learnt
        self._template_known = False
        self._template_lock = threading.Lock()

    def extract_all(
        self,
        requests: Sequence[ExtractionRequest],
        on_result: Callable[[ExtractionResult], None] | None = None,
        *,
        on_idle: Callable[[], None] | None = None,
    ) -> list[ExtractionResult]:
        """Results in request order; `on_result` is called as each one completes, from the
        calling thread, so it may update a progress bar without locking. `on_idle` is called
        from the calling thread whenever no answer has come for a moment: work that can wait
        (a short piece each call) without delaying the handling of answers, which under the
        GIL would hold back the requests of the threads that are waiting for it."""
        results: list[ExtractionResult | None] = [None] * len(requests)
        workers = max(1, min(self.config.concurrency, len(requests)))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="predigest-llm")
        try:
            # A stored answer is read on this thread (threads only add switching to a read of a few
            # hundred microseconds, and a warm re-run has nothing else); every other request goes
            # to the pool as soon as it is known to need the endpoint.
            futures = {}
            for i, req in enumerate(requests):
                stored, looked = self._stored_result(req)
                if stored is None:
                    futures[pool.submit(self.extract_one, req, looked=looked)] = i
                    continue
                results[i] = stored
                if on_result is not None:
                    on_result(stored)
            finished: SimpleQueue[Future[ExtractionResult]] = SimpleQueue()  # in the order they finish
            for future in futures:
                future.add_done_callback(finished.put)
            for _ in range(len(futures)):
                future = self._next_finished(finished, on_idle)
                result = future.result()
                results[futures[future]] = result
                if on_result is not None:
                    on_result(result)
        except KeyboardInterrupt:
            # Ctrl-C: drop the queued requests, stop retries and re-asks in the running ones
            self.budget.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            with contextlib.suppress(Exception):
                self._close_transport()  # aborts requests in flight rather than waiting out their timeout
            answered = sum(1 for r in results if r is not None and r.extraction is not None)
            raise RunInterrupted(answered, len(requests)) from None
        except BaseException:
            # a failing callback: drop the queued requests instead of running them all
            self.budget.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown()
        return [r for r in results if r is not None]

    @staticmethod
    def _next_finished(
        finished: SimpleQueue[Future[ExtractionResult]], on_idle: Callable[[], None] | None
    ) -> Future[ExtractionResult]:
        """The next request to finish; while none does, a piece of `on_idle` work every moment.
        Always waiting with a timeout keeps Ctrl-C prompt."""
        while True:
            try:
                return finished.get(timeout=_IDLE_S)
            except Empty:
                if on_idle is not None:
                    on_idle()

    def _stored_result(self, request: ExtractionRequest) -> tuple[ExtractionResult | None, bool]:
        """(the result from a stored answer or None, whether the store was looked in without an
        error): on a miss `extract_one(looked=True)` goes straight to the client, after an error
        `extract_one` looks again and reports it, as it always did."""
        started = time.monotonic()
        with call_scope(request.doc_path, str(request.prompt), request.chunk) as log:
            try:
                extraction = self._stored_answer(request, log)
            except Exception:  # extract_one repeats the look-up and turns this into the result's error
                return None, False
            if extraction is None:
                return None, True
            for write in log.deferred:
                write()
        record = self._record(request, log, time.monotonic() - started, "", False)
        return ExtractionResult(request=request, extraction=extraction, record=record), True

    def extract_one(self, request: ExtractionRequest, *, looked: bool = False) -> ExtractionResult:
        """One request, start to finish; any failure becomes the result's error. `looked`: the
        store has no answer for it (`_stored_result` said so), so only the client can answer."""
        started = time.monotonic()
        extraction: FileExtraction | None = None
        error = ""
        budget_hit = False
        with call_scope(request.doc_path, str(request.prompt), request.chunk) as log:
            try:
                extraction = None if looked else self._stored_answer(request, log)
                if extraction is None:
                    from agent.extract.llm.client import create_extraction

                    answer = create_extraction(self.client(), request, self.config)
                    # a fresh model: instructor hangs the raw completion on the one it returns
                    extraction = FileExtraction.model_validate(answer.model_dump())
                for write in log.deferred:  # only a validated answer is worth keeping
                    write()
            except Exception as exc:  # one document's failure must not stop the run
                error = describe_failure(exc, log, self.config)
                budget_hit = _find(exc, BudgetExceeded) is not None
        elapsed = time.monotonic() - started
        return ExtractionResult(
            request=request,
            extraction=extraction,
            record=self._record(request, log, elapsed, error, budget_hit),
        )

    def _stored_answer(self, request: ExtractionRequest, log: CallLog) -> FileExtraction | None:
        """A validated answer kept for this exact request (a cassette when replaying, the cache
        when live), read without the client: instructor's schema handling and the openai
        client's request building cost ~10 ms of CPU per call under the GIL, which made a warm
        re-run of 200 documents take seconds. The request key is the one the transport would
        compute, from the body instructor sends (see `_body`); anything less plain than one
        finished answer that validates (a truncated or unparsable one, which instructor would
        re-ask) goes through the client as before, and so does every miss, so the cassette-miss
        diagnosis and the re-asks are unchanged. Recording always goes through the client: it
        writes a cassette for a cache hit too."""
        cache = self._live_store
        if self.backend != "replay" and cache is None:
            return None  # nothing stored to look in: no key to compute
        body = self._body(request)
        if body is None:
            return None
        key = body_key(body)
        source: ExchangeSource
        exchange: Exchange | None = None
        source, name = "cache", ""
        if self.backend == "replay":
            if (cassette := self._index.get(key)) is not None:
                exchange, source, name = cassette.exchange, "cassette", cassette.path.name
                log.provenance = (cassette.provenance.kind, cassette.provenance.model)
        elif cache is not None:
            exchange = cache.stored(key)
        extraction = _plain_answer(exchange, body) if exchange is not None else None
        if extraction is not None and exchange is not None:
            log.keys.append(key)
            log.note_stored(source, exchange.usage, exchange.latency_s, name)
        return extraction

    @property
    def response_cache(self) -> diskcache.Cache | None:
        """The live run's response cache, if it has one (`agent.factstore` keeps each
        document's facts in it)."""
        store = self._live_store
        return store.cache if store is not None else None

    @property
    def _live_store(self) -> ResponseCache | None:
        """The cache a live run reads answers from (recording opens it too, but always asks the
        client, which writes a cassette for a cache hit)."""
        return self._store if self.backend == "live" else None

    def client(self) -> instructor.Instructor:
        """The instructor client over our transport chain, both built on first use (by one thread)."""
        with self._client_lock:
            if self._client is None:
                from agent.extract.llm.client import build_client
                from agent.extract.llm.transport import build_transport

                self._transport = build_transport(
                    self.config, self.budget, self._index, cache=self._store, network=self._network
                )
                self._client = build_client(self.config, self._transport)
            return self._client

    def _close_transport(self) -> None:
        transport = self._transport  # not under the lock: Ctrl-C must not wait for a client being built
        if transport is not None:
            transport.close()

    def _body(self, request: ExtractionRequest) -> dict[str, Any] | None:
        """The request body instructor would send for `request`. Built without instructor
        (`agent.extract.llm.body`, proven equal to the client's by tests/test_llm_request_body.py) when
        the installed instructor is the release it mirrors. Otherwise its messages inside the
        body instructor built for the first request (model, temperature, and the schema as a
        tool or response format), learnt once per run through the real client
        (`current_request_body`) and used only if instructor sent that request's messages as
        given; failing that None, and every call goes through the client."""
        built = request_body(request, self.config)
        if built is not None:
            return built
        with self._template_lock:
            if not self._template_known:
                from agent.extract.llm.reference import current_request_body

                first = current_request_body(request, self.config)
                messages = [dict(m) for m in request.messages]
                if isinstance(first, dict) and canonical_json(first.get("messages")) == canonical_json(messages):
                    self._template = {k: v for k, v in first.items() if k != "messages"}
                self._template_known = True
        if self._template is None:
            return None
        return {**self._template, "messages": [dict(m) for m in request.messages]}

    def _record(
        self, request: ExtractionRequest, log: CallLog, elapsed: float, error: str, budget_hit: bool
    ) -> CallRecord:
        source = self._source(log, budget_hit)
        input_tokens = sum(token_counts(u)[0] for u in log.usages)
        output_tokens = sum(token_counts(u)[1] for u in log.usages)
        paid_in = sum(token_counts(u)[0] for u in log.paid_usages)
        paid_out = sum(token_counts(u)[1] for u in log.paid_usages)
        replayed = bool(log.sources) and all(s == "cassette" for s in log.sources)
        return CallRecord(
            doc_path=request.doc_path,
            chunk=request.chunk,
            source=source,
            model=self.config.model,
            attempts=log.attempts,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            # what this run paid: answers from the cache or a cassette cost nothing tonight
            cost_usd=round(self.config.cost_usd(paid_in, paid_out), 6),
            latency_s=round(log.recorded_latency_s if replayed else elapsed, 3),
            prompt=str(request.prompt),
            cassette=", ".join(dict.fromkeys(log.cassettes)),
            error=error,
            request_hash=log.keys[0] if log.keys else "",
            stale=", ".join(dict.fromkeys(log.stale)),
            provenance=log.provenance[0] if replayed else "",
            provenance_model=log.provenance[1] if replayed else "",
        )

    def _source(self, log: CallLog, budget_hit: bool) -> CallSource:
        if "live" in log.sources:
            return "live"
        if log.sources:
            return log.sources[0]
        if budget_hit and log.attempts == 0:
            return "skipped"
        return "cassette" if self.backend == "replay" else "live"

    def close(self) -> None:
        self._close_transport()
        if self._store is not None:
            self._store.close()

    def __enter__(self) -> LLMExtractor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _plain_answer(exchange: Exchange, body: dict[str, Any]) -> FileExtraction | None:
    """The extraction in a stored 2xx completion, when it is one finished answer in the shape
    the request asked for (a call of its one tool, or message content) and it validates."""
    response = exchange.response_body
    if not 200 <= exchange.status < 300 or not isinstance(response, dict):
        return None
    try:
        (choice,) = response["choices"]
        message = choice["message"]
        calls = message.get("tool_calls") or []
        if body.get("tools"):
            (call,) = calls
            if choice.get("finish_reason") not in ("stop", "tool_calls"):
                return None
            if call["function"]["name"] != body["tools"][0]["function"]["name"]:
                return None
            text = call["function"]["arguments"]
        else:
            if calls or choice.get("finish_reason") != "stop":
                return None
            text = message["content"]
        return FileExtraction.model_validate_json(text)
    except (KeyError, TypeError, ValueError):  # pydantic's ValidationError is a ValueError
        return None


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes: instructor wraps openai's error, which wraps ours."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 12:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def _find(exc: BaseException, kind: type[_E]) -> _E | None:
    for link in _chain(exc):
        if isinstance(link, kind):
            return link
    return None


def describe_failure(exc: BaseException, log: CallLog, config: LLMConfig) -> str:
    """One line that says what went wrong and, where we can tell, what to do about it."""
    return " ".join(_describe(exc, log, config).split())


def _describe(exc: BaseException, log: CallLog, config: LLMConfig) -> str:
    attempts = f"after {log.attempts} attempt{'s' if log.attempts != 1 else ''}"
    ours = _find(exc, LLMError)
    if ours is not None:
        return str(ours)
    if "No choices in OpenAI response" in str(exc):  # instructor's words for a 200 without a completion
        return (
            f"the endpoint answered without a completion (no choices) {attempts} — check that base_url points at"
            " an OpenAI-compatible chat completions API and that the model name is right"
        )
    import openai  # only here, on a failure: a replay answered from stored answers never loads it

    invalid = _find(exc, ValidationError)
    if invalid is not None:
        first = str(invalid).splitlines()
        summary = " ".join(first[:3])[:300]
        return (
            f"the answer never fit the schema {attempts} ({summary}) — try another model, "
            f"or mode 'json_schema' / 'tools'"
        )
    not_json = _find(exc, json.JSONDecodeError)
    if not_json is not None:
        return (
            f"the endpoint's reply is not JSON {attempts} ({not_json.msg}; starts "
            f"{not_json.doc[:60]!r}) — check base_url points at an OpenAI-compatible API"
        )
    status = _find(exc, openai.APIStatusError)
    if status is not None:
        return f"HTTP {status.status_code} from {config.base_url} {attempts}: {status.message}"[:400]
    if _find(exc, openai.APITimeoutError) is not None:
        return f"timed out {attempts} ({config.timeout_s:g}s each) — raise timeout_s or check the server"
    if _find(exc, openai.APIConnectionError) is not None:
        cause = _chain(exc)[-1]
        return f"could not reach {config.base_url} {attempts}: {type(cause).__name__}: {cause}"[:400]
    return f"{type(exc).__name__}: {exc}"[:400]
