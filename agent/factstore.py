"""Each document's facts kept beside its answer in the response cache, for the next run.

Grounding checks every claim against the facts its document states and the arXiv keys it
writes (`rules.document_facts`): a few regex passes over the whole text, most of what a warm
re-run of 200 documents spends once its answers come from the cache. They depend only on the
text and on the code that derives them, so they are kept under a key made of both: a change to
`agent/text.py`, `agent/arxiv.py` or `agent/factworker.py` (or to Python's Unicode tables) is a
miss, never a stale answer. An entry that is not what was written is derived
again. What no earlier run kept is derived by a worker process on a large evening
(`agent.factworker`), else here. It lives in the live run's response cache, opened and closed by
the extractor; without one (`--no-cache`, replay, offline, an extractor of your own) nothing is
kept and nothing is read.
"""

from __future__ import annotations

import contextlib
import hashlib
import sys
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import diskcache

from agent import arxiv, factworker, text
from agent.factworker import WORKER_FROM, DocFacts, FactWorker, as_doc_facts, spare_cores
from agent.rules import document_facts, remember_document_facts, remembers_document_facts

_NAMESPACE = "facts:"


@cache
def code_version() -> str:
    """The source of the code that derives a document's facts (`factworker.derive` and the two
    modules it reads), hashed with the interpreter's version and Unicode tables, which folding
    reads; '' when a source cannot be read, and then nothing is kept. The rule layer that uses
    the facts is not in it: a change there does not make them stale."""
    h = hashlib.sha256(f"{sys.version}|{unicodedata.unidata_version}".encode())
    try:
        for module in (text, arxiv, factworker):
            h.update(Path(module.__file__ or "").read_bytes())
    except OSError:
        return ""
    return h.hexdigest()[:16]


class FactStore:
    """Facts of documents by text and code version, in the run's response cache (None: none),
    derived by a worker process (`agent.factworker`) when an evening has many to derive."""

    def __init__(self, cache: diskcache.Cache | None, *, worker_from: int | None = None) -> None:
        self._cache = cache if code_version() else None
        self._worker_from = WORKER_FROM if worker_from is None else worker_from
        self._worker: FactWorker | None = None
        self._looked: dict[str, str] = {}  # the texts looked up in the store (and missing), with their keys

    def start(self, texts: Sequence[str]) -> None:
        """Read back what earlier runs kept for `texts`, and have the rest derived on another
        core if there are enough of them to pay for a process (and a core to run it on)."""
        missing = [t for t in dict.fromkeys(texts) if not self._read_back(t)]
        if len(missing) >= self._worker_from and spare_cores() > 0 and sys.executable:
            try:
                self._worker = FactWorker(missing)
            except OSError:  # no process to be had: derived here, as each is needed
                self._worker = None

    def prepare(self, doc_text: str, *, wait: bool = True) -> bool:
        """Make `rules.document_facts(doc_text)` answer from memory: from the store when an
        earlier run kept them, else from the worker, else derived now; then kept. Without
        `wait`, a document the worker is still on is left to it (False)."""
        if remembers_document_facts(doc_text) or (doc_text not in self._looked and self._read_back(doc_text)):
            return True
        worker = self._worker
        if not wait and worker is not None and worker.pending(doc_text):
            return False
        derived = worker.get(doc_text) if worker is not None else None
        if derived is None:  # not sent to the worker, or the worker failed
            derived = document_facts(doc_text)
        else:
            remember_document_facts(doc_text, derived)
        self._keep(doc_text, derived)
        return True

    def close(self) -> None:
        """Stop the worker, if one was started."""
        if self._worker is not None:
            self._worker.close()
            self._worker = None

    def _key(self, doc_text: str) -> str:
        key = self._looked.get(doc_text)
        if key is None:
            key = f"{_NAMESPACE}{code_version()}:{hashlib.sha256(doc_text.encode()).hexdigest()}"
        return key

    def _read_back(self, doc_text: str) -> bool:
        """Whether an earlier run kept `doc_text`'s facts (now in memory)."""
        if self._cache is None:
            return False
        key = self._key(doc_text)
        try:
            kept = as_doc_facts(self._cache.get(key))
        except Exception:  # a damaged entry or database: derive instead
            kept = None
        if kept is None:
            self._looked[doc_text] = key  # `prepare` derives it, and keeps it under this key
            return False
        remember_document_facts(doc_text, kept)
        return True

    def _keep(self, doc_text: str, derived: DocFacts) -> None:
        if self._cache is not None:
            with contextlib.suppress(Exception):  # not kept: the next run derives them again
                self._cache.set(self._key(doc_text), (sorted(derived[0]), sorted(derived[1])))
