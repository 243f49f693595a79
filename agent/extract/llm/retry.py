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
import threading
import time
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

from agent.core.errors import LLMError
from agent.extract.chunking import estimate_tokens
from agent.extract.llm.budget import Budget
from agent.extract.llm.calllog import current_call
from agent.extract.llm.cassettes import Exchange, canonical_json, counted, request_key, today, usage_of
from agent.extract.llm.config import LLMConfig
from agent.extract.llm.network import deadline

EXCHANGE_EXT = "predigest_exchange"  # response extension carrying the `Exchange` upward

# Worth another attempt: the server may answer differently in a moment.
RETRY_EXCEPTIONS: tuple[type[BaseException], ...] = (
    httpx2.TimeoutException,
    httpx2.NetworkError,
    httpx2.RemoteProtocolError,
)
_RETRY_STATUSES = frozenset({408, 409, 429})
REFUSALS = 3  # connections refused in a row before the endpoint is taken as down for the run
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


class RetryTransport(httpx2.BaseTransport):
    """Sends a request to the network until it gets a final answer, counting every attempt.

    Each attempt reserves a call from the budget and runs under its deadline. Only a 2xx chat
    completion carries an `Exchange` up (only those are cached or recorded); a 2xx that is none
    (an HTML page) fails this call and every later one, as do `REFUSALS` refused connections in a
    row: asking again would get the same answer.
    """

    def __init__(self, inner: httpx2.BaseTransport, config: LLMConfig, budget: Budget) -> None:
        self._inner = inner
        self._config = config
        self._budget = budget
        self._refused = 0  # connections refused in a row, across the run's threads
        self._refusal = ""  # what the last one said
        self._not_an_api: LLMError | None = None  # a 2xx that was no chat completion: the same for every call
        self._lock = threading.Lock()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        raw = request.read()
        prompt = _prompt_tokens(raw)
        started = time.monotonic()
        cfg = self._config
        # stop_before_delay: give up rather than start a wait that would end past the bound
        # (a Retry-After longer than the time left fails now, not after sleeping)
        retrying = Retrying(
            stop=stop_after_attempt(cfg.max_attempts) | stop_before_delay(cfg.max_total_s),
            wait=self._wait_s,
            retry=retry_if_exception_type(RETRY_EXCEPTIONS) | retry_if_result(is_retryable_response),
            retry_error_callback=self._give_up,
            reraise=True,
            sleep=self._budget.sleep,
        )
        response: httpx2.Response = retrying(self._attempt, request, raw, prompt, started)
        current_call().sources.append("live")  # its attempts were noted one by one
        return response

    def _attempt(self, request: httpx2.Request, raw: bytes, prompt: int, started: float) -> httpx2.Response:
        log = current_call()
        self._check_reachable()
        reserved = self._budget.reserve(prompt, log.answers)
        sent = time.monotonic()
        try:
            with deadline(min(self._config.timeout_s, self._config.max_total_s - (sent - started))):
                upstream = self._inner.handle_request(request)
                try:
                    content = upstream.read()
                finally:
                    upstream.close()
        except BaseException as exc:
            self._budget.settle(reserved, {})
            log.note_attempt({})
            self._note_refusal(exc)
            raise
        self._note_refusal(None)
        body = _json(content)
        answered = 200 <= upstream.status_code < 300
        usage = _counted_usage(body, prompt) if answered else {}
        log.note_attempt(usage)
        self._budget.settle(reserved, usage)
        if answered and not _is_completion(body):
            self._not_an_api = self._not_a_completion(upstream, content, body)
            raise self._not_an_api
        extensions = {EXCHANGE_EXT: self._exchange(request, raw, upstream, body, sent)} if answered else {}
        headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in _DROP_HEADERS]
        return httpx2.Response(upstream.status_code, headers=headers, content=content, extensions=extensions)

    def _exchange(
        self, request: httpx2.Request, raw: bytes, upstream: httpx2.Response, body: Any, sent: float
    ) -> Exchange:
        return Exchange(
            key=request_key(raw),
            method=request.method,
            path=request.url.path,
            request_body=None,  # the request holds it: a layer that keeps it (a cassette) reads it there
            status=upstream.status_code,
            response_body=body,
            usage=usage_of(body),  # as the endpoint said it: a cassette never holds our estimate
            latency_s=time.monotonic() - sent,
            model=str(body.get("model") or self._config.model),
            date=today(),
        )

    def _wait_s(self, state: RetryCallState) -> float:
        """The server's `Retry-After` when it gave one, else exponential backoff with jitter."""
        outcome = state.outcome
        if outcome is not None and not outcome.failed:
            asked = retry_after_s(outcome.result().headers)
            if asked is not None:
                return asked
        first = self._config.backoff_initial_s
        return wait_exponential_jitter(multiplier=first, max=self._config.backoff_max_s, jitter=first)(state)

    def _check_reachable(self) -> None:
        if self._not_an_api is not None:
            raise self._not_an_api
        if self._refused >= REFUSALS:
            raise LLMError(
                f"could not connect to {self._config.base_url} {REFUSALS} times in a row ({self._refusal}):"
                " no further call is tried this run",
                hint="check that the server is running and that base_url is right, then run again",
            )

    def _note_refusal(self, exc: BaseException | None) -> None:
        """Count a refused connection; anything that reached the server resets the count."""
        with self._lock:
            if isinstance(exc, httpx2.ConnectError):
                self._refused += 1
                self._refusal = str(exc)[:120]
            elif not isinstance(exc, httpx2.TimeoutException | LLMError):
                self._refused = 0

    def _not_a_completion(self, upstream: httpx2.Response, content: bytes, body: Any) -> LLMError:
        what = "not JSON" if body is None else "JSON without choices"
        kind = upstream.headers.get("content-type", "no content type")
        start = content[:60].decode("utf-8", "replace")
        return LLMError(
            f"the endpoint answered without a completion: HTTP {upstream.status_code} from {self._config.base_url}"
            f" is {what} ({kind}; starts {start!r}), not an OpenAI-compatible chat completion",
            hint="point base_url at the API's root (for example https://…/v1), not at a web page",
            raw_output=content[:2000].decode("utf-8", "replace"),
        )

    def _give_up(self, state: RetryCallState) -> Any:
        """When retries run out, hand the last response (e.g. the final 500) to the client, which
        turns it into its usual error; a last exception is re-raised as it was. A server that
        asked us to wait longer than `max_total_s` leaves is said as such."""
        assert state.outcome is not None
        response = state.outcome.result()
        asked = retry_after_s(response.headers)
        if asked is not None and state.attempt_number < self._config.max_attempts:
            left = max(0.0, self._config.max_total_s - state.seconds_since_start)
            raise LLMError(
                f"HTTP {response.status_code} from {self._config.base_url}: the server asked to wait {asked:g}s"
                f" (Retry-After), more than the {left:.0f}s left of max_total_s={self._config.max_total_s:g}",
                hint="run again later, or raise max_total_s to wait that long",
            )
        return response

    def close(self) -> None:
        self._inner.close()


def _json(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return None


def _is_completion(body: Any) -> bool:
    return isinstance(body, dict) and isinstance(body.get("choices"), list) and bool(body["choices"])


def _prompt_tokens(raw: bytes) -> int:
    """An estimate of what the endpoint will count for this request: its text, schema included."""
    body = _json(raw)
    return estimate_tokens(canonical_json(body) if body is not None else raw.decode("utf-8", "replace"))


def _counted_usage(body: Any, prompt: int) -> dict[str, Any]:
    """The answer's usage when it counts its tokens plainly, else our estimate of them (the
    prompt's, and the text of the answer's choices), so the cost limit still holds."""
    usage = usage_of(body)
    if counted(usage):
        return usage
    choices = body.get("choices") if isinstance(body, dict) else None
    answer = estimate_tokens(canonical_json(choices)) if isinstance(choices, list) else 0
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}
