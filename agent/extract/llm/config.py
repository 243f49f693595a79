"""The LLM layer's settings are the `[llm]` section of the one settings model (`agent.core.settings`).

Nothing in `agent.extract.llm` reads the environment, so tests and the eval can build an `LLMConfig`
by hand.
"""

from __future__ import annotations

from agent.core.errors import PredigestError
from agent.core.settings import LLMSettings

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
