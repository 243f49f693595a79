"""The response cache: validated answers kept on disk, keyed by their request.

The transport chain (`agent.extract.llm.transport`) serves hits from it; the extractor opens it
when it is built, so a cache folder that cannot be written is an error before any call.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import diskcache

from agent.core.errors import PredigestError
from agent.extract.llm.cassettes import Exchange

logger = logging.getLogger("predigest")

_NAMESPACE = "exchange/v1/"  # bump when the stored shape changes


class ResponseCache:
    """Validated exchanges by request key, in a diskcache."""

    def __init__(self, cache: diskcache.Cache) -> None:
        self._cache = cache

    def stored(self, key: str) -> Exchange | None:
        """The validated exchange kept for request key `key`, if any."""
        stored = self._cache.get(_NAMESPACE + key)
        return Exchange.from_dict(stored) if isinstance(stored, dict) else None

    def keep(self, key: str, exchange: Exchange) -> None:
        """Without the request body, which is what `key` hashes and most of an exchange's bytes:
        a cassette recorded from the cache takes it from the request."""
        self._cache.set(_NAMESPACE + key, {**exchange.to_dict(), "request_body": None})

    def close(self) -> None:
        self._cache.close()


def open_cache(cache_dir: Path | None) -> ResponseCache | None:
    """The response cache, or None. A folder that cannot be written is an error before any call
    (a run that pays for answers it cannot keep would pay again tomorrow); a corrupt cache is
    reported once and bypassed, so the evening still runs."""
    if cache_dir is None:
        return None
    hint = "pass --cache-dir with a writable folder, or --no-cache"
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = e.strerror or e
        raise PredigestError(f"cannot create the response cache folder {cache_dir}: {why}", hint=hint) from e
    if not os.access(cache_dir, os.W_OK | os.X_OK):
        raise PredigestError(f"the response cache folder {cache_dir} is not writable", hint=hint)
    try:
        return ResponseCache(diskcache.Cache(str(cache_dir)))
    except sqlite3.DatabaseError as e:
        logger.warning(
            "the response cache in %s cannot be used (%s); running without it — delete that folder to start afresh",
            cache_dir,
            e,
        )
        return None
