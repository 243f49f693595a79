"""Which extractor answers tonight: the model (live, recorded, replayed) or the offline reader.

`auto` means live with a key; without one, the cassettes if they answer any of the evening's
requests; otherwise the offline extractor, and the run says so once, plainly, in its summary
and in the briefing's footer. One function the pipeline calls, so the choice lives in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from agent.core.settings import LLMSettings, TopicSection
from agent.extract import CallRecord, ExtractionRequest
from agent.extract.offline.extractor import OfflineExtractor
from agent.plan.anchors import AnchorRegistry
from schemas.documents import SourceDoc

if TYPE_CHECKING:
    from agent.extract.llm import LLMExtractor

# agent.extract.llm's extractor is imported only when a model answers (openai + instructor take a second)
EveningExtractor: TypeAlias = "LLMExtractor | OfflineExtractor"


def make_extractor(
    llm: LLMSettings,
    requests: Sequence[ExtractionRequest],
    docs: Sequence[SourceDoc],
    registry: AnchorRegistry,
    topic: str,
    section: TopicSection | None,
) -> EveningExtractor:
    """The extractor for one evening, decided per evening (a workspace may have cassettes for
    some evenings and not others)."""
    from agent.extract.llm import LLMExtractor

    if answers_offline(llm, requests):
        return OfflineExtractor({d.path: d for d in docs if d.read}, registry, topic, section)
    return LLMExtractor(llm)


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
    return "offline", (
        f"extractor offline: no OPENAI_API_KEY and no cassette in {llm.cassette_dir} answers this evening, "
        "so no model was asked; items come from the documents' structure (set a key for a model's reading)"
    )
