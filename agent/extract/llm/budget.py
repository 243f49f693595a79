"""The run's spending limit: HTTP calls sent and dollars spent, shared by all worker threads.

Checked just before a request goes out, so cache hits and replays are never refused. A call
reserves its worst case (its prompt's estimate plus `WORST_ANSWER_TOKENS`) and settles at what it
cost, so the calls in flight together never pass `max_cost_usd`. Usage a server does not count
plainly is estimated (`agent.extract.llm.retry`), so a cost limit still trips.
"""

from __future__ import annotations

import threading
from typing import Any

from agent.core.errors import BudgetExceeded, Interrupted, PredigestError
from agent.extract.llm.cassettes import cached_tokens, token_counts
from agent.extract.llm.config import LLMConfig

# The request carries no `max_tokens` (it is part of every cassette's key), so a call's answer
# is planned at this size: twice the longest answer of the demo evening.
WORST_ANSWER_TOKENS = 4096


class Budget:
    def __init__(self, config: LLMConfig) -> None:
        if config.max_cost_usd and config.price() is None:  # a limit of 0 spends nothing: no price needed
            raise PredigestError(
                f"a cost limit of ${config.max_cost_usd} is set but model {config.model!r} has no price",
                hint="add the model to the [llm.prices] table, or drop the cost limit",
            )
        self._config = config
        self._settled = threading.Condition()  # a reservation was settled: a waiting call may fit now
        self._stopped = threading.Event()
        self.calls = 0
        self.cost_usd = 0.0
        self.reserved_usd = 0.0  # the worst case of the calls in flight

    @property
    def _resume(self) -> str:
        cached = self._config.cache_dir is not None and self._config.effective_backend in ("live", "record")
        return "re-run: answers so far are cached" if cached else "re-run (without a cache every answer is asked again)"

    def stop(self) -> None:
        """Ctrl-C: no new request and no retry from now on, in any worker."""
        self._stopped.set()

    def sleep(self, seconds: float) -> None:
        """A retry's wait that a stop cuts short (tenacity's `sleep`)."""
        if self._stopped.wait(seconds):
            raise Interrupted("interrupted while waiting to retry", hint=self._resume)

    def reserve(self, prompt_tokens: int, answers: int = 1) -> float:
        """Reserve one HTTP call and its worst-case cost (returned, to `settle` later), or raise
        `BudgetExceeded` when the call limit is reached or that worst case would pass the cost
        limit. A call that fits what is spent but not what is in flight waits for those calls
        to settle, rather than being skipped for a reservation that may never be spent. An answer
        that holds `answers` readings (a shared request's, one per topic) is planned that many
        times the size."""
        worst = self._config.cost_usd(prompt_tokens, WORST_ANSWER_TOKENS * max(1, answers))
        with self._settled:
            while not self._fits(worst):
                self._settled.wait(0.5)  # with a timeout: a stop is seen even if no call settles
            self.calls += 1
            self.reserved_usd += worst
        return worst

    def _fits(self, worst: float) -> bool:
        """Whether a call of this worst case may go now (False: once calls in flight settle);
        raises when it never may."""
        cfg = self._config
        if self._stopped.is_set():
            raise Interrupted("interrupted before this request was sent", hint=self._resume)
        if cfg.max_calls is not None and self.calls >= cfg.max_calls:
            raise BudgetExceeded(
                f"budget reached: {self.calls} of max_calls={cfg.max_calls} calls made",
                hint=f"raise --max-calls, or {self._resume}",
            )
        cap = cfg.max_cost_usd
        if cap is None:
            return True
        if self.cost_usd >= cap or self.cost_usd + worst > cap:
            raise BudgetExceeded(
                f"budget reached: ${self.cost_usd:.4f} spent of max_cost_usd=${cap}, and the next call"
                f" could cost up to ${worst:.4f}",
                hint=f"raise --max-cost, or {self._resume}",
            )
        return self.cost_usd + self.reserved_usd + worst <= cap

    def settle(self, reserved: float, usage: dict[str, Any]) -> None:
        """Replace a call's reservation by what it cost (nothing for a call that got no answer)."""
        cost = self._config.cost_usd(*token_counts(usage), cached_tokens=cached_tokens(usage))
        with self._settled:
            self.reserved_usd = max(0.0, self.reserved_usd - reserved)
            self.cost_usd += cost
            self._settled.notify_all()
