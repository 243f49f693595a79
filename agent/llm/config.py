"""The LLM layer's settings are the `[llm]` section of the one settings model (`agent.settings`).

`LLMConfig` is that model under the name the LLM layer has always used; nothing in `agent.llm`
reads the environment, so tests and the eval can build one by hand.
"""

from __future__ import annotations

from agent.settings import Backend, EffectiveBackend, LLMSettings, Mode, default_cache_dir

LLMConfig = LLMSettings

MODES: tuple[str, ...] = ("tools", "json_schema")
BACKENDS: tuple[str, ...] = ("auto", "live", "record", "replay", "offline")  # offline: agent.offline, no model


def resolve_backend(config: LLMSettings) -> EffectiveBackend:
    """`auto` means live when a key is set, replay otherwise: CI without a key never calls out."""
    return config.effective_backend


__all__ = [
    "BACKENDS",
    "MODES",
    "Backend",
    "EffectiveBackend",
    "LLMConfig",
    "Mode",
    "default_cache_dir",
    "resolve_backend",
]
