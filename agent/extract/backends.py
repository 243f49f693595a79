"""Which extractor answers tonight: the model (live, recorded, replayed) or the offline reader.

`auto` means live with a key; without one, the cassettes if they answer any of the evening's
requests; otherwise the offline extractor, and the run says so once, plainly, in its summary
and in the briefing's footer. `answers_offline` decides, once per evening; the pipeline then makes
the extractor it chose.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.core.settings import LLMSettings, TopicSection
from agent.extract import CallRecord, ExtractionRequest
from agent.extract.offline.extractor import OfflineExtractor
from agent.plan.anchors import AnchorRegistry
from schemas.documents import SourceDoc

if TYPE_CHECKING:
    from agent.extract.llm import LLMExtractor


def model_extractor(llm: LLMSettings) -> LLMExtractor:
    """A model's extractor (live, recorded or replayed): agent.extract.llm, heavy to import (openai,
    instructor), is imported only here, when a model answers."""
    from agent.extract.llm import LLMExtractor

    return LLMExtractor(llm)


def offline_extractor(
    docs: Sequence[SourceDoc], registry: AnchorRegistry, topic: str, section: TopicSection | None
) -> OfflineExtractor:
    """The offline reader of one topic's evening: it reads the documents the evening reads."""
    return OfflineExtractor({d.path: d for d in docs if d.read}, registry, topic, section)


def answers_offline(llm: LLMSettings, requests: Sequence[ExtractionRequest]) -> bool:
    """Whether the offline extractor answers these requests: asked for, or `auto` with neither
    a key nor a cassette that answers any of them."""
    from agent.extract.llm import cassettes_answer

    if llm.backend == "offline":
        return True
    return llm.backend == "auto" and not llm.api_key and not cassettes_answer(list(requests), llm)


def offline(records: Sequence[CallRecord]) -> bool:
    """Whether the offline extractor answered the evening: every call record says so."""
    return bool(records) and all(r.source == "offline" for r in records)


def used_backend(llm: LLMSettings, records: Sequence[CallRecord]) -> tuple[str, str]:
    """(the backend that answered, the one plain sentence the run summary says about it)."""
    if not offline(records):
        return llm.effective_backend, ""
    if llm.backend == "offline":
        return "offline", (
            "extractor offline (--backend offline): no model was asked; items come from the documents' structure"
        )
    gone = llm.cassettes_gone
    why = (
        f"the cassette folder {gone} does not exist"
        if gone
        else f"no cassette in {llm.cassette_dir} answers this evening"
    )
    return "offline", (
        f"extractor offline: no OPENAI_API_KEY, and {why}, "
        "so no model was asked; items come from the documents' structure (set a key for a model's reading)"
    )
