"""Which extractor answers tonight: the model (live, recorded, replayed) or the offline reader.

`auto` means live with a key; without one, the cassettes if they answer any of the evening's
requests; otherwise the offline extractor, and the run says so once, plainly, in its summary
and in the briefing's footer. One function the pipeline calls, so the choice lives in one place.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.anchors import AnchorRegistry
from agent.extract import ExtractionRequest, Extractor
from agent.labels import ZH, Labels
from agent.llm import LLMConfig, LLMExtractor, cassettes_answer, resolve_backend
from agent.offline import OfflineExtractor
from agent.workspace import TopicSection
from schemas.documents import SourceDoc


@dataclass(frozen=True)
class Chosen:
    extractor: Extractor
    backend: str  # the effective backend: live, record, replay or offline
    note: str = ""  # the one plain sentence a run prints when it chose for the user

    def footer_source(self, prompt: str, model: str, labels: Labels = ZH) -> str:
        """What produced the extractions, for the briefing's footer."""
        return labels.extractor_offline if self.backend == "offline" else f"prompt {prompt} · model {model}"


def make_extractor(
    config: LLMConfig,
    requests: Sequence[ExtractionRequest],
    docs: Sequence[SourceDoc],
    registry: AnchorRegistry,
    topic: str,
    section: TopicSection | None,
) -> Chosen:
    """The extractor for one evening, decided per evening (a workspace may have cassettes for
    some evenings and not others)."""
    if config.backend == "offline":
        note = "extractor offline (--backend offline): no model was asked; items come from the documents' structure"
        return Chosen(_offline(docs, registry, topic, section), "offline", note)
    if config.backend == "auto" and not config.api_key and not cassettes_answer(list(requests), config):
        note = (
            f"extractor offline: no OPENAI_API_KEY and no cassette in {config.cassette_dir} answers this evening, "
            "so no model was asked; items come from the documents' structure (set a key for a model's reading)"
        )
        return Chosen(_offline(docs, registry, topic, section), "offline", note)
    return Chosen(LLMExtractor(config), resolve_backend(config))


def _offline(
    docs: Sequence[SourceDoc], registry: AnchorRegistry, topic: str, section: TopicSection | None
) -> OfflineExtractor:
    return OfflineExtractor({d.path: d for d in docs if d.read}, registry, topic, section)
