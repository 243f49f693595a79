"""Everything the LLM layer needs to know, in one frozen value passed in explicitly.

The settings layer (flags > environment > predigest.toml > defaults) builds an `LLMConfig`;
nothing in `agent.llm` reads the environment, so tests and the eval can build one by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import platformdirs

from agent.errors import PredigestError

Mode = Literal["tools", "json_schema"]
Backend = Literal["auto", "live", "record", "replay", "offline"]
EffectiveBackend = Literal["live", "record", "replay", "offline"]

MODES: tuple[str, ...] = ("tools", "json_schema")
BACKENDS: tuple[str, ...] = ("auto", "live", "record", "replay", "offline")  # offline: agent.offline, no model


def default_cache_dir() -> Path:
    """The user's cache dir, resolved when a config is built (never at import time)."""
    return Path(platformdirs.user_cache_dir("predigest")) / "llm"


@dataclass(frozen=True)
class LLMConfig:
    """How to reach the model and how far to go before giving up.

    `api_key` is excluded from `repr`, equality and `public_dict()`: a config can be logged
    or stamped on a run record without leaking the key.
    """

    base_url: str = "https://api.openai.com/v1"
    api_key: str = field(default="", repr=False, compare=False)
    model: str = "gpt-4o-mini"
    mode: Mode = "tools"  # "tools" for OpenAI, "json_schema" for servers without tool calls
    backend: Backend = "auto"  # auto: live when there is a key, replay when there is none
    cassette_dir: Path = Path("cassettes")
    cache_dir: Path | None = field(default_factory=default_cache_dir)  # None disables the cache
    concurrency: int = 4  # requests in flight at once
    timeout_s: float = 120.0  # per HTTP attempt
    max_attempts: int = 5  # HTTP attempts per exchange (transport retries included)
    max_total_s: float = 300.0  # wall-clock bound on one exchange's attempts and waits
    backoff_initial_s: float = 1.0  # first backoff; doubles per attempt, with jitter
    backoff_max_s: float = 30.0  # cap on one backoff (a server's Retry-After is honoured)
    max_validation_retries: int = 2  # instructor re-asks after a schema-invalid answer
    max_calls: int | None = None  # HTTP requests sent to the endpoint this run; None = unlimited
    max_cost_usd: float | None = None  # spend this run; None = unlimited
    # model -> (USD per 1M input tokens, USD per 1M output tokens)
    prices: Mapping[str, tuple[float, float]] = field(default_factory=dict, hash=False)
    temperature: float = 0.0

    def __post_init__(self) -> None:
        problems = []
        if self.mode not in MODES:
            problems.append(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.backend not in BACKENDS:
            problems.append(f"backend {self.backend!r} is not one of {', '.join(BACKENDS)}")
        for name in ("concurrency", "max_attempts"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be at least 1")
        for name in ("timeout_s", "max_total_s"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be positive")
        if self.max_validation_retries < 0:
            problems.append("max_validation_retries must be 0 or more")
        if self.max_calls is not None and self.max_calls < 0:
            problems.append("max_calls must be 0 or more (None for no limit)")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            problems.append("max_cost_usd must be 0 or more (None for no limit)")
        if problems:
            raise PredigestError(
                "invalid LLM settings: " + "; ".join(problems),
                hint="fix the [llm] settings in predigest.toml or the matching flags",
            )

    def price(self, model: str = "") -> tuple[float, float] | None:
        """USD per 1M (input, output) tokens for `model` (default: the configured model)."""
        return self.prices.get(model or self.model)

    def cost_usd(self, input_tokens: int, output_tokens: int, model: str = "") -> float:
        """What the tokens cost at the configured price; 0.0 when the model has no price."""
        price = self.price(model)
        if price is None:
            return 0.0
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000

    def public_dict(self) -> dict[str, object]:
        """The settings as plain values for run records and `--debug` output, without the key."""
        return {
            "base_url": self.base_url,
            "api_key": "set" if self.api_key else "",
            "model": self.model,
            "mode": self.mode,
            "backend": self.backend,
            "effective_backend": resolve_backend(self),
            "cassette_dir": str(self.cassette_dir),
            "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "concurrency": self.concurrency,
            "timeout_s": self.timeout_s,
            "max_attempts": self.max_attempts,
            "max_total_s": self.max_total_s,
            "max_validation_retries": self.max_validation_retries,
            "max_calls": self.max_calls,
            "max_cost_usd": self.max_cost_usd,
            "temperature": self.temperature,
        }


def resolve_backend(config: LLMConfig) -> EffectiveBackend:
    """`auto` means live when a key is set, replay otherwise: CI without a key never calls out."""
    if config.backend == "auto":
        return "live" if config.api_key else "replay"
    return config.backend
