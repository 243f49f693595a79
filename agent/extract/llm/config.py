"""The LLM layer's settings are the `[llm]` section of the one settings model (`agent.core.settings`).

`LLMConfig` is that model under the name the LLM layer has always used; nothing in `agent.extract.llm`
reads the environment, so tests and the eval can build one by hand.
"""

from __future__ import annotations

from agent.core.errors import PredigestError
from agent.core.settings import Backend, EffectiveBackend, LLMSettings, Mode, default_cache_dir

LLMConfig = LLMSettings


def require_key(config: LLMSettings) -> None:
    """A live or recording run needs a key, said before any call (the extractor checks it when
    it is built, before the client is, since a replay may never build the client at all)."""
    backend = config.effective_backend
    if backend in ("live", "record") and not config.api_key:
        raise PredigestError(
            f"backend {backend!r} needs an API key",
            hint="set OPENAI_API_KEY (any non-empty value for a local server without auth)",
        )


__all__ = [
    "Backend",
    "EffectiveBackend",
    "LLMConfig",
    "Mode",
    "default_cache_dir",
    "require_key",
]
