"""The response cache: validated answers kept on disk, keyed by their request.

The transport chain (`agent.extract.llm.transport`) serves hits from it; the extractor opens it
when it is built, so a cache folder that cannot be written is an error before any call.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from dataclasses import fields
from pathlib import Path

import diskcache

from agent.core.errors import PredigestError
from agent.extract.llm.cassettes import Exchange
from agent.plan.outputs import check_reachable

logger = logging.getLogger("predigest")

_NAMESPACE = "exchange/v2/"  # bump when the stored shape changes (v2: JSON text, not a pickled dict)


class _TextOnly(diskcache.Disk):
    """A diskcache disk that never unpickles. diskcache pickles any value that is not a str,
    bytes or number, and unpickles whatever row it finds, so whoever can write a shared cache
    folder could run code as the user; answers are kept as JSON text, and a pickled row (an old
    entry, or a planted one) reads as nothing."""

    def fetch(self, mode: int, filename: str | None, value: object, read: bool) -> object:
        if mode == diskcache.core.MODE_PICKLE:
            return None
        return super().fetch(mode, filename, value, read)

    def get(self, key: object, raw: bool) -> object:
        return super().get(key, raw) if raw else None  # a key that is not raw is a pickle


class ResponseCache:
    """Validated exchanges by request key, as JSON text in a diskcache."""

    def __init__(self, cache: diskcache.Cache) -> None:
        self._cache = cache

    def stored(self, key: str) -> Exchange | None:
        """The validated exchange kept for request key `key`, if any: text that is not an
        exchange's JSON is a miss, to be asked again."""
        stored = self._cache.get(_NAMESPACE + key)
        try:
            data = json.loads(stored) if isinstance(stored, str) else None
            return Exchange(**data) if isinstance(data, dict) else None
        except (ValueError, TypeError):
            return None

    def keep(self, key: str, exchange: Exchange) -> None:
        """Without the request body, which is what `key` hashes and most of an exchange's bytes:
        a cassette recorded from the cache takes it from the request. The entry is built from the
        fields as they are (`asdict` would deep-copy the body only for it to be dropped)."""
        entry = {f.name: getattr(exchange, f.name) for f in fields(exchange)}
        text = json.dumps({**entry, "request_body": None}, ensure_ascii=False)
        self._cache.set(_NAMESPACE + key, text)

    def close(self) -> None:
        self._cache.close()


def open_cache(cache_dir: Path | None) -> ResponseCache | None:
    """The response cache, or None. A folder that cannot be written is an error before any call
    (a run that pays for answers it cannot keep would pay again tomorrow); a corrupt cache is
    reported once and bypassed, so the evening still runs."""
    if cache_dir is None:
        return None
    hint = "pass --cache-dir with a writable folder, or --no-cache"
    check_reachable(cache_dir, hint=hint)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = e.strerror or e
        raise PredigestError(f"cannot create the response cache folder {cache_dir}: {why}", hint=hint) from e
    if not os.access(cache_dir, os.W_OK | os.X_OK):
        raise PredigestError(f"the response cache folder {cache_dir} is not writable", hint=hint)
    try:
        return ResponseCache(diskcache.Cache(str(cache_dir), disk=_TextOnly))
    except sqlite3.DatabaseError as e:
        logger.warning(
            "the response cache in %s cannot be used (%s); running without it — delete that folder to start afresh",
            cache_dir,
            e,
        )
        return None
