"""The LLM layer: the only package that imports openai / instructor.

`LLMExtractor` (extractor.py) asks through the real openai client and instructor (client.py) over
an httpx2 transport chain (transport.py: replay | record -> cache -> retry -> network), so a
replayed or cached answer takes the same path through the client as a live one.
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

# Imported on first use: openai and instructor are heavy to import, and settings,
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
