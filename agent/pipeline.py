"""The evening run in four plain steps: `plan` → `extract` → `brief` → `write`.

- `plan` decides everything before the first call (what is read, what is known, what is asked,
  where the briefing goes, and whether it may go there), so a mistake costs nothing;
- `extract` is the only step that talks to an `Extractor` (live, replayed, or one of your own);
- `brief` is pure: the rule chain and the layout, no I/O, so the eval and the property tests call it;
- `write` puts the three files down as one unit, and never over an input.
`run` is the four in a row. Settings come in as one `Settings` value (see `agent.core.settings`).
`plan`, `extract` and `run` are `agent.topics`' several-topic steps for one topic, so one evening
and several share one path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.core.errors import LLMError, PredigestError, WorkspaceError
from agent.core.labels import ZH
from agent.core.settings import LLMSettings, Settings, llm_overrides, resolve_llm
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult, Extractor
from agent.extract.backends import offline
from agent.extract.chunking import merge_chunks
from agent.extract.prompting import Template, build_requests, load_template, load_template_file
from agent.plan.anchors import AnchorRegistry, build_registry
from agent.plan.ingest import UNLISTABLE, UNREADABLE, Window, evening_window, sources, unreadable
from agent.plan.outputs import check_out, check_writable, out_path_for, write_set
from agent.plan.workspace import Workspace
from agent.rules.claims import DocResult, Finding, with_refs
from agent.rules.compose import Composed, Limits, compose
from agent.rules.grounding import bound_claims
from agent.rules.injection import screen
from agent.write.patch_apply import patch_lines, proposed_diff
from agent.write.render import render
from agent.write.trace import run_record
from schemas.briefing import SourceRow
from schemas.documents import SourceDoc
from schemas.extraction import SkippedItem

EXIT_PARTIAL = 3  # a briefing was made, but some of the evening's documents were not read
EXIT_NO_MODEL = 4  # `auto` found no key and no cassette: the offline extractor answered instead of a model


def settings_from(flags: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Flags win over the environment (`Settings` routes the `[llm]` flags over the environment's
    values); the workspace's predigest.toml fills the rest in `plan`."""
    return Settings(**{k: v for k, v in flags.items() if v is not None}, llm=llm_overrides({}, env))


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

    @property
    def sources(self) -> list[SourceDoc]:
        return sources(self.docs)


def plan(s: Settings, *, for_writing: bool = True, own_tonight: bool = True) -> Evening:
    """Read the workspace and decide the evening; raises before any call when something is off.
    `for_writing=False` is for inspection and the eval: the output path is not checked.
    `own_tonight=False` is for the eval: see `agent.plan.ingest.scan`."""
    from agent.topics import plan_topics  # agent.topics builds on this module

    return plan_topics(s, [s.topic], for_writing=for_writing, own_tonight=own_tonight).evenings[0]


def plan_from(ws: Workspace, s: Settings, docs: list[SourceDoc], *, for_writing: bool = True) -> Evening:
    """`plan` over documents already judged for `s.topic`: several topics of one run share the
    workspace and adjust what each reads (see `agent.topics`)."""
    registry = build_registry(docs, s.topic, s.date)
    template = load_template_file(s.prompt_file) if s.prompt_file else load_template()
    srcs = sources(docs)
    window = evening_window(ws, s.date)
    if not srcs:
        raise WorkspaceError(
            f"no document of {ws.root} falls in the window {window}",
            hint=f"check --date, or run `predigest inbox {s.workspace} --topic {s.topic} --date {s.date}`",
        )
    llm = resolve_llm(ws.config.llm, s.llm, ws.root)
    if llm.backend == "record":  # every answer paid for is kept there: a folder that refuses it loses them
        check_writable(llm.cassette_dir, hint="pass --cassettes a folder you can write")
    out = out_path_for(ws, s.out, s.date, s.topic)
    if for_writing:
        check_out(out, ws, docs, out_path_for(ws, None, s.date, s.topic), force=s.force)
    requests = build_requests(srcs, registry, ws, s.topic, template, llm)
    return Evening(s, ws, llm, window, docs, registry, template, requests, out)


def requests_for(ev: Evening, doc: str) -> list[ExtractionRequest]:
    """The request(s) one document of the evening sends (several when it is split). A path may
    be given relative to the workspace or starting with the workspace folder itself."""
    rel = workspace_relative(ev.ws, doc)
    reqs = [r for r in ev.requests if r.doc_path == rel]
    if not reqs:
        known = ", ".join(d.path for d in ev.sources)
        raise PredigestError(f"{doc} is not a source of the evening {ev.window.date}", hint=f"pick one of: {known}")
    return reqs


def workspace_relative(ws: Workspace, doc: str) -> str:
    p = Path(doc)
    for candidate in (p, Path.cwd() / p):
        try:
            return candidate.resolve().relative_to(ws.root).as_posix()
        except ValueError:
            continue
    return p.as_posix()


# --- 2. extract -------------------------------------------------------------------------------------


def extract(
    ev: Evening,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
) -> list[ExtractionResult]:
    """Every request answered or failed (never raised); refuses an evening where all failed,
    since a briefing built from nothing would read as "a quiet evening"."""
    from agent.topics import EveningSet, extract_topics  # agent.topics builds on this module

    return extract_topics(EveningSet((ev,)), extractor, on_result)[0]


def refuse_nothing_read(results: list[ExtractionResult], topic: str = "") -> list[ExtractionResult]:
    """The results, unless every one failed: a briefing built from nothing would read as "a
    quiet evening". `topic` names it when a run makes several."""
    failed = [r for r in results if r.extraction is None]
    if results and len(failed) == len(results):
        of = f" for {topic}" if topic else ""
        raise LLMError(
            f"every extraction{of} failed ({len(failed)} of {len(results)}); nothing was written. "
            f"First: {failed[0].record.doc_path}: {failed[0].record.error}",
            hint="fix the endpoint or the cassettes and run again",
        )
    return results


# --- 3. brief (pure) ----------------------------------------------------------------------------------


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
        """The run record (schemas/run.py) as indented JSON: what `predigest view` rebuilds the
        page from."""
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
        record = record.model_copy(update=done)
        return record.model_dump_json(indent=2)


def brief(ev: Evening, results: Sequence[ExtractionResult], *, siblings: Sequence[SourceRow] = ()) -> Outcome:
    """Rules and layout over the evening's answers. Pure: the same inputs give the same briefing.
    `siblings`: the other topics' briefings the same run writes, listed in 一 as adjacent rows
    (never extracted: they are outputs of this run, not inputs)."""
    doc_results, unread, bounded = _doc_results(ev, results)
    doc_results, screened = screen(doc_results)
    before_rules = [*bounded, *screened]
    records = [r.record for r in results]
    s = ev.settings
    footer = (ZH.footer_offline if offline(records) else ZH.footer).format(
        date=s.date,
        prompt=ev.template.stamp,
        answered=answered_by(records, ev.llm.model),
        extractor=ZH.extractor_offline,
        sources=len(ev.sources),
        calls=len(records),
    )
    baselines = [d for d in ev.docs if d.kind == "baseline" and d.read]
    composed = compose(
        doc_results,
        ev.registry,
        baselines,
        topic=s.topic,
        date=s.date,
        window=str(ev.window),
        limits=Limits(**ev.ws.config.limits.model_dump()),
        footer=footer,
        siblings=siblings,
    )
    if before_rules:
        composed = replace(composed, findings=[*before_rules, *composed.findings])
    if unread:
        composed = _mark_partial(composed, len(unread))
    return Outcome(ev, composed, render(composed.briefing), records, unread, doc_results, tuple(results))


def answered_by(records: Sequence[CallRecord], model: str) -> str:
    """What answered the evening, said the same way in the footer, the run record, the page, the
    eval's rows and the run log: `model <name>` only where a model answered (live, from the cache,
    or a recorded cassette); hand-written reference answers, relayed ones and the offline extractor
    by their own names. Several kinds are joined, the most frequent first."""
    said: dict[str, int] = {}
    for r in records:
        if r.source != "skipped":
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
            out.append(DocResult(doc, None, ZH.unread_note.format(why=why)))
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


# --- 4. write ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    out_path: Path | None  # None: a partial briefing that was not allowed into the workspace inbox
    json_path: Path | None
    calls_path: Path | None
    withheld: str = ""  # why nothing was written


def fell_back(llm: LLMSettings, records: Sequence[CallRecord]) -> bool:
    """`auto` found neither a key nor a cassette, so the offline extractor answered: a cron job
    whose key went missing, which must not pass for a model's evening."""
    return llm.backend == "auto" and offline(records)


def write(outcome: Outcome, *, force: bool, allow_partial: bool = False, patch: bool = False) -> Written:
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
    payload = outcome.payload() + "\n"
    calls = "".join(json.dumps(asdict(r), ensure_ascii=False) + "\n" for r in outcome.records)
    files = {out: outcome.markdown, json_path: payload, calls_path: calls}
    if patch and not outcome.partial:
        files[out.with_suffix(".patch")] = proposed_diff(payload, ev.ws.root)
    write_set(files, force=force, guarded=out)
    return Written(out, json_path, calls_path)


def withheld(outcome: Outcome, *, allow_partial: bool) -> str:
    """Why `write` will not put this briefing down (empty: it will), decided before it is written
    so a run of several topics lists in 一 only the briefings it really writes."""
    ev = outcome.evening
    folder = ev.out_path.parent
    into_inbox = folder.resolve().is_relative_to(ev.ws.inbox().resolve())
    if outcome.partial and not allow_partial and into_inbox:
        return f"partial briefing not written into {folder}"
    if into_inbox and fell_back(ev.llm, outcome.records):
        return f"offline briefing not written into {folder}"
    return ""


# --- the four in a row --------------------------------------------------------------------------------


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


def run(
    s: Settings,
    extractor: Extractor | None = None,
    on_result: Callable[[ExtractionResult], None] | None = None,
    on_plan: Callable[[Evening], None] | None = None,
    *,
    patch: bool = False,
    warn: Callable[[str], None] | None = None,
) -> RunReport:
    """One evening for one topic: `agent.topics.run_topics` for one. Writes nothing until the
    briefing is complete. `on_plan` sees the evening before the first call, so a progress bar
    can size itself; `warn` hears, before the first call too, that no model will answer when
    `auto` found none."""
    from agent.topics import run_topics  # agent.topics builds on this module

    seen = None if on_plan is None else (lambda es: on_plan(es.evenings[0]))
    return run_topics(s, [s.topic], extractor, on_result, seen, patch=patch, warn=warn).reports[0]


def no_model_note(ev: Evening) -> str:
    """What a run under `auto` says first when neither a key nor a cassette answers the evening."""
    into = ev.out_path.parent.resolve().is_relative_to(ev.ws.inbox().resolve())
    where = f"not written into {ev.out_path.parent}" if into else f"written to {ev.out_path}, exit status 4"
    return (
        f"no model will answer: no OPENAI_API_KEY and no cassette in {ev.llm.cassette_dir} answers this evening; "
        f"the offline extractor reads the documents' structure instead, and its briefing is {where} "
        "(set OPENAI_API_KEY, or pass --backend offline to mean it)"
    )
