"""Each document's facts derived on the other core, while this process talks to the endpoint.

Grounding checks every claim against the facts its document states and the arXiv keys it
writes: a few regex passes over the whole text, about 1.5 ms of a 2–20 kB document. Under
the GIL that time comes out of the client's: with a fast endpoint, a large evening spends a
sixth of its run on it. They depend on the text alone, so a second process can derive them
while this one sends requests: `python -m agent.factworker` reads texts on stdin, one JSON
string a line, and answers each with one JSON line, in order. It imports only `agent.text`
and `agent.arxiv` (the standard library beneath them), so it is ready in a tenth of a second.

`derive` is the one definition of a document's facts; `agent.rules.document_facts` keeps its
results in memory, `agent.factstore` beside the answers in the response cache. The worker is
an optimisation only: whatever it does not hand back (it could not start, it died, it said
something else) is derived here, and the briefing is the same either way.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from itertools import chain, repeat
from pathlib import Path
from typing import IO

from agent.arxiv import id_keys
from agent.text import facts

DocFacts = tuple[frozenset[str], frozenset[str]]  # (facts a document states, arXiv keys it writes)

_PIPE_GRACE_S = 1.0
_NICER = 10  # the worker's scheduling priority, below this process's
WORKER_FROM = 32  # fewer documents than this are derived here: starting a process costs ~0.1 s of a core


def derive(text: str) -> DocFacts:
    """What grounding checks a document's claims against, from its text alone."""
    return frozenset(facts(text)), id_keys(text)


def spare_cores() -> int:
    """Cores this process may use beyond the one it runs on."""
    try:
        return len(os.sched_getaffinity(0)) - 1
    except AttributeError:  # not on Linux
        return (os.cpu_count() or 1) - 1


class FactWorker:
    """A `python -m agent.factworker` process deriving `texts` in order; `get` hands back each
    one's facts once derived. Threads feed it and read it, so neither pipe can fill and block
    the other; a worker that fails is noticed by `get`, which then answers None."""

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = list(texts)
        self._index = {t: i for i, t in reversed(list(enumerate(self._texts)))}
        self._done: list[DocFacts] = []
        self._over = False  # the worker said all it will say
        self._changed = threading.Condition()
        root = str(Path(__file__).resolve().parent.parent)  # the tree this module was imported from
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        self._proc = subprocess.Popen(
            [sys.executable, "-S", "-m", "agent.factworker"],  # -S: the worker needs nothing from site-packages
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._threads = [
            threading.Thread(target=self._feed, args=(self._proc.stdin,), name="predigest-facts-in", daemon=True),
            threading.Thread(target=self._read, args=(self._proc.stdout,), name="predigest-facts-out", daemon=True),
        ]
        for t in self._threads:
            t.start()

    def pending(self, text: str) -> bool:
        """Whether `text` was sent and its facts are still to come."""
        i = self._index.get(text)
        with self._changed:
            return i is not None and len(self._done) <= i and not self._over

    def get(self, text: str) -> DocFacts | None:
        """`text`'s facts, once the worker has them; None if it never will (not sent, or the
        worker failed first)."""
        i = self._index.get(text)
        if i is None:
            return None
        with self._changed:
            while len(self._done) <= i and not self._over:
                self._changed.wait()
            return self._done[i] if i < len(self._done) else None

    def close(self) -> None:
        """Stop the worker, whatever it was doing, and reap it. Its pipes' threads end with it;
        one still held open by something the worker started is left to end on its own (they
        are daemons), rather than kept waiting for."""
        with contextlib.suppress(OSError):
            self._proc.kill()
        self._proc.wait()
        deadline = time.monotonic() + _PIPE_GRACE_S
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))

    def _feed(self, pipe: IO[bytes]) -> None:
        try:
            for text in self._texts:
                # UTF-8 (surrogates passed through, as `main` reads them), half the bytes of \u
                # escapes: JSON escapes every newline, and `main` splits bytes on b"\n" only
                pipe.write(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n")
        except (OSError, ValueError):  # the worker is gone: `_read` notices
            pass
        finally:
            with contextlib.suppress(OSError, ValueError):
                pipe.close()  # the worker ends once it has answered what it was given

    def _read(self, pipe: IO[bytes]) -> None:
        try:
            for line in pipe:
                got = as_doc_facts(json.loads(line))
                if got is None:
                    break
                with self._changed:
                    self._done.append(got)
                    self._changed.notify_all()
        except (OSError, ValueError):
            pass
        finally:
            with self._changed:
                self._over = True
                self._changed.notify_all()


def as_doc_facts(value: object) -> DocFacts | None:
    """A document's facts as written to a pipe or a cache (two lists of strings: `main` writes
    lists, `agent.factstore` a tuple of them), or None for anything else."""
    if not (isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, list) for v in value)):
        return None
    if not all(map(isinstance, chain.from_iterable(value), repeat(str))):  # in C: ~160 facts a document
        return None
    return frozenset(value[0]), frozenset(value[1])


def main() -> None:
    """The worker: a text a line in, its facts a line out, until stdin closes. It runs at a
    lower priority: on a busy machine the process talking to the endpoint comes first."""
    with contextlib.suppress(OSError, AttributeError):  # AttributeError: no os.nice on this platform
        os.nice(_NICER)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        stated, keys = derive(json.loads(line.decode("utf-8", "surrogatepass")))
        out.write(json.dumps([sorted(stated), sorted(keys)]).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    main()
