"""The evening run in four plain steps, for one topic or several: `plan` → `extract` → `brief` → `write`.

- `plan` decides everything before the first call (what is read, what is known, what is asked,
  where the briefing goes, and whether it may go there), so a mistake costs nothing;
- `extract` is the only step that talks to an `Extractor` (live, replayed, or one of your own);
- `brief` is pure: the rule chain and the layout, no I/O, so the eval and the property tests call it;
- `write` puts the three files down as one unit, and never over an input.
`run` is the four in a row. Settings come in as one `Settings` value (see `agent.core.settings`).

One topic is a run of several with one topic in it: `plan`, `extract` and `run` are `plan_topics`,
`extract_topics` and `run_topics` for one, so one evening and several share one path. What the
topics of a run share is the run: every topic's inputs and output are checked before the first
call, one extractor answers all their requests (so `--max-calls` and `--max-cost` bound the evening
as a whole, not each topic), and each topic's 一 lists the other topics' briefings this run writes
as 邻接, said from their results: they are this run's outputs, never its inputs. With shared
extraction (`[llm] extraction = "shared"`), each document is one request for every topic, and its
answer is split back into each topic's own answers before the rules.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import ValidationError

from agent.core.errors import (
    LLMError,
    PredigestError,
    PromptError,
    WorkspaceError,
    did_you_mean,
    first_problem,
    shown,
)
from agent.core.labels import ZH, Labels
from agent.core.settings import LLMSettings, Settings, llm_overrides, resolve_llm
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult, Extractor
from agent.extract.backends import (
    answers_offline,
    model_extractor,
    offline,
    offline_extractor,
    used_backend,
)
from agent.extract.chunking import merge_chunks
from agent.extract.prompting import (
    COMPOSE,
    SHARED,
    Template,
    build_compose_request,
    build_requests,
    build_shared_requests,
    compose_path,
    load_template,
    load_template_file,
)
from agent.plan.anchors import AnchorRegistry, build_registry
from agent.plan.ingest import UNLISTABLE, UNREADABLE, Window, evening_window, scan, sources, unreadable
from agent.plan.outputs import check_out, check_writable, out_path_for, real_path, write_set
from agent.plan.workspace import Workspace, load_workspace
from agent.rules.chain import Limits, Prepared, RuleOutcome, Scope, finish, prepare
from agent.rules.claims import DocResult, Finding, with_refs
from agent.rules.editor import Desk
from agent.rules.grounding import DocText, bound_claims
from agent.rules.injection import screen
from agent.rules.layout import Composed, lay_out
from agent.rules.merge import short_subject
from agent.write.patch_apply import PARTIAL_NO_PATCH, diff_or_why, patch_lines
from agent.write.render import render
from agent.write.trace import run_record
from schemas.briefing import SourceRow
from schemas.documents import SourceDoc
from schemas.extraction import SkippedItem
from schemas.run import RunRecord

if TYPE_CHECKING:
    from agent.extract.llm import LLMExtractor

EXIT_PARTIAL = 3  # a briefing was made, but some of the evening's documents were not read
EXIT_NO_MODEL = 4  # `auto` found no key and no cassette: the offline extractor answered instead of a model


def settings_from(flags: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Flags win over the environment (`Settings` routes the `[llm]` flags over the environment's
    values); the workspace's predigest.toml fills the rest in `plan`."""
    return Settings(**{k: v for k, v in flags.items() if v is not None}, llm=llm_overrides({}, env))


# --- 1. plan --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evening:
    """Everything decided before the first call: what is read, what is known, what is asked."""

    settings: Settings
    ws: Workspace
    llm: LLMSettings
    window: Window
    docs: list[SourceDoc]
    registry: AnchorRegistry
    template: Template
    requests: list[ExtractionRequest]
    out_path: Path
    composer: Template  # the editor's prompt: one composing request per topic and evening

    @property
    def sources(self) -> list[SourceDoc]:
        return sources(self.docs)

    @property
    def into_inbox(self) -> bool:
        """Whether the briefing goes into the workspace's inbox, where tomorrow's run reads it."""
        return self.out_path.parent.resolve().is_relative_to(self.ws.inbox().resolve())


@dataclass(frozen=True)
class EveningSet:
    """Every selected topic's evening, decided before the first call of any."""

    evenings: tuple[Evening, ...]
    # with shared extraction: one request per document (or part) for every topic, in place of
    # each evening's own requests (which stay, to say what each topic reads)
    shared: tuple[ExtractionRequest, ...] = ()

    @property
    def topics(self) -> list[str]:
        return [ev.settings.topic for ev in self.evenings]

    @property
    def requests(self) -> list[ExtractionRequest]:
        """The requests the run sends, in the order they are answered: the shared ones, or all
        topics' own, topic after topic."""
        return list(self.shared) if self.shared else [r for ev in self.evenings for r in ev.requests]

    @property
    def llm(self) -> LLMSettings:
        """One `[llm]` for the run: it is the workspace's and the command line's, not a topic's."""
        return self.evenings[0].llm


def plan(s: Settings, *, for_writing: bool = True, own_tonight: bool = True) -> Evening:
    """Read the workspace and decide the evening; raises before any call when something is off.
    `for_writing=False` is for inspection and the eval: the output path is not checked.
    `own_tonight=False` is for the eval: see `agent.plan.ingest.scan`."""
    return plan_topics(s, [s.topic], for_writing=for_writing, own_tonight=own_tonight).evenings[0]


def plan_topics(
    s: Settings, topics: Sequence[str], *, for_writing: bool = True, own_tonight: bool = True
) -> EveningSet:
    """`plan` for each topic over one load of the workspace; raises, before any call, on the first
    topic that is unknown, has no living document or no writable output. A briefing another topic
    of this run writes is not read by the others (it is about to be replaced): it is listed in
    their 一 from this run's result instead. `own_tonight=False` is for the eval (see `scan`)."""
    ws = load_workspace(s.workspace)
    check_paths(ws, s, replay=for_writing)
    outs = {t: out_path_for(ws, s.out, s.date, t) for t in topics}
    _check_distinct(outs)
    shared = len(topics) > 1 and resolve_llm(ws.config.llm, s.llm, ws.root).extraction == "shared"
    # shared: `--prompt` is the shared template; each topic's own requests (what it reads, how
    # its answers line up) are the default one-topic template's
    own = s.model_copy(update={"prompt_file": None}) if shared else s
    evenings = []
    for topic in topics:
        others = {real_path(p) for t, p in outs.items() if t != topic}
        judged = scan(ws, topic, s.date, own_tonight=own_tonight)
        docs = [_rewritten(d) if real_path(ws.root / d.path) in others else d for d in judged]
        evenings.append(plan_from(ws, own.model_copy(update={"topic": topic}), docs, for_writing=for_writing))
    return shared_set(evenings, s) if shared else EveningSet(tuple(evenings))


def check_paths(ws: Workspace, s: Settings, *, replay: bool = True) -> None:
    """The folders predigest.toml names that do not exist, named with the key that set them before
    any call; with `replay`, a replay's cassette folder among them (`auto` says so in its fallback
    line instead; the eval and `cassettes check` report a missing set as a row's misses)."""
    if missing := ws.missing_folders():
        raise WorkspaceError(f"the folder {missing[0]} does not exist", hint="create it, or fix the key")
    llm = resolve_llm(ws.config.llm, s.llm, ws.root)
    if replay and llm.backend == "replay" and (gone := missing_cassettes(ws, s, llm)):
        raise WorkspaceError(gone, hint="pass --cassettes with the folder that holds this workspace's answers")


def missing_cassettes(ws: Workspace, s: Settings, llm: LLMSettings) -> str:
    """'the cassette folder X (set by …) does not exist' when no folder of the setting is there
    (`LLMSettings.cassettes_gone`), or ''."""
    if (gone := llm.cassettes_gone) is None:
        return ""
    origin = (
        "given by --cassettes" if {"cassette_dir", "cassettes"} & set(s.llm) else f"set by {ws.set_by('llm.cassettes')}"
    )
    return f"the cassette folder {shown(gone)} ({origin}) does not exist"


def plan_from(ws: Workspace, s: Settings, docs: list[SourceDoc], *, for_writing: bool = True) -> Evening:
    """`plan` over documents already judged for `s.topic`: several topics of one run share the
    workspace and adjust what each reads (see `plan_topics`)."""
    registry = build_registry(docs, s.topic, s.date)
    template = load_template_file(s.prompt_file) if s.prompt_file else load_template()
    srcs = sources(docs)
    window = evening_window(ws, s.date)
    llm = resolve_llm(ws.config.llm, s.llm, ws.root)
    if llm.backend == "record":  # every answer paid for is kept there: a folder that refuses it loses them
        check_writable(llm.cassette_dir, hint="pass --cassettes a folder you can write")
    out = out_path_for(ws, s.out, s.date, s.topic)
    if for_writing:
        check_out(out, ws, docs, out_path_for(ws, None, s.date, s.topic), force=s.force or rerun_of_own(out, s))
    requests = build_requests(srcs, registry, ws, s.topic, template, llm)
    return Evening(s, ws, llm, window, docs, registry, template, requests, out, load_template(COMPOSE))


def rerun_of_own(out: Path, s: Settings) -> bool:
    """Whether `out` is this evening's briefing as a run wrote it: its record beside it, of the same
    topic and date, and the Markdown still what that record renders. A re-run of the evening (cron's,
    run again after a failure) then replaces it without --force, so the same line is safe to run
    twice; a briefing someone edited, or another evening's, still needs --force."""
    try:
        record = RunRecord.model_validate_json(out.with_suffix(".json").read_text(encoding="utf-8"))
        same = record.briefing.topic == s.topic and record.briefing.date == s.date
        return same and render(record.briefing) == out.read_text(encoding="utf-8")
    except (OSError, ValueError):  # no record, not ours, or of another schema: the user decides
        return False


def as_shared(s: Settings) -> Settings:
    """`s` with shared extraction, whatever `[llm] extraction` says: for what asks one request per
    document for several topics by construction (a shared answer file, a shared eval row)."""
    return s.model_copy(update={"llm": {**s.llm, "extraction": "shared"}})


def evening_sources(evenings: Sequence[Evening]) -> list[SourceDoc]:
    """The documents read by any topic of the run, each once, in the topics' order."""
    return list({d.path: d for ev in evenings for d in ev.sources}.values())


def shared_set(evenings: Sequence[Evening], s: Settings) -> EveningSet:
    """The evenings with one shared request per document (or part) read by any of them, for the
    topics that read it; each
    evening is stamped with the shared prompt, the one that asked for its answers. A `--prompt`
    file replaces the shared template when it names itself extract-shared (its answer has a part
    per topic); a one-topic template cannot ask for that, so it is refused before any call."""
    template = load_template_file(s.prompt_file) if s.prompt_file else load_template(SHARED)
    if template.stamp.name != SHARED:
        raise PromptError(
            f"{s.prompt_file} is a one-topic prompt ({template.stamp}); shared extraction needs one named {SHARED}",
            hint=f"start from prompts/{SHARED}.md (name: {SHARED} in its front matter), or --extraction per-topic",
        )
    docs = evening_sources(evenings)
    registries = {ev.settings.topic: ev.registry for ev in evenings}
    reads = [(ev.settings.topic, {d.path for d in ev.sources}) for ev in evenings]
    read_by = {d.path: tuple(t for t, paths in reads if d.path in paths) for d in docs}
    first = evenings[0]
    shared = build_shared_requests(docs, registries, read_by, first.ws, template, first.llm)
    return EveningSet(tuple(replace(ev, template=template) for ev in evenings), tuple(shared))


def _check_distinct(outs: dict[str, Path]) -> None:
    seen: dict[Path, str] = {}
    for topic, path in outs.items():
        if (first := seen.setdefault(real_path(path), topic)) != topic:
            raise PredigestError(
                f"topics {first} and {topic} would both be written to {path}",
                hint="pass --out a folder (each topic's briefing gets its own name there)",
            )


def _rewritten(doc: SourceDoc) -> SourceDoc:
    why = f"same-evening {doc.topic} briefing that this run writes again: listed from this run's result"
    return doc.model_copy(update={"read": False, "in_window": False, "reason": why})


def requests_for(where: Evening | EveningSet, doc: str) -> list[ExtractionRequest]:
    """The request(s) one document sends (several when it is split): of one topic's evening, or of
    a run of several (its shared requests, or each topic's own). A path may be given relative to
    the workspace or starting with the workspace folder itself."""
    evenings = where.evenings if isinstance(where, EveningSet) else (where,)
    rel = workspace_relative(evenings[0].ws, doc)
    reqs = [r for r in where.requests if r.doc_path == rel]
    if not reqs:
        paths = [d.path for d in evening_sources(evenings)]
        raise PredigestError(
            f"{doc} is not a source of the evening {evenings[0].window.date}",
            hint=did_you_mean(rel, paths) + f"pick one of: {', '.join(paths)}",
        )
    return reqs


def answer_plan(s: Settings, topics: Sequence[str]) -> EveningSet:
    """The evening as answers to it are stored (reference, relayed): one topic's own requests, or
    for several topics the shared requests that carry them all (one answer file is one request,
    whatever `[llm] extraction` says). Inspection only: no output is checked."""
    return plan_topics(as_shared(s) if len(topics) > 1 else s, topics, for_writing=False)


def workspace_relative(ws: Workspace, doc: str) -> str:
    p = Path(doc)
    for candidate in (p, Path.cwd() / p):
        try:
            return candidate.resolve().relative_to(ws.root).as_posix()
        except ValueError:
            continue
    return p.as_posix()


# --- 2. extract -----------------------------------------------------------------------------------


def extract(
    ev: Evening,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
) -> list[ExtractionResult]:
    """Every request answered or failed (never raised); refuses an evening where all failed,
    since a briefing built from nothing would read as "a quiet evening"."""
    return extract_topics(EveningSet((ev,)), extractor, on_result)[0]


def extract_topics(
    es: EveningSet,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    warn: Callable[[str], None] | None = None,
    model: Extractor | None = None,
    *,
    refuse: bool = True,
) -> list[list[ExtractionResult]]:
    """Each topic's answers, in its requests' order. The topics a model answers share one
    extractor (one budget, one cache, one cassette index); a topic the offline extractor answers
    (`--backend offline`, or `auto` with nothing else) gets its own, since it reads for a topic.
    With shared requests, their answers are split by topic (`split_shared`). `model`: the run's model
    extractor, when the run asks it more than the extractions (`ModelOnce`). `refuse=False`: a topic
    that got no answer is returned, not raised (see `answered_topics`)."""
    checked = _checked if refuse else (lambda es, answers: answers)
    if es.shared and (extractor is not None or not answers_offline(es.llm, es.shared)):
        results = _answered(es.llm, es.shared, extractor or model, on_result)
        return checked(es, [split_shared(results, ev) for ev in es.evenings])
    # the offline extractor reads for one topic at a time, so it answers each topic's own requests
    offline_evenings: list[Evening] = []
    by_model: list[Evening] = []
    for ev in es.evenings:
        if not ev.requests:  # a quiet evening: nothing to ask, so no extractor and no "no model" warning
            continue
        (offline_evenings if extractor is None and answers_offline(ev.llm, ev.requests) else by_model).append(ev)
    for ev in offline_evenings:  # said before the first call; a run of several topics names the topic
        if warn is not None and ev.llm.backend == "auto":
            warn(f"{ev.settings.topic}: {no_model_note(ev)}" if len(es.evenings) > 1 else no_model_note(ev))
    answers: dict[str, list[ExtractionResult]] = {ev.settings.topic: [] for ev in es.evenings}
    if by_model:
        results = _answered(by_model[0].llm, [r for ev in by_model for r in ev.requests], extractor or model, on_result)
        for ev in by_model:
            answers[ev.settings.topic], results = results[: len(ev.requests)], results[len(ev.requests) :]
    for ev in offline_evenings:
        topic = ev.settings.topic
        with offline_extractor(ev.docs, ev.registry, topic, ev.ws.topic(topic)) as own:
            answers[topic] = own.extract_all(ev.requests, on_result)
    return checked(es, [answers[t] for t in es.topics])


def _answered(
    llm: LLMSettings,
    requests: Sequence[ExtractionRequest],
    extractor: Extractor | None,
    on_result: Callable[[ExtractionResult], None] | None,
) -> list[ExtractionResult]:
    """`requests` answered by `extractor`, or by one model extractor made for them all."""
    if extractor is not None:
        return extractor.extract_all(requests, on_result)
    with model_extractor(llm) as own:
        return own.extract_all(requests, on_result)


def split_shared(results: Sequence[ExtractionResult], ev: Evening) -> list[ExtractionResult]:
    """One topic's answers out of the shared ones, one per request of its own (same document and
    part), so the rule layer runs as for a one-topic evening. An answer that leaves the topic out
    is this topic's failure for that document, said in its 五; the other topics keep theirs."""
    topic = ev.settings.topic
    by_part = {(r.request.doc_path, r.request.chunk): r for r in results}
    out = []
    for req in ev.requests:
        got = by_part.get((req.doc_path, req.chunk))
        if got is None:  # a part the run never sent (interrupted before it): not read, as any unsent call
            record = CallRecord(req.doc_path, req.chunk, "skipped", ev.llm.model, attempts=0, error="not asked")
            out.append(ExtractionResult(req, None, record))
            continue
        reading = got.shared.for_topic(topic) if got.shared is not None else None
        error = got.record.error
        if got.shared is not None and reading is None:
            error = f"the shared answer for this document has no part for topic {topic}: not read for {topic}"
        out.append(ExtractionResult(req, reading, replace(got.record, error=error)))
    return out


def _checked(es: EveningSet, answers: list[list[ExtractionResult]]) -> list[list[ExtractionResult]]:
    """Nothing is written when any topic got no answer at all; a run of several topics names it."""
    named = len(es.evenings) > 1
    pairs = zip(es.evenings, answers, strict=True)
    return [refuse_nothing_read(got, ev.settings.topic if named else "") for ev, got in pairs]


def answered_topics(
    es: EveningSet, answers: list[list[ExtractionResult]]
) -> tuple[EveningSet, list[list[ExtractionResult]], LLMError | None]:
    """The topics that got an answer, and the error of the first that got none, to be raised once
    the others are written: one topic's failure does not throw away the others' paid answers. When
    no topic got one, that error is raised now."""
    kept: list[tuple[Evening, list[ExtractionResult]]] = []
    errors: list[LLMError] = []
    for ev, got in zip(es.evenings, answers, strict=True):
        try:
            kept.append((ev, refuse_nothing_read(got, ev.settings.topic if len(es.evenings) > 1 else "")))
        except LLMError as e:
            errors.append(e)
    if not kept:
        raise errors[0]
    return replace(es, evenings=tuple(ev for ev, _ in kept)), [got for _, got in kept], next(iter(errors), None)


def refuse_nothing_read(results: list[ExtractionResult], topic: str = "") -> list[ExtractionResult]:
    """The results, unless every one failed: a briefing built from nothing would read as "a
    quiet evening". `topic` names it when a run makes several."""
    failed = [r for r in results if r.extraction is None]
    if results and len(failed) == len(results):
        of = f" for {topic}" if topic else ""
        raise LLMError(
            f"every extraction{of} failed ({len(failed)} of {len(results)}); nothing was written{of}. "
            f"First: {failed[0].record.doc_path}: {failed[0].record.error}",
            hint="fix the endpoint or the cassettes and run again",
        )
    return results


class ModelOnce:
    """The run's one model extractor, made when a model is first asked: the extractions and the
    composing calls of a run share its budget (`--max-calls`, `--max-cost`), cache and cassettes,
    and an evening the offline extractor answers never makes it."""

    def __init__(self, llm: LLMSettings) -> None:
        self.llm = llm
        self.own: LLMExtractor | None = None

    def extract_all(
        self, requests: Sequence[ExtractionRequest], on_result: Callable[[ExtractionResult], None] | None = None
    ) -> list[ExtractionResult]:
        if self.own is None:
            self.own = model_extractor(self.llm)
        return self.own.extract_all(requests, on_result)

    def __enter__(self) -> ModelOnce:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.own is not None:
            self.own.close()


# --- 2b. compose ----------------------------------------------------------------------------------


class Draft(NamedTuple):
    """One topic's answers through the rules up to the editor (grounding, arXiv, dedupe, the floor's
    merge), and the desk the composing call is asked from: made once per topic and run, read by the
    composing request and by the briefing alike."""

    chain: Prepared
    desk: Desk
    before_rules: list[Finding]  # claims bounded and answers screened before the chain
    unread: list[tuple[str, str]]
    offline: bool  # the offline extractor read the evening: no model composes it


def draft_topics(
    es: EveningSet, answers: Sequence[Sequence[ExtractionResult]], read: Callable[[str], DocText] | None = None
) -> list[Draft]:
    """Each topic's evening up to the editor; `read` (one run's `cache(DocText)`) reads each document once."""
    read = read or cache(DocText)
    return [_drafted(ev, got, read) for ev, got in zip(es.evenings, answers, strict=True)]


def compose_request(ev: Evening, p: Draft) -> ExtractionRequest | None:
    """The editor's request for one topic's evening, or None when no model composes it: the offline
    extractor read it, `[llm] compose` is off, or no claim is worth a line."""
    if not ev.llm.compose or p.offline or not p.desk.claims:
        return None
    topic = ev.settings.topic
    return build_compose_request(ev.ws, topic, ev.registry, ev.composer, p.desk.values(), {"check": p.desk.check})


def compose_topics(
    es: EveningSet,
    drafts: Sequence[Draft],
    model: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
) -> list[ExtractionResult | None]:
    """Each topic's composing call answered (or failed, never raised), None where none is asked;
    one call per topic, all through the run's model extractor (or one made for them)."""
    asked = [compose_request(ev, p) for ev, p in zip(es.evenings, drafts, strict=True)]
    requests = [r for r in asked if r is not None]
    got = iter(_answered(es.llm, requests, model, on_result) if requests else [])
    return [next(got) if r is not None else None for r in asked]


# --- 3. brief (pure) ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """The evening's briefing and everything that explains it; nothing written yet."""

    evening: Evening
    composed: Composed
    markdown: str
    records: list[CallRecord]
    unread: list[tuple[str, str]]  # (document, why) for sources of the window that were not extracted
    doc_results: list[DocResult] = field(default_factory=list)  # the answers the trace finds quotes in
    results: tuple[ExtractionResult, ...] = ()  # every call with its validated answer (the run log keeps them)

    @property
    def partial(self) -> bool:
        return bool(self.unread)

    @property
    def findings(self) -> list[Finding]:
        return self.composed.findings

    def payload(self) -> str:
        """The run record as indented JSON: what `predigest view` rebuilds the page from."""
        return self.record().model_dump_json(indent=2)

    def record(self) -> RunRecord:
        """The run record (schemas/run.py): the briefing, every decision, and the patch it proposes."""
        ev = self.evening
        record = run_record(
            self.composed,
            self.doc_results,
            ev.docs,
            prompt=str(ev.template.stamp),
            model=ev.llm.model,
            unread=self.unread,
            workspace=str(ev.ws.root),
        )
        done = {"answered_by": answered_by(self.records, ev.llm.model), "patch": patch_lines(record, ev.docs)}
        return record.model_copy(update=done)


def brief(
    ev: Evening,
    results: Sequence[ExtractionResult],
    composed: ExtractionResult | None = None,
    *,
    draft: Draft | None = None,
    siblings: Sequence[SourceRow] = (),
) -> Outcome:
    """Rules and layout over the evening's answers and its composing call's answer (None: no call
    was made). Pure: the same inputs give the same briefing. `draft`: the evening up to the editor,
    when the run already has it (the one its composing request was asked from). `siblings`: the other
    topics' briefings the same run writes, listed in 一 as adjacent rows (never extracted: they are
    outputs of this run, not inputs)."""
    p = draft or _drafted(ev, results, cache(DocText))
    return _laid_out(ev, results, _decided(ev, p, composed), siblings)


class _Decided(NamedTuple):
    """What the rules decided about one evening, before it is laid out."""

    outcome: RuleOutcome
    before_rules: list[Finding]
    unread: list[tuple[str, str]]
    composed: ExtractionResult | None  # the composing call, if one was made


def _drafted(ev: Evening, results: Sequence[ExtractionResult], read: Callable[[str], DocText]) -> Draft:
    """The rules up to the editor over one topic's answers. `read` reads a document for screening,
    grounding and settled items alike: one run's `cache(DocText)`, so each document is read once per run."""
    doc_results, unread, bounded = _doc_results(ev, results)
    doc_results, screened = screen(doc_results, read)
    s = ev.settings
    baselines = [d for d in ev.docs if d.kind == "baseline" and d.read]
    limits = Limits(**ev.ws.config.limits.model_dump())
    living = next((d.text for d in ev.docs if d.kind == "living"), "")
    was_offline = offline([r.record for r in results])
    judge = "offline extractor" if was_offline else "model"
    scope = Scope(doc_results, ev.registry, baselines, s.topic, s.date, str(ev.window), limits, read, living, judge)
    chain = prepare(scope)
    return Draft(chain, Desk.of(chain), [*bounded, *screened], unread, was_offline)


def _decided(ev: Evening, p: Draft, composed: ExtractionResult | None) -> _Decided:
    """The rules over one topic's answers, with the editor's stories when its answer came back (it
    was validated by `Desk.check` as it was parsed), else the floor's, and why (in the summary, 五
    and a finding)."""
    detail = ""  # the whole reason, for --explain and the record; the briefing says it in a few words
    if composed is not None and composed.composition is not None:
        edited, why = p.desk.edited(composed.composition), ""
    elif composed is not None:
        rec = composed.record
        detail = said_in_briefing(rec.error or "no answer", ev.ws.root)  # no machine path, even in the record
        missed = rec.source == "cassette" and not rec.cassette  # a replay with no answer to this request
        edited, why = None, ZH.floor_unanswered if missed else ZH.floor_failed
    else:  # no call: said only when a model was to compose and the offline extractor read the evening
        edited, why = None, ZH.floor_offline if ev.llm.compose and p.desk.claims and p.offline else ""
    outcome = finish(p.chain, edited)
    if why:
        floor = Finding("compose", ev.settings.topic, "", "floor", f"{why}: {detail}" if detail else why)
        outcome = replace(outcome, floor=why, findings=[*outcome.findings, floor])
    return _Decided(outcome, p.before_rules, p.unread, composed)


def _laid_out(ev: Evening, results: Sequence[ExtractionResult], d: _Decided, siblings: Sequence[SourceRow]) -> Outcome:
    records = [r.record for r in results] + ([d.composed.record] if d.composed is not None else [])
    s = ev.settings
    prompt = str(ev.template.stamp)
    if d.composed is not None and d.composed.composition is not None:
        prompt += ZH.list_comma + ZH.composed_by.format(prompt=ev.composer.stamp)
    footer = (ZH.footer_offline if offline(records) else ZH.footer).format(
        date=s.date,
        prompt=prompt,
        answered=answered_by(records, ev.llm.model),
        extractor=ZH.extractor_offline,
        sources=len(ev.sources),
        calls=len(records),
    )
    composed = lay_out(d.outcome, footer, ZH, siblings)
    if d.before_rules:
        composed = replace(composed, findings=[*d.before_rules, *composed.findings])
    if d.unread:
        composed = _mark_partial(composed, len(d.unread))
    doc_results = list(d.outcome.scope.results)
    done = tuple(results) + ((d.composed,) if d.composed is not None else ())
    return Outcome(ev, composed, render(composed.briefing), records, d.unread, doc_results, done)


def brief_topics(
    es: EveningSet,
    answers: Sequence[Sequence[ExtractionResult]],
    composed: Sequence[ExtractionResult | None] = (),
    *,
    drafts: Sequence[Draft] = (),
    allow_partial: bool,
) -> list[Outcome]:
    """Each topic's briefing, its 一 listing the others this run writes (a withheld one is not
    listed: it will not exist). Each topic is decided once and laid out twice: the rows need the
    others' briefings, and no rule reads them. A document several topics read is read once.
    `composed`: each topic's composing call (None, or left empty: none was made); `drafts`: each
    topic's evening up to the editor, when the run has them."""
    calls = list(composed) or [None] * len(es.evenings)
    ready = list(drafts) or draft_topics(es, answers)
    topics = list(zip(es.evenings, answers, strict=True))
    decided = [_decided(ev, p, call) for ev, p, call in zip(es.evenings, ready, calls, strict=True)]
    first = [_laid_out(ev, got, d, ()) for (ev, got), d in zip(topics, decided, strict=True)]
    if len(first) == 1:  # no other topic to list
        return first
    kept = [o for o in first if not withheld(o, allow_partial=allow_partial)]
    return [
        _laid_out(ev, got, d, [sibling_row(o, ev) for o in kept if o.evening is not ev])
        for (ev, got), d in zip(topics, decided, strict=True)
    ]


def sibling_row(other: Outcome, ev: Evening, labels: Labels = ZH) -> SourceRow:
    """The 一 row of `ev` for another topic's briefing of the same run: where it is written and
    what it holds, from its briefing (no call)."""
    b = other.composed.briefing
    topic = other.evening.settings.topic
    subjects = " · ".join(map(short_subject, b.summary.headlines))
    held = (
        labels.sibling_held.format(topic=topic, n=len(b.increments), headlines=subjects)
        if b.increments
        else labels.sibling_empty.format(topic=topic)
    )
    out = other.evening.out_path
    folder, root = out.parent.resolve(), ev.ws.root.resolve()
    if not folder.is_relative_to(root):  # written outside the workspace (--out): a briefing names no machine
        # path, so it names the folder the workspace's inbox holds such a briefing in
        folder = out_path_for(ev.ws, None, ev.settings.date, topic).parent.resolve()
    directory = folder.relative_to(root).as_posix() if folder.is_relative_to(root) else labels.this_run
    return SourceRow(directory=directory, key_file=out.name, held=held, relevance=labels.adjacent_level)


def answered_by(records: Sequence[CallRecord], model: str) -> str:
    """What answered the evening, said the same way in the footer, the run record, the page, the
    eval's rows and the run log: `model <name>` only where a model answered (live, from the cache,
    or a recorded cassette); hand-written reference answers, relayed ones and the offline extractor
    by their own names. Several kinds are joined, the most frequent first. A call that failed
    answered nothing (a composing call no cassette holds is not a model's answer)."""
    if not records:  # a quiet evening: nothing was asked, so no model is named
        return ZH.answered_nobody
    said: dict[str, int] = {}
    for r in records:
        if r.source != "skipped" and not r.error:
            label = _answer_label(r, model)
            said[label] = said.get(label, 0) + 1
    if not said:
        return ZH.answered_model.format(model=model)
    return " + ".join(sorted(said, key=lambda k: -said[k]))


def _answer_label(r: CallRecord, model: str) -> str:
    if r.source == "offline":
        return ZH.answered_offline
    if r.source == "cassette" and r.provenance == "reference":
        return ZH.answered_reference
    if r.source == "cassette" and r.provenance == "relayed":
        return ZH.answered_relayed.format(model=r.provenance_model or ZH.answered_unnamed)
    return ZH.answered_model.format(model=r.provenance_model or r.model or model)


def _mark_partial(composed: Composed, n: int) -> Composed:
    """A partial evening says so where a reader looks first, and 五 stops calling everything checked."""
    b = composed.briefing
    note = ZH.list_sep.join(x for x in (b.summary.count_note, ZH.partial_note.format(n=n)) if x)
    briefing = b.model_copy(
        update={
            "summary": b.summary.model_copy(update={"count_note": note}),
            "no_increment_intro": ZH.partial_intro.format(topic=b.topic),
        }
    )
    return replace(composed, briefing=briefing)


def _doc_results(
    ev: Evening, results: Sequence[ExtractionResult]
) -> tuple[list[DocResult], list[tuple[str, str]], list[Finding]]:
    by_doc: dict[str, list[ExtractionResult]] = {}
    for r in results:
        by_doc.setdefault(r.request.doc_path, []).append(r)
    out: list[DocResult] = []
    unread: list[tuple[str, str]] = []
    findings: list[Finding] = []
    for doc in ev.sources:
        parts = sorted(by_doc.get(doc.path, []), key=lambda r: r.request.chunk)
        failed = [r for r in parts if r.extraction is None]
        if not parts or failed:
            why = failed[0].record.error if failed else "no extraction result"
            unread.append((doc.path, why))
            out.append(DocResult(doc, None, ZH.unread_note.format(why=said_in_briefing(why, ev.ws.root))))
            continue
        answers, bounded = bound_claims([r.extraction for r in parts if r.extraction], doc)
        findings += bounded
        asked = zip(parts, answers, strict=True)  # every part has its answer: a failed one made the document unread
        refs = tuple(ref for r, a in asked for ref, _ in with_refs(doc.path, r.request.chunk, a.claims))
        merged = merge_chunks(answers)
        if (total := parts[0].request.chunks) > len(parts):  # the rest was over [llm] max_parts: not paid for
            why = f"parts {len(parts) + 1}-{total} of {total} not read (over [llm] max_parts)"
            unread.append((doc.path, why))
            rest = SkippedItem(
                subject=ZH.parts_subject.format(first=len(parts) + 1, total=total),
                reason=ZH.unread_note.format(why=why),
            )
            merged = merged.model_copy(update={"skipped": [*merged.skipped, rest]})
        out.append(DocResult(doc, merged, refs=refs))
    for doc in unreadable(ev.docs):
        out.append(DocResult(doc, None, doc.reason))
        if doc.reason.startswith(UNLISTABLE):  # a whole folder of the evening unread: the briefing is partial
            unread.append((doc.path, doc.reason.removeprefix(UNREADABLE).strip()))
    return out, unread, findings


_ABSOLUTE = re.compile(r"(?<![\w.~:/])/(?!/)[^\s:;,()（）]+")  # a path of the machine, not a URL's


def said_in_briefing(error: str, root: Path) -> str:
    """An error as a briefing says it: what happened, without the advice meant for whoever ran the
    command, and with each path of the machine said relative to the workspace (a briefing is read
    elsewhere, and by tomorrow's run)."""
    what = error.split(" — ", 1)[0]
    return _ABSOLUTE.sub(lambda m: os.path.relpath(m[0], root), what)


# --- 4. write -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    out_path: Path | None  # None: a partial briefing that was not allowed into the workspace inbox
    json_path: Path | None
    calls_path: Path | None
    withheld: str = ""  # why nothing was written
    no_patch: str = ""  # why `--patch` wrote no `.patch`, if it did not


def fell_back(llm: LLMSettings, records: Sequence[CallRecord]) -> bool:
    """`auto` found neither a key nor a cassette, so the offline extractor answered: a cron job
    whose key went missing, which must not pass for a model's evening."""
    return llm.backend == "auto" and offline(records)


def write(
    outcome: Outcome,
    *,
    force: bool,
    allow_partial: bool = False,
    patch: bool = False,
    on_written: Callable[[list[Path]], None] | None = None,
) -> Written:
    """The `.md`, `.json` and `.calls.jsonl` as one unit. A partial briefing is not written into
    the workspace's inbox (tomorrow's run would take it as a complete baseline) unless allowed;
    nor is an offline one that nobody asked for (`auto` without a key or a cassette). `patch`:
    the E2 patch the briefing proposes goes in the unit too, as `.patch` (not for a partial
    briefing, whose patch would leave out what was not read)."""
    ev = outcome.evening
    out = ev.out_path
    if why := withheld(outcome, allow_partial=allow_partial):
        return Written(None, None, None, withheld=why)
    json_path, calls_path = out.with_suffix(".json"), out.with_suffix(".calls.jsonl")
    record = outcome.record()
    payload = record.model_dump_json(indent=2) + "\n"
    calls = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in outcome.records)
    files: dict[Path, str | None] = {out: outcome.markdown, json_path: payload, calls_path: calls}
    no_patch = ""
    if patch:
        diff, no_patch = diff_or_why(record, ev.ws.root) if not outcome.partial else ("", PARTIAL_NO_PATCH)
        files[out.with_suffix(".patch")] = diff or None  # none: a previous run's .patch goes with the set
    write_set(files, force=force, guarded=out, on_written=on_written)
    return Written(out, json_path, calls_path, no_patch=no_patch)


def withheld(outcome: Outcome, *, allow_partial: bool) -> str:
    """Why `write` will not put this briefing down (empty: it will), decided before it is written
    so a run of several topics lists in 一 only the briefings it really writes."""
    ev = outcome.evening
    folder = ev.out_path.parent
    if outcome.partial and not allow_partial and ev.into_inbox:
        return f"partial briefing not written into {folder}"
    if ev.into_inbox and fell_back(ev.llm, outcome.records):
        return f"offline briefing not written into {folder}"
    return ""


# --- the four in a row, for one topic or several --------------------------------------------------


@dataclass(frozen=True)
class RunReport:
    outcome: Outcome
    written: Written
    seconds: float
    backend: str
    backend_note: str = ""  # said once in the run summary when the backend was chosen for the user

    @property
    def evening(self) -> Evening:
        return self.outcome.evening

    @property
    def composed(self) -> Composed:
        return self.outcome.composed

    @property
    def markdown(self) -> str:
        return self.outcome.markdown

    @property
    def records(self) -> list[CallRecord]:
        return self.outcome.records

    @property
    def findings(self) -> list[Finding]:
        return self.outcome.findings

    @property
    def documents(self) -> int:
        return len(self.evening.sources)

    @property
    def out_path(self) -> Path:
        return self.evening.out_path

    @property
    def exit_code(self) -> int:
        if fell_back(self.evening.llm, self.records):
            return EXIT_NO_MODEL
        return EXIT_PARTIAL if self.outcome.partial else 0


@dataclass(frozen=True)
class TopicsReport:
    """Every topic's run report, and the run's own figures."""

    reports: tuple[RunReport, ...]
    seconds: float

    @property
    def records(self) -> list[CallRecord]:
        """The evening's calls: a shared call is in every topic's records, and counted once here."""
        seen: set[tuple[str, int]] = set()
        calls = []
        for r in (r for rep in self.reports for r in rep.records):
            if r.topics:
                if (r.doc_path, r.chunk) in seen:
                    continue
                seen.add((r.doc_path, r.chunk))
            calls.append(r)
        return calls

    @property
    def exit_code(self) -> int:
        """The worst topic's: a partial topic (3) or one no model answered (4) is the evening's."""
        return max(rep.exit_code for rep in self.reports)


def run(
    s: Settings,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    on_plan: Callable[[Evening], None] | None = None,
    *,
    patch: bool = False,
) -> RunReport:
    """One evening for one topic: `run_topics` for one. Writes nothing until the briefing is
    complete. `on_plan` sees the evening before the first call, so a progress bar can size itself."""
    seen = None if on_plan is None else (lambda es: on_plan(es.evenings[0]))
    return run_topics(s, [s.topic], extractor, on_result, seen, patch=patch).reports[0]


def run_topics(
    s: Settings,
    topics: Sequence[str],
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    on_plan: Callable[[EveningSet], None] | None = None,
    *,
    patch: bool = False,
    warn: Callable[[str], None] | None = None,
    on_written: Callable[[list[Path]], None] | None = None,
    model: ModelOnce | None = None,
) -> TopicsReport:
    """`run` for several topics of one evening (`s.topic` is not read): planned and checked for
    all before the first call, extracted under one budget, each topic's set written as one unit.
    `model`: a model extractor shared with other evenings (a span's: one budget for them all),
    left open; without it the run makes its own."""
    started = time.monotonic()
    es = plan_topics(s, topics)
    if on_plan is not None:
        on_plan(es)
    with ModelOnce(es.llm) if model is None else nullcontext(model) as asked:
        answers = extract_topics(es, extractor, on_result, warn, model=asked, refuse=False)
        es, answers, failed = answered_topics(es, answers)
        drafts = draft_topics(es, answers)
        composed = compose_topics(es, drafts, extractor or asked, on_result)
    reports = []
    for outcome in brief_topics(es, answers, composed, drafts=drafts, allow_partial=s.allow_partial):
        force = s.force or rerun_of_own(outcome.evening.out_path, outcome.evening.settings)
        written = write(outcome, force=force, allow_partial=s.allow_partial, patch=patch, on_written=on_written)
        backend, note = used_backend(outcome.evening.llm, outcome.records)
        reports.append(RunReport(outcome, written, time.monotonic() - started, backend=backend, backend_note=note))
    if failed is not None:  # said after the others are written, naming them (the CLI's one line)
        raise failed
    return TopicsReport(tuple(reports), time.monotonic() - started)


def no_model_note(ev: Evening) -> str:
    """What a run under `auto` says first when neither a key nor a cassette answers the evening."""
    where = f"not written into {ev.out_path.parent}" if ev.into_inbox else f"written to {ev.out_path}, exit status 4"
    folders = ", ".join(shown(d) for d in ev.llm.cassette_dirs)
    why = missing_cassettes(ev.ws, ev.settings, ev.llm) or f"no cassette in {folders} answers this evening"
    return (
        f"no model will answer: no OPENAI_API_KEY, and {why}; "
        f"the offline extractor reads the documents' structure instead, and its briefing is {where} "
        "(set OPENAI_API_KEY, or pass --backend offline to mean it)"
    )


# --- reference answers of an evening --------------------------------------------------------------


def compose_requests(s: Settings, topics: Sequence[str]) -> tuple[EveningSet, dict[str, ExtractionRequest]]:
    """The evening as its answers are stored (`answer_plan`), and each topic's composing request as a
    run would send it (topic -> request), from the extractions its cassettes answer: nothing is paid
    for, whatever the backend. A topic with no claim worth a line asks nothing."""
    es = answer_plan(s.model_copy(update={"llm": {**s.llm, "backend": "replay", "compose": True}}), topics)
    drafts = draft_topics(es, extract_topics(es))
    asked = {ev.settings.topic: compose_request(ev, p) for ev, p in zip(es.evenings, drafts, strict=True)}
    return es, {t: r for t, r in asked.items() if r is not None}


def composing_request(s: Settings, topics: Sequence[str], doc: str) -> tuple[EveningSet, ExtractionRequest]:
    """The composing request `doc` (`compose/<topic>`) names, or an error saying why there is none."""
    es, asked = compose_requests(s, topics)
    got = next((r for r in asked.values() if r.doc_path == doc), None)
    if got is None:
        raise PredigestError(
            f"{doc}: the evening {s.date} of {', '.join(topics)} asks no such composing call "
            "(a topic of the run, with a claim of 3★ or more after the rules)",
            hint=f"name one of --topic as compose/TOPIC, or run with --explain to see why {doc} has no claim",
        )
    return es, got


def add_reference(s: Settings, topics: Sequence[str], doc: str, extraction: Path, note: str = "") -> Path:
    """Store a hand-written expected answer for one document as a reference cassette: for one topic
    a FileExtraction, for several the SharedExtraction of the one request that carries them all (one
    answer file is one request, whatever `[llm] extraction` says); for `compose/<topic>`, the
    EveningComposition of the topic's composing request. Its usage is estimated, and says as cached
    the prefix a provider would serve after the evening's first request."""
    composing = doc.startswith(compose_path(""))
    if composing:
        es, request = composing_request(s, topics, doc)
    else:
        es = answer_plan(s, topics)
        reqs = requests_for(es, doc)
        if len(reqs) != 1:
            hint = "reference cassettes take whole documents"
            raise PredigestError(f"{doc} is split into {len(reqs)} parts", hint=hint)
        request = reqs[0]
    kind = request.answer_schema()
    try:
        answer = kind.model_validate_json(extraction.read_text(encoding="utf-8"), context=request.validation_context())
    except (OSError, UnicodeDecodeError, ValidationError) as e:
        what = first_problem(e) if isinstance(e, ValidationError) else str(e)
        where = "schemas/compose.py" if composing else "schemas/extraction.py"
        raise PredigestError(
            f"{extraction} is not a {kind.__name__} ({what})", hint=f"see {where} for the fields"
        ) from e
    from agent.extract.llm import write_reference_cassette  # lazy: imports openai + instructor

    first = es.requests[0]  # a provider's prefix cache holds what the evening's first request began with
    earlier = () if composing or first is request else (first,)
    return write_reference_cassette(request, answer, es.llm, note=note, earlier=earlier)


def rekey(s: Settings, topics: Sequence[str]) -> list[Path]:
    """Re-key the reference cassettes of an evening after an intended prompt change: one
    topic's, or with several topics those of the shared requests that carry them all; then each
    topic's composing answer, where the folder holds one."""
    es = answer_plan(s, topics)
    from agent.extract.llm import rekey_reference_cassettes  # lazy: imports openai + instructor
    from agent.extract.llm.cassettes import CassetteIndex

    folder = es.llm.cassette_dir
    written = rekey_reference_cassettes(folder, es.requests, es.llm)
    # the composing requests are built from the extractions as the cassettes answer them now, so after
    # those; a topic nobody wrote a composing answer for has nothing to re-key, and is not warned about
    # (a composing answer is one topic's, asked from that topic's own extractions, so each is re-asked alone)
    held = {c.provenance.document for c in CassetteIndex.load(folder).all()}
    wanted = [t for t in topics if compose_path(t) in held]
    if not wanted:
        return written
    try:  # asked as the extractions were: one topic's, or with several topics out of their shared answers
        composing = [r for t, r in compose_requests(s, topics)[1].items() if t in wanted]
    except PredigestError:  # the folder's extractions answer other requests (a shared folder, one topic asked)
        return written
    return written + rekey_reference_cassettes(folder, composing, es.llm)
