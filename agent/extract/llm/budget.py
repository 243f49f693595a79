"""The run's spending limit: HTTP calls sent and dollars spent, shared by all worker threads.

It is checked at the network edge, just before a request goes out, so cache hits and replays
are never refused and a limit is never overshot by more than the calls already in flight.
"""

from __future__ import annotations

import threading
from typing import Any

from agent.core.errors import BudgetExceeded, Interrupted, PredigestError
from agent.extract.llm.cassettes import token_counts
from agent.extract.llm.config import LLMConfig


class Budget:
    def __init__(self, config: LLMConfig) -> None:
        if config.max_cost_usd and config.price() is None:  # a limit of 0 spends nothing: no price needed
            raise PredigestError(
                f"a cost limit of ${config.max_cost_usd} is set but model {config.model!r} has no price",
                hint="add the model to the [llm.prices] table, or drop the cost limit",
            )
        self._config = config
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.calls = 0
        self.cost_usd = 0.0

    def stop(self) -> None:
        """Ctrl-C: no new request and no retry from now on, in any worker."""
        self._stopped.set()

    def sleep(self, seconds: float) -> None:
        """A retry's wait that a stop cuts short (tenacity's `sleep`)."""
        if self._stopped.wait(seconds):
            raise Interrupted("interrupted while waiting to retry", hint="re-run: answers so far are cached")

    def acquire_call(self) -> None:
        """Reserve one HTTP call, or raise `BudgetExceeded` when the limit is reached."""
        cfg = self._config
        if self._stopped.is_set():
            raise Interrupted("interrupted before this request was sent", hint="re-run: answers so far are cached")
        with self._lock:
            if cfg.max_calls is not None and self.calls >= cfg.max_calls:
                raise BudgetExceeded(
                    f"budget reached: {self.calls} of max_calls={cfg.max_calls} calls made",
                    hint="raise --max-calls, or re-run: answers so far are cached",
                )
            if cfg.max_cost_usd is not None and self.cost_usd >= cfg.max_cost_usd:
                raise BudgetExceeded(
                    f"budget reached: ${self.cost_usd:.4f} spent of max_cost_usd=${cfg.max_cost_usd}",
                    hint="raise --max-cost, or re-run: answers so far are cached",
                )
            self.calls += 1

    def charge(self, usage: dict[str, Any]) -> None:
        """Add what one answered attempt cost."""
        cost = self._config.cost_usd(*token_counts(usage))
        with self._lock:
            self.cost_usd += cost
