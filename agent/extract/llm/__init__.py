"""The LLM layer: the only package that imports openai / instructor.

Modules:

- config.py     LLMConfig (the [llm] section of agent.core.settings) and the key check
- client.py     the instructor + openai client and the one extraction call
- transport.py  the httpx2 transport chain: replay | record -> cache -> retry -> network
- retry.py      tenacity policy for transport retries (429 / 5xx / timeouts, Retry-After), the
                endpoint that is down or no API, usage read or estimated
- network.py    the network under it: each attempt's socket operations bounded by its deadline
- cassettes.py  canonical request keys, cassette files, the index and its miss diagnosis
- budget.py     the run's call and cost limit
- calllog.py    what the transport learns about one request, via a contextvar
- extractor.py  LLMExtractor, the `agent.extract.Extractor` over all of the above
- reference.py  the request body the client sends, hand-written expected answers as replayable
                cassettes, and their re-keying
- relay.py      a real model's answers obtained elsewhere, recorded over loopback HTTP as `relayed`
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.extract.llm.config import LLMConfig

if TYPE_CHECKING:
    from agent.extract.llm.cassettes import cassettes_answer
    from agent.extract.llm.extractor import LLMExtractor
    from agent.extract.llm.reference import (
        RequestCheck,
        check_requests,
        rekey_reference_cassettes,
        write_reference_cassette,
    )

# Imported on first use: openai and instructor take over a second to import, and settings,
# `prompt show` or `--help` need neither.
_LAZY = {
    "LLMExtractor": "agent.extract.llm.extractor",
    "RequestCheck": "agent.extract.llm.reference",
    "cassettes_answer": "agent.extract.llm.cassettes",
    "check_requests": "agent.extract.llm.reference",
    "rekey_reference_cassettes": "agent.extract.llm.reference",
    "write_reference_cassette": "agent.extract.llm.reference",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LLMConfig",
    "LLMExtractor",
    "RequestCheck",
    "cassettes_answer",
    "check_requests",
    "rekey_reference_cassettes",
    "write_reference_cassette",
]
