"""Each document's facts kept beside its answer in the response cache, for the next run.

Grounding checks every claim against the facts its document states and the arXiv keys it
writes (`rules.document_facts`): a few regex passes over the whole text, most of what a warm
re-run of 200 documents spends once its answers come from the cache. They depend only on the
text and on the code that derives them, so they are kept under a key made of both: a change to
`agent/text.py`, `agent/arxiv.py` or `agent/rules.py` (or to Python's Unicode tables) is a miss,
never a stale answer. An entry that is not what was written is computed again. It lives in the
live run's response cache, opened and closed by the extractor; without one (`--no-cache`,
replay, offline, an extractor of your own) nothing is kept and nothing is read.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import diskcache

from agent import arxiv, rules, text
from agent.rules import DocFacts, document_facts, remember_document_facts

_NAMESPACE = "facts:"


@cache
def code_version() -> str:
    """The source of the code that derives a document's facts, hashed (with the interpreter's
    version and Unicode tables, which folding reads); '' when a source cannot be read, and then
    nothing is kept."""
    h = hashlib.sha256(f"{sys.version}|{unicodedata.unidata_version}".encode())
    try:
        for module in (text, arxiv, rules):
            h.update(Path(module.__file__ or "").read_bytes())
    except OSError:
        return ""
    return h.hexdigest()[:16]


class FactStore:
    """Facts of documents by text and code version, in the run's response cache (None: none)."""

    def __init__(self, cache: diskcache.Cache | None) -> None:
        self._cache = cache if code_version() else None

    def prepare(self, doc_text: str) -> None:
        """Make `rules.document_facts(doc_text)` answer from memory: from the store when an
        earlier run kept them, else computed now and kept."""
        if self._cache is None:
            document_facts(doc_text)
            return
        key = f"{_NAMESPACE}{code_version()}:{hashlib.sha256(doc_text.encode()).hexdigest()}"
        try:
            kept = _as_doc_facts(self._cache.get(key))
        except Exception:  # a damaged entry or database: compute instead
            kept = None
        if kept is not None:
            remember_document_facts(doc_text, kept)
            return
        computed = document_facts(doc_text)
        with contextlib.suppress(Exception):  # not kept: the next run computes them again
            self._cache.set(key, (sorted(computed[0]), sorted(computed[1])))


def _as_doc_facts(value: Any) -> DocFacts | None:
    """What `prepare` wrote (two lists of strings), or None for anything else."""
    if not (isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, list) for v in value)):
        return None
    if not all(isinstance(x, str) for v in value for x in v):
        return None
    return frozenset(value[0]), frozenset(value[1])
