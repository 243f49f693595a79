"""The contract between the pipeline and whatever answers extraction requests.

The offline (replayed), recorded and live extractors all implement `Extractor`, so nothing
upstream knows which one it has. Only `agent.extract.llm` imports openai / instructor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from schemas.compose import EveningComposition
from schemas.extraction import FileExtraction, SharedExtraction

Answer = FileExtraction | SharedExtraction | EveningComposition


@dataclass(frozen=True)
class PromptStamp:
    """Which prompt produced a request: stamped on cassettes, run records and briefings."""

    name: str
    version: str
    sha256: str  # first 12 hex digits of the template's content hash
    schema: str = ""  # first 12 hex digits of the response schema's hash: the model is told both

    def __str__(self) -> str:
        tail = f"+schema#{self.schema}" if self.schema else ""
        return f"{self.name}@{self.version}#{self.sha256}{tail}"


@dataclass(frozen=True)
class ExtractionRequest:
    """One structured call: the messages for one document (or one chunk of it), or — `kind`
    "compose" — for one topic's evening as a whole (`doc_path` is then `compose/<topic>`)."""

    doc_path: str  # workspace-relative, e.g. "inbox/jay/2026-09-22-x.md"
    messages: tuple[dict[str, str], ...]  # ({"role": "system", ...}, {"role": "user", ...})
    prompt: PromptStamp
    chunk: int = 0  # 0-based index when a long document is split
    chunks: int = 1
    # the topics a shared request reads the document for (its answer is a `SharedExtraction`);
    # empty for a request for one topic (its answer is a `FileExtraction`)
    topics: tuple[str, ...] = ()
    topic: str = ""  # the one topic of a one-topic request ('' when its maker did not say)
    kind: Literal["extract", "compose"] = "extract"
    # a composing request's validation context: the rules' checker of its answer (`agent.rules.editor`)
    context: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    # per topic, the anchor and open-item ids the prompt lists ('A7', 'Q2'): all an answer may cite
    listed: Mapping[str, tuple[str, ...]] | None = field(default=None, compare=False, repr=False)

    def answer_schema(self) -> type[Answer]:
        """What the request asks for: an evening's composition, a shared reading, or one topic's."""
        if self.kind == "compose":
            return EveningComposition
        return SharedExtraction if self.topics else FileExtraction

    def validation_context(self) -> dict[str, Any] | None:
        """What the answer is validated against: the evening's checker, or the topics asked and the
        ids each topic's part may cite."""
        if self.kind == "compose":
            return dict(self.context or {})
        context: dict[str, Any] = {"topics": list(self.topics)} if self.topics else {}
        if self.listed is not None:
            context["listed"] = {t: list(ids) for t, ids in self.listed.items()}
        return context or None

    @property
    def read_for(self) -> tuple[str, ...]:
        """The topics the answer is for: a shared request's, or a one-topic request's own. A cassette
        answers only a request for the same topics: another topic's answer to the same document is
        not this one's."""
        return self.topics or ((self.topic,) if self.topic else ())


CallSource = Literal["live", "cache", "cassette", "skipped", "offline"]


@dataclass(frozen=True)
class CallRecord:
    """What one request cost, whichever way it was answered (one JSONL line of the run record)."""

    doc_path: str
    chunk: int
    source: CallSource
    model: str
    attempts: int = 1  # HTTP attempts including transport retries and validation re-asks
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0  # of input_tokens, those the provider's prompt cache served (when it says)
    cost_usd: float = 0.0
    latency_s: float = 0.0
    prompt: str = ""  # str(PromptStamp)
    cassette: str = ""  # cassette file name(s) that answered, if any
    error: str = ""
    request_hash: str = ""  # sha256 of the first exchange's canonical body (cassette and cache key)
    stale: str = ""  # the prompt stamp of a cassette replayed under another prompt (--allow-stale)
    # who wrote the answer a cassette gave: its provenance kind (recorded / relayed / reference) and model
    provenance: str = ""
    provenance_model: str = ""
    topics: str = ""  # a shared request's topics, ", "-joined: the call is every one of those topics'


@dataclass(frozen=True)
class ExtractionResult:
    request: ExtractionRequest
    extraction: FileExtraction | None  # None when the call failed; `record.error` says why
    record: CallRecord
    shared: SharedExtraction | None = None  # a shared request's whole answer (`extraction` is then None)
    composition: EveningComposition | None = None  # a composing request's answer

    @property
    def answered(self) -> bool:
        """A validated answer came back: one topic's extraction, a shared request's, or a composition."""
        return self.extraction is not None or self.shared is not None or self.composition is not None


class Extractor(Protocol):
    """Answers extraction requests; failures come back as results with an error, never raise,
    so one bad document does not stop the evening's run. Budget exhaustion is reported the
    same way (source "skipped")."""

    def extract_all(
        self,
        requests: Sequence[ExtractionRequest],
        on_result: Callable[[ExtractionResult], None] | None = None,
    ) -> list[ExtractionResult]: ...
