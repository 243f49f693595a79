"""Transport retries: the one place that decides when an HTTP attempt is tried again.

The openai client is built with `max_retries=0` so that this policy alone owns retries; with
both layers on, attempts multiply and `Retry-After` is waited out twice. Retries sit below the
cache and the cassette layers, so a stored answer is never retried and only a final answer is
stored. Validation re-asks are instructor's, above all of this: each is a new exchange.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception_type,
    retry_if_result,
    stop_after_attempt,
    stop_before_delay,
    wait_exponential_jitter,
)

from agent.extract.llm.budget import Budget
from agent.extract.llm.calllog import current_call
from agent.extract.llm.cassettes import Exchange, request_key, today, usage_of
from agent.extract.llm.config import LLMConfig

EXCHANGE_EXT = "predigest_exchange"  # response extension carrying the `Exchange` upward

# Worth another attempt: the server may answer differently in a moment.
RETRY_EXCEPTIONS: tuple[type[BaseException], ...] = (
    httpx2.TimeoutException,
    httpx2.NetworkError,
    httpx2.RemoteProtocolError,
)
_RETRY_STATUSES = frozenset({408, 409, 429})
# Headers we must not pass on once the body has been read and decoded here.
_DROP_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})


def retry_after_s(headers: httpx2.Headers) -> float | None:
    """Seconds the server asked us to wait: `retry-after-ms`, then `Retry-After` as seconds or
    as an HTTP date (the forms the openai client itself understands)."""
    try:
        return float(headers["retry-after-ms"]) / 1000
    except (KeyError, TypeError, ValueError):
        pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        seconds = email.utils.mktime_tz(parsed) - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def is_retryable_response(response: httpx2.Response) -> bool:
    """429, 408, 409 and 5xx, unless the server says `x-should-retry: false`."""
    flag = response.headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    return response.status_code in _RETRY_STATUSES or response.status_code >= 500


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with jitter, bounded in attempts and in total time."""

    max_attempts: int
    max_total_s: float
    backoff_initial_s: float
    backoff_max_s: float

    @classmethod
    def from_config(cls, config: LLMConfig) -> RetryPolicy:
        return cls(
            max_attempts=config.max_attempts,
            max_total_s=config.max_total_s,
            backoff_initial_s=config.backoff_initial_s,
            backoff_max_s=config.backoff_max_s,
        )

    def wait_s(self, state: RetryCallState) -> float:
        """The server's `Retry-After` when it gave one, else our backoff."""
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            asked = retry_after_s(outcome.result().headers)
            if asked is not None:
                return asked
        backoff = wait_exponential_jitter(
            multiplier=self.backoff_initial_s, max=self.backoff_max_s, jitter=self.backoff_initial_s
        )
        return backoff(state)

    def retrying(self, sleep: Callable[[float], None] = time.sleep) -> Retrying:
        # stop_before_delay: give up rather than start a wait that would end past the bound
        # (a Retry-After longer than the time left fails now, not after sleeping).
        return Retrying(
            stop=stop_after_attempt(self.max_attempts) | stop_before_delay(self.max_total_s),
            wait=self.wait_s,
            retry=retry_if_exception_type(RETRY_EXCEPTIONS) | retry_if_result(is_retryable_response),
            retry_error_callback=_last_outcome,
            reraise=True,
            sleep=sleep,
        )


def _last_outcome(state: RetryCallState) -> Any:
    """When retries run out, hand the last response (e.g. the final 500) to the client, which
    turns it into its usual error; a last exception is re-raised as it was."""
    assert state.outcome is not None
    return state.outcome.result()


class RetryTransport(httpx2.BaseTransport):
    """Sends a request to the network until it gets a final answer, counting every attempt.

    Each attempt first takes a call from the budget. The body is read here, so the layers
    above get a buffered response with the parsed `Exchange` attached when it is a 2xx JSON
    answer: only those are ever cached or recorded.
    """

    def __init__(self, inner: httpx2.BaseTransport, policy: RetryPolicy, budget: Budget, model: str) -> None:
        self._inner = inner
        self._policy = policy
        self._budget = budget
        self._model = model

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        raw = request.read()
        response: httpx2.Response = self._policy.retrying(self._budget.sleep)(self._attempt, request, raw)
        current_call().note_live()
        return response

    def _attempt(self, request: httpx2.Request, raw: bytes) -> httpx2.Response:
        log = current_call()
        self._budget.acquire_call()
        started = time.monotonic()
        try:
            upstream = self._inner.handle_request(request)
            try:
                content = upstream.read()
            finally:
                upstream.close()
        except BaseException:
            log.note_attempt({})
            raise
        latency = time.monotonic() - started
        try:
            body: Any = json.loads(content)
        except ValueError:
            body = None
        usage = usage_of(body)
        log.note_attempt(usage)
        self._budget.charge(usage)

        extensions: dict[str, Any] = {}
        if body is not None and 200 <= upstream.status_code < 300:
            extensions[EXCHANGE_EXT] = Exchange(
                key=request_key(raw),
                method=request.method,
                path=request.url.path,
                request_body=None,  # the request holds it: a layer that keeps it (a cassette) reads it there
                status=upstream.status_code,
                response_body=body,
                usage=usage,
                latency_s=latency,
                model=str(body.get("model") or self._model) if isinstance(body, dict) else self._model,
                date=today(),
            )
        headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in _DROP_HEADERS]
        return httpx2.Response(upstream.status_code, headers=headers, content=content, extensions=extensions)

    def close(self) -> None:
        self._inner.close()
