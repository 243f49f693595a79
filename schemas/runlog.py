"""The run log's record: one typed, versioned entry per `predigest run` or `predigest eval`.

Where `schemas/run.py` is what a reader needs to trust one briefing, this is what a prompt
engineer needs to compare two runs: what was asked (prompt stamp, model, backend, cassette set,
the settings without secrets), what every call cost and answered (the validated extraction),
what the rules decided (the findings, in `run.py`'s own `FindingRecord`), and for an eval the
scores per case and per item, each missed gold item with the stage of the pipeline that lost it.
Entries are appended to a SQLite log in the user's data folder (`agent.runlog`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from schemas.briefing import Strict
from schemas.extraction import FileExtraction
from schemas.run import FindingRecord

# 2: findings name a claim by its place in its part's answer ('doc#index', 'doc#part.index'); a log of
# version 1 named it by its place among the document's claims after the injection screen, so its fates
# cannot be looked up by an answer's claims
RUNLOG_SCHEMA_VERSION = 2


class CallEntry(Strict):
    """One extraction request and its answer."""

    doc: str = Field(description="Workspace-relative path of the document.")
    part: int = Field(default=0, description="0-based part of a split document.")
    parts: int = 1
    request_hash: str = Field(default="", description="sha256 of the canonical request body (cassette/cache key).")
    source: str = Field(description="live / cache / cassette / offline / skipped.")
    model: str = ""
    prompt: str = ""
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = Field(default=0, description="Of input_tokens, those the provider's prompt cache served.")
    latency_s: float = 0.0
    cost_usd: float = 0.0
    cassette: str = ""
    topics: str = Field(default="", description="A shared request's topics: its answer was split among them.")
    stale: str = Field(default="", description="Prompt stamp of an answer replayed under another prompt.")
    error: str = ""
    answer: FileExtraction | None = Field(default=None, description="The validated answer; None when it failed.")


class MetricEntry(Strict):
    score: float
    matched: list[str] = Field(default_factory=list)
    missed: list[str] = Field(default_factory=list)
    extra: list[str] = Field(default_factory=list)


Stage = Literal[
    "matched",
    "not extracted",
    "document failed",
    "ungrounded",
    "covered",
    "merged",
    "demoted by select",
    "past the limit",
    "dropped by select",
    "adjacent",
    "unpaired increment",
    "not raised",
    "",
]


class ItemFate(Strict):
    """A gold item of one metric, matched or missed, and where a miss was decided."""

    metric: str
    item: str
    matched: bool
    stage: Stage = ""
    detail: str = Field(default="", description="The deciding finding, or what was looked for and not found.")


class EveningEntry(Strict):
    """One evening run: the whole of `predigest run`, or one row of an eval."""

    name: str = Field(description="The eval row ('2026-09-22-inference', '… · offline') or 'topic date'.")
    workspace: str
    topic: str
    date: str
    prompt: str = ""
    model: str = ""
    backend: str = ""
    cassettes: str = Field(default="", description="The cassette set (folder name), '' for none.")
    stale: list[str] = Field(default_factory=list, description="Older prompt stamps whose answers were replayed.")
    calls: list[CallEntry] = Field(default_factory=list)
    findings: list[FindingRecord] = Field(default_factory=list)
    markdown: str = ""
    errors: list[str] = Field(default_factory=list)
    scores: dict[str, MetricEntry] = Field(default_factory=dict)
    fates: list[ItemFate] = Field(default_factory=list)
    ok: bool = True


class RunLog(Strict):
    schema_version: Literal[1, 2] = RUNLOG_SCHEMA_VERSION
    id: str = Field(description="Sortable by time, e.g. '20261130-221503-a1b2'; any unique prefix names it.")
    time: str = Field(description="ISO 8601 with the offset.")
    kind: Literal["run", "eval"]
    command: list[str] = Field(default_factory=list, description="The command line as given.")
    git: str = Field(default="", description="Revision of the working folder's repository, '+dirty' if changed.")
    version: str = Field(default="", description="predigest's version.")
    settings: dict[str, object] = Field(default_factory=dict, description="The [llm] settings, without the key.")
    prompt: str = ""
    model: str = ""
    backend: str = ""
    evenings: list[EveningEntry] = Field(default_factory=list)
    ok: bool = True
