"""Several topics of one evening in one run: one plan, one extraction, one briefing set per topic.

Each topic is the one-topic evening of `agent.pipeline`, planned over one load of the workspace.
What the topics share is the run: every topic's inputs and output are checked before the first
call, one extractor answers all their requests (so `--max-calls` and `--max-cost` bound the
evening as a whole, not each topic), and each topic's 一 lists the other topics' briefings this
run writes as 邻接, said from their results: they are this run's outputs, never its inputs.
With shared extraction (`[llm] extraction = "shared"`), each document is one request for every
topic, and its answer is split back into each topic's own answers before the rules.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pydantic import ValidationError

from agent.core.errors import PredigestError, PromptError, first_problem
from agent.core.labels import ZH, Labels
from agent.core.settings import LLMSettings, Settings, resolve_llm
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult, Extractor
from agent.extract.backends import EveningExtractor, answers_offline, make_extractor, used_backend
from agent.extract.prompting import SHARED, build_shared_requests, load_template, load_template_file
from agent.pipeline import (
    Evening,
    Outcome,
    RunReport,
    brief,
    no_model_note,
    plan_from,
    refuse_nothing_read,
    withheld,
    workspace_relative,
    write,
)
from agent.plan.ingest import scan
from agent.plan.outputs import out_path_for, real_path
from agent.plan.workspace import load_workspace
from agent.rules.merge import short_subject
from schemas.briefing import SourceRow
from schemas.documents import SourceDoc
from schemas.extraction import FileExtraction, SharedExtraction


def select_topics(workspace: Path, topics: Sequence[str], *, all_topics: bool) -> list[str]:
    """`Workspace.select` from the workspace folder."""
    return load_workspace(workspace).select(topics, all_topics=all_topics)


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


def plan_topics(
    s: Settings, topics: Sequence[str], *, for_writing: bool = True, own_tonight: bool = True
) -> EveningSet:
    """`plan` for each topic over one load of the workspace; raises, before any call, on the first
    topic that is unknown, has no living document or no writable output. A briefing another topic
    of this run writes is not read by the others (it is about to be replaced): it is listed in
    their 一 from this run's result instead. `own_tonight=False` is for the eval (see `scan`)."""
    ws = load_workspace(s.workspace)
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


def as_shared(s: Settings) -> Settings:
    """`s` with shared extraction, whatever `[llm] extraction` says: for what asks one request per
    document for several topics by construction (a shared answer file, a shared eval row)."""
    return s.model_copy(update={"llm": {**s.llm, "extraction": "shared"}})


def evening_sources(evenings: Sequence[Evening]) -> list[SourceDoc]:
    """The documents read by any topic of the run, each once, in the topics' order."""
    return list({d.path: d for ev in evenings for d in ev.sources}.values())


def shared_set(evenings: Sequence[Evening], s: Settings) -> EveningSet:
    """The evenings with one shared request per document (or part) read by any of them; each
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
    first = evenings[0]
    shared = build_shared_requests(docs, registries, first.ws, template, first.llm)
    return EveningSet(tuple(replace(ev, template=template) for ev in evenings), tuple(shared))


def _check_distinct(outs: dict[str, Path]) -> None:
    seen: dict[Path, str] = {}
    for topic, path in outs.items():
        if (first := seen.setdefault(path.resolve(), topic)) != topic:
            raise PredigestError(
                f"topics {first} and {topic} would both be written to {path}",
                hint="pass --out a folder (each topic's briefing gets its own name there)",
            )


def _rewritten(doc: SourceDoc) -> SourceDoc:
    why = f"same-evening {doc.topic} briefing that this run writes again: listed from this run's result"
    return doc.model_copy(update={"read": False, "in_window": False, "reason": why})


def extract_topics(
    es: EveningSet,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    warn: Callable[[str], None] | None = None,
) -> list[list[ExtractionResult]]:
    """Each topic's answers, in its requests' order. The topics a model answers share one
    extractor (one budget, one cache, one cassette index); a topic the offline extractor answers
    (`--backend offline`, or `auto` with nothing else) gets its own, since it reads for a topic.
    With shared requests, their answers are split by topic (`split_shared`)."""
    if es.shared and (extractor is not None or not answers_offline(es.llm, es.shared)):
        results = _answered(es.evenings[0], es.shared, extractor, on_result)
        return _checked(es, [split_shared(results, ev) for ev in es.evenings])
    # the offline extractor reads for one topic at a time, so it answers each topic's own requests
    offline = [ev for ev in es.evenings if extractor is None and answers_offline(ev.llm, ev.requests)]
    by_model = [ev for ev in es.evenings if all(ev is not o for o in offline)]
    for ev in offline:  # said before the first call; a run of several topics names the topic
        if warn is not None and ev.llm.backend == "auto":
            warn(f"{ev.settings.topic}: {no_model_note(ev)}" if len(es.evenings) > 1 else no_model_note(ev))
    answers: dict[str, list[ExtractionResult]] = {}
    if by_model:
        results = _answered(by_model[0], [r for ev in by_model for r in ev.requests], extractor, on_result)
        for ev in by_model:
            answers[ev.settings.topic], results = results[: len(ev.requests)], results[len(ev.requests) :]
    for ev in offline:
        with _offline_extractor(ev) as own:
            answers[ev.settings.topic] = own.extract_all(ev.requests, on_result)
    return _checked(es, [answers[t] for t in es.topics])


def _offline_extractor(ev: Evening) -> EveningExtractor:
    return make_extractor(ev.llm, ev.requests, ev.docs, ev.registry, ev.settings.topic, ev.ws.topic(ev.settings.topic))


def _answered(
    first: Evening,
    requests: Sequence[ExtractionRequest],
    extractor: Extractor | None,
    on_result: Callable[[ExtractionResult], None] | None,
) -> list[ExtractionResult]:
    """`requests` answered by `extractor`, or by one extractor made for them all."""
    if extractor is not None:
        return extractor.extract_all(requests, on_result)
    with make_extractor(first.llm, requests, first.docs, first.registry, first.settings.topic, None) as own:
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


def brief_topics(
    es: EveningSet, answers: Sequence[Sequence[ExtractionResult]], *, allow_partial: bool
) -> list[Outcome]:
    """Each topic's briefing, its 一 listing the others this run writes (a withheld one is not
    listed: it will not exist). Briefed twice: the rows need the others' briefings, and the
    rows are all that the second pass changes."""
    first = [brief(ev, got) for ev, got in zip(es.evenings, answers, strict=True)]
    if len(first) == 1:  # no other topic to list
        return first
    kept = [o for o in first if not withheld(o, allow_partial=allow_partial)]
    return [
        brief(ev, got, siblings=[sibling_row(o, ev) for o in kept if o.evening is not ev])
        for ev, got in zip(es.evenings, answers, strict=True)
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
    folder = out.parent.resolve()
    root = ev.ws.root.resolve()
    directory = folder.relative_to(root).as_posix() if folder.is_relative_to(root) else str(folder)
    return SourceRow(directory=directory, key_file=out.name, held=held, relevance=labels.adjacent_level)


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


def run_topics(
    s: Settings,
    topics: Sequence[str],
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    on_plan: Callable[[EveningSet], None] | None = None,
    *,
    patch: bool = False,
    warn: Callable[[str], None] | None = None,
) -> TopicsReport:
    """`run` for several topics of one evening (`s.topic` is not read): planned and checked for
    all before the first call, extracted under one budget, each topic's set written as one unit."""
    started = time.monotonic()
    es = plan_topics(s, topics)
    if on_plan is not None:
        on_plan(es)
    answers = extract_topics(es, extractor, on_result, warn)
    reports = []
    for outcome in brief_topics(es, answers, allow_partial=s.allow_partial):
        written = write(outcome, force=s.force, allow_partial=s.allow_partial, patch=patch)
        backend, note = used_backend(outcome.evening.llm, outcome.records)
        reports.append(RunReport(outcome, written, time.monotonic() - started, backend=backend, backend_note=note))
    return TopicsReport(tuple(reports), time.monotonic() - started)


def add_reference(s: Settings, topics: Sequence[str], doc: str, extraction: Path, note: str = "") -> Path:
    """Store a hand-written expected answer for one document as a reference cassette: for one topic
    a FileExtraction, for several the SharedExtraction of the one request that carries them all (one
    answer file is one request, whatever `[llm] extraction` says). Its usage is estimated, and says as
    cached the prefix a provider would serve after the evening's first request."""
    shared = len(topics) > 1
    es = plan_topics(as_shared(s) if shared else s, topics, for_writing=False)
    rel = workspace_relative(es.evenings[0].ws, doc)
    reqs = [r for r in es.requests if r.doc_path == rel]
    if not reqs:
        known = ", ".join(d.path for d in evening_sources(es.evenings))
        raise PredigestError(f"{doc} is not a source of the evening {s.date}", hint=f"pick one of: {known}")
    if len(reqs) != 1:
        raise PredigestError(f"{doc} is split into {len(reqs)} parts", hint="reference cassettes take whole documents")
    kind = SharedExtraction if shared else FileExtraction
    try:
        answer = kind.model_validate_json(extraction.read_text(encoding="utf-8"), context={"topics": list(topics)})
    except (OSError, UnicodeDecodeError, ValidationError) as e:
        what = first_problem(e) if isinstance(e, ValidationError) else str(e)
        raise PredigestError(
            f"{extraction} is not a {kind.__name__} ({what})", hint="see schemas/extraction.py for the fields"
        ) from e
    from agent.extract.llm import write_reference_cassette  # lazy: imports openai + instructor

    first = es.requests[0]  # a provider's prefix cache holds what the evening's first request began with
    return write_reference_cassette(reqs[0], answer, es.llm, note=note, earlier=() if first is reqs[0] else (first,))


def rekey(s: Settings, topics: Sequence[str]) -> list[Path]:
    """Re-key the reference cassettes of an evening after an intended prompt or schema change: one
    topic's, or with several topics those of the shared requests that carry them all."""
    es = plan_topics(as_shared(s) if len(topics) > 1 else s, topics, for_writing=False)
    from agent.extract.llm import rekey_reference_cassettes  # lazy: imports openai + instructor

    return rekey_reference_cassettes(es.llm.cassette_dir, {r.doc_path: r for r in es.requests}, es.llm)
