"""An exception's chain of causes, searched by type.

instructor wraps openai's error, which wraps ours (a budget stop, a cassette miss, a reference
answer captured on its way through the client): the extractor and the reference transports
both look through the chain for the one they act on. A module of its own so that neither
imports the other for it.
"""

from __future__ import annotations

from typing import TypeVar

_E = TypeVar("_E", bound=BaseException)


def cause_chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes: instructor wraps openai's error, which wraps ours."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 12:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def find_cause(exc: BaseException, kind: type[_E]) -> _E | None:
    """The first of `exc` and its causes that is a `kind`."""
    return next((link for link in cause_chain(exc) if isinstance(link, kind)), None)
