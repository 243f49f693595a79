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
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent.core.errors import BudgetExceeded, CassetteMiss, LLMError, PredigestError
from agent.extract import CallRecord, CallSource, ExtractionRequest, ExtractionResult
from agent.extract.llm.budget import Budget
from agent.extract.llm.calllog import CallLog, call_scope
from agent.extract.llm.cassettes import CassetteIndex, cached_tokens, token_counts
from agent.extract.llm.causes import cause_chain, find_cause
from agent.extract.llm.config import LLMConfig, require_key
from agent.extract.llm.store import open_cache
from schemas.compose import EveningComposition
from schemas.extraction import FileExtraction, SharedExtraction

if TYPE_CHECKING:
    import httpx2
    import instructor

# agent.extract.llm.client imports instructor and openai, and agent.extract.llm.transport the HTTP
# stack: both are imported when the first request is asked, so building an extractor (and
# importing this module) costs neither.


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during the calls, with how far the run got and whether its validated answers are
    in the response cache (a re-run resumes from there) or not (`--no-cache`, replay)."""

    def __init__(self, answered: int, total: int, *, cached: bool) -> None:
        kept = "cached: a re-run resumes from there" if cached else "not cached: a re-run asks for every answer again"
        super().__init__(f"{answered} of {total} answers received, {kept}")
        self.answered = answered
        self.total = total
        self.cached = cached


class LLMExtractor:
    """Answers extraction requests through instructor + openai over our transport chain."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.backend = config.effective_backend
        self.budget = Budget(config)
        if self.backend == "replay" and (gone := config.cassettes_gone) is not None:
            raise PredigestError(
                f"the cassette folder {gone} does not exist",
                hint="pass --cassettes with the folder that holds this workspace's cassettes, or another --backend",
            )
        there = [d for d in config.cassette_dirs if d.is_dir()]  # one gone of several: its requests miss
        self._index = (
            CassetteIndex.load(*(there or config.cassette_dirs))
            if self.backend in ("replay", "record")
            else CassetteIndex(config.cassette_dir)
        )
        require_key(config)  # before any call, though the client is built only when first needed
        # opened now: a cache folder that cannot be written is an error before any call
        self._store = open_cache(config.cache_dir) if self.backend in ("live", "record") else None
        self._transport: httpx2.BaseTransport | None = None  # built with the client
        self._client: instructor.Instructor | None = None
        self._client_lock = threading.Lock()

    def extract_all(
        self,
        requests: Sequence[ExtractionRequest],
        on_result: Callable[[ExtractionResult], None] | None = None,
    ) -> list[ExtractionResult]:
        """Results in request order; `on_result` is called as each one completes, from the
        calling thread, so it may update a progress bar without locking."""
        results: list[ExtractionResult | None] = [None] * len(requests)
        workers = max(1, min(self.config.concurrency, len(requests)))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="predigest-llm")
        futures: dict[Future[ExtractionResult], int] = {}
        try:
            futures = {pool.submit(self.extract_one, req): i for i, req in enumerate(requests)}
            for future in as_completed(futures):
                result = future.result()
                results[futures[future]] = result
                if on_result is not None:
                    on_result(result)
        except BaseException as exc:
            # Ctrl-C or a failing callback: drop the queued requests, stop retries and re-asks in the running ones
            self.budget.stop()
            pool.shutdown(wait=False, cancel_futures=True)
            if not isinstance(exc, KeyboardInterrupt):
                raise
            with contextlib.suppress(Exception):
                self._close_transport()  # aborts requests in flight rather than waiting out their timeout
            # an answer may have finished (and been cached) before this thread took it from the
            # queue: what the interruption says was kept counts it too
            for future, i in futures.items():
                if results[i] is None and future.done() and not future.cancelled() and future.result().answered:
                    results[i] = future.result()
                    if on_result is not None:
                        with contextlib.suppress(Exception):
                            on_result(results[i])
            answered = sum(1 for r in results if r is not None and r.answered)
            raise RunInterrupted(answered, len(requests), cached=self._store is not None) from None
        pool.shutdown()
        return [r for r in results if r is not None]

    def extract_one(self, request: ExtractionRequest) -> ExtractionResult:
        """One request, start to finish, through the client (a cassette or a cached answer is
        served below it, by the transport); any failure becomes the result's error."""
        from agent.extract.llm.client import create_extraction

        started = time.monotonic()
        extraction: FileExtraction | None = None
        shared: SharedExtraction | None = None
        composition: EveningComposition | None = None
        error = ""
        budget_hit = False
        with call_scope(
            request.doc_path, str(request.prompt), request.chunk, max(1, len(request.topics)), request.read_for
        ) as log:
            try:
                answer = create_extraction(self.client(), request, self.config)
                # a fresh model: instructor hangs the raw completion on the one it returns
                if request.kind == "compose":  # the evening's checker ran as instructor parsed it: not again
                    composition = EveningComposition.model_validate(answer.model_dump())
                elif request.topics:
                    shared = SharedExtraction.model_validate(answer.model_dump(), context={"topics": request.topics})
                else:
                    extraction = FileExtraction.model_validate(answer.model_dump())
                for write in log.deferred:  # only a validated answer is worth keeping
                    write()
            except Exception as exc:  # one document's failure must not stop the run
                error = describe_failure(exc, log, self.config)
                budget_hit = find_cause(exc, BudgetExceeded) is not None
        elapsed = time.monotonic() - started
        return ExtractionResult(
            request=request,
            extraction=extraction,
            record=self._record(request, log, elapsed, error, budget_hit),
            shared=shared,
            composition=composition,
        )

    def client(self) -> instructor.Instructor:
        """The instructor client over our transport chain, both built on first use (by one thread)."""
        with self._client_lock:
            if self._client is None:
                from agent.extract.llm.client import build_client
                from agent.extract.llm.transport import build_transport

                self._transport = build_transport(self.config, self.budget, self._index, cache=self._store)
                self._client = build_client(self.config, self._transport)
            return self._client

    def _close_transport(self) -> None:
        transport = self._transport  # not under the lock: Ctrl-C must not wait for a client being built
        if transport is not None:
            transport.close()

    def _record(
        self, request: ExtractionRequest, log: CallLog, elapsed: float, error: str, budget_hit: bool
    ) -> CallRecord:
        input_tokens, output_tokens, cached = _totals(log.usages)
        paid_in, paid_out, paid_cached = _totals(log.paid_usages)
        replayed = bool(log.sources) and all(s == "cassette" for s in log.sources)
        return CallRecord(
            doc_path=request.doc_path,
            chunk=request.chunk,
            source=self._source(log, budget_hit),
            model=self.config.model,
            attempts=log.attempts,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached,
            # what this run paid: answers from the cache or a cassette cost nothing tonight
            cost_usd=round(self.config.cost_usd(paid_in, paid_out, cached_tokens=paid_cached), 6),
            latency_s=round(log.recorded_latency_s if replayed else elapsed, 3),
            prompt=str(request.prompt),
            cassette=", ".join(dict.fromkeys(log.cassettes)),
            error=error,
            request_hash=log.keys[0] if log.keys else "",
            stale=", ".join(dict.fromkeys(log.stale)),
            provenance=log.provenance[0] if replayed else "",
            provenance_model=log.provenance[1] if replayed else "",
            topics=", ".join(request.topics),
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

    def __exit__(self, *exc: object) -> None:
        self.close()


def _totals(usages: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(input, output, cached) tokens over `usages`."""
    counts = [(*token_counts(u), cached_tokens(u)) for u in usages]
    return sum(c[0] for c in counts), sum(c[1] for c in counts), sum(c[2] for c in counts)


def describe_failure(exc: BaseException, log: CallLog, config: LLMConfig) -> str:
    """One line that says what went wrong and, where we can tell, what to do about it."""
    return " ".join(redacted(_describe(exc, log, config), config).split())


def redacted(text: str, config: LLMConfig) -> str:
    """`text` without the API key: a server that echoes the key in its 401 body had it printed and
    logged in clear. (Cut text is redacted before the cut, so no part of the key slips past.)"""
    key = config.api_key
    return text.replace(key, "[API key]") if len(key) >= 8 else text


def _describe(exc: BaseException, log: CallLog, config: LLMConfig) -> str:
    import openai  # only here, on a failure, which comes from the client (already imported)

    attempts = _after(log.attempts)
    answered = _answer_failure(exc, log, config)
    if answered:
        return answered
    status = find_cause(exc, openai.APIStatusError)
    if status is not None:
        return f"HTTP {status.status_code} from {config.base_url} {attempts}: {redacted(status.message, config)}"[:400]
    if find_cause(exc, openai.APITimeoutError) is not None:
        return (
            f"timed out {attempts} ({config.timeout_s:g}s each, {config.max_total_s:g}s in all)"
            " — raise timeout_s / max_total_s, or check the server"
        )
    if find_cause(exc, openai.APIConnectionError) is not None:
        cause = cause_chain(exc)[-1]
        return f"could not reach {config.base_url} {attempts}: {type(cause).__name__}: {redacted(str(cause), config)}"[
            :400
        ]
    return f"{type(exc).__name__}: {redacted(str(exc), config)}"[:400]


def _answer_failure(exc: BaseException, log: CallLog, config: LLMConfig) -> str:
    """What went wrong with what came back, read from instructor's exception fields (its failed
    attempts) and from our own errors; "" when nothing came back."""
    from instructor.core import InstructorRetryException

    attempts = _after(log.attempts)
    retried = find_cause(exc, InstructorRetryException)
    last = retried.failed_attempts[-1].exception if retried is not None and retried.failed_attempts else None
    invalid = find_cause(last, ValidationError) if last is not None else None
    ours = find_cause(exc, LLMError)
    if invalid is not None and isinstance(ours, CassetteMiss):  # the re-ask of an invalid answer was not recorded
        return f"the recorded answer does not fit the schema ({_summary(invalid)}) and no cassette holds its re-ask" + (
            " — re-record this document with --backend record, or fix the cassette's answer if it is a reference one"
        )
    if ours is not None:
        return str(ours)
    invalid = invalid or find_cause(exc, ValidationError)
    if invalid is not None:
        answers = retried.n_attempts if retried is not None else log.attempts
        return (
            f"the answer never fit the schema {_after(answers)}"
            f" ({_summary(invalid)}) — try another model, or mode 'json_schema' / 'tools'"
        )
    not_json = find_cause(exc, json.JSONDecodeError)
    if not_json is not None:
        return (
            f"the endpoint's reply is not JSON {attempts} ({not_json.msg}; starts "
            f"{not_json.doc[:60]!r}) — check base_url points at an OpenAI-compatible API"
        )
    if last is not None:  # instructor could not read a completion out of the answer
        return (
            f"the endpoint's answers carry no extraction {attempts} ({str(last)[:120]}) — check that base_url"
            f" {config.base_url} points at an OpenAI-compatible chat completions API and that the model is right"
        )
    return ""


def _after(attempts: int) -> str:
    return f"after {attempts} attempt{'s' if attempts != 1 else ''}"


def _summary(invalid: ValidationError) -> str:
    return " ".join(str(invalid).splitlines()[:3])[:300]
