"""Run the gold cases offline, score them, and hold the scores against the committed baseline.

A case runs through the real pipeline (`agent.pipeline.run`) with cassettes replayed and the
disk cache off, so a missing cassette shows up as a miss rather than hiding behind a cached
answer. The output is rendered to Markdown and parsed back before scoring: the scores are on
what a reader of the briefing gets, not on the model the renderer started from.

The baseline (`eval/baseline.json`) holds, per case and metric, the score and the items missed
and added, so a later run can say which item moved, not only that a number did.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Literal, NamedTuple

from agent.core.errors import PredigestError
from agent.core.settings import LLMSettings
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult
from agent.extract.prompting import PROMPTS_DIR, SHARED, load_template_file
from agent.pipeline import (
    Evening,
    EveningSet,
    Outcome,
    Settings,
    answered_by,
    as_shared,
    brief,
    compose_topics,
    draft_topics,
    extract,
    extract_topics,
    plan,
    plan_topics,
)
from agent.plan.parse import parse
from agent.plan.workspace import load_workspace
from eval.cases import Case, CaseError, load_rows
from eval.metrics import METRICS, Matching, RuleContext, Score, Scorecard, file_refs, score
from eval.patch_score import patch_score
from eval.span import SpanReplay, replayed
from eval.span_metrics import LOWER_IS_BETTER, SPAN_METRICS, span_scores
from schemas.briefing import Briefing

DIGITS = 6  # scores are stored and compared at this precision
EPSILON = 1e-6  # scores are exact fractions; this only absorbs float rounding
BASELINE_VERSION = 1
# new: the row has no baseline yet; missing: the row has one, without this metric (gated: a row
# edited or cut by hand must not pass a metric unchecked)
Status = Literal["ok", "below", "new", "missing", "noncompliant", "error"]


@dataclass(frozen=True)
class Variant:
    """How the rows are asked: the backend, a prompt file, a model, and the `[llm]` overrides of
    the command line and the environment (key, base URL, mode, cache, budget), so `eval` reaches
    an endpoint by the same settings path as `run`.

    `cassette_root`: record (or replay) each case's cassette set in `<root>/<set name>` instead
    of its own folder, so a trial recording does not land among the committed cassettes."""

    backend: str = "replay"
    prompt_file: Path | None = None
    model: str | None = None  # --model: wins over a case's own `model`, which wins over PREDIGEST_MODEL
    llm: Mapping[str, Any] = field(default_factory=dict)
    cassette_root: Path | None = None
    allow_stale: bool = False

    def stale_by_case(self, case: Case) -> bool:
        """The case replays its set's answers to an earlier prompt as they are: with the repository's
        own prompt only; a prompt under trial replays stale answers only when asked (`allow_stale`)."""
        own = self.prompt_file is None or self.prompt_file.resolve() == (PROMPTS_DIR / "extract.md").resolve()
        return case.replay_stale and own

    def target(self, case: Case) -> Path | None:
        """The set the row replays from (or records into): the case's own, or the one of that
        name under `cassette_root`."""
        if case.cassettes is not None and self.cassette_root is not None:
            return self.cassette_root / case.cassettes.name
        return case.cassettes

    def settings(self, case: Case, backend: str | None = None) -> Settings:
        backend = backend or self.backend
        llm = {k: v for k, v in self.llm.items() if k not in ("backend", "cassette_dir")}
        cassettes = self.target(case)
        if cassettes is not None and backend == "record":
            cassettes = recording_folder(cassettes)
        if backend == "replay":
            llm["cache_dir"] = None  # a miss must show as a miss, not hide behind a cached answer
        if model := self.model or case.model:
            llm["model"] = model
        return Settings(
            workspace=case.workspace,
            topic=case.topic,
            date=case.date,
            force=True,
            prompt_file=self.prompt_file,
            backend=backend,
            cassette_dir=cassettes,
            allow_stale=self.allow_stale or self.stale_by_case(case) or None,
            llm=llm,
        )


RECORDED_BESIDE = "recorded"  # the folder beside relayed or reference sets that recordings of them go into


def set_kinds(folder: Path | None, names: set[str] | None = None) -> set[str]:
    """The provenance kinds ('recorded', 'relayed', 'reference') of a cassette set's files, or of
    the files named in `names` only."""
    if folder is None or not folder.is_dir():
        return set()
    kinds: set[str] = set()
    for path in folder.rglob("*.json"):
        if names is not None and path.name not in names:
            continue
        try:
            kinds.add(str(json.loads(path.read_text(encoding="utf-8"))["provenance"]["kind"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not a cassette: `cassettes check` reports it, the label does not need it
    return kinds


def recording_folder(folder: Path) -> Path:
    """Where `record` writes a set's answers: into the set when it holds recordings only; beside
    it, into `recorded/<set>`, when it holds relayed or reference answers, so a recording never
    replaces the answers a row is named for. The set keeps its name, so `--cassettes <that
    recorded folder>` replays the recording; every report names the folder."""
    return folder if set_kinds(folder) <= {"recorded"} else folder.parent / RECORDED_BESIDE / folder.name


_ANSWERS = {"reference": "reference answers", "relayed": "real model (relayed)", "recorded": "recorded answers"}


def stale_note(stamps: Sequence[str]) -> str:
    """'stale (extract@1)': the older prompts whose answers a row replayed (`--allow-stale`)."""
    return "stale (" + ", ".join(s.split("#", 1)[0] for s in stamps) + ")" if stamps else ""


@dataclass(frozen=True)
class Spend:
    calls: int
    prompt_tokens: int | None = None  # None: no answer says (a relayed answer comes without usage)
    cached_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None  # None: no usage, or the model has no price


def called_topics(records: Iterable[CallRecord]) -> tuple[str, ...]:
    """The topics shared calls were asked for, each once in the order first named: a document is asked
    only for the topics that read it, so the evening's topics are all its calls name together."""
    return tuple(dict.fromkeys(t for c in records for t in c.topics.split(", ") if t))


def spend_of(records: Iterable[CallRecord], llm: LLMSettings | None) -> Spend:
    """What `records` take: calls sent (not skipped, not offline), and as their answers' usage reports
    them, prompt tokens (of which cached), completion tokens and the live cost at `llm`'s prices. A
    request no answer came for (a replay's miss) carries no usage; an answer without usage (relayed)
    leaves the tokens unknown."""
    calls = [c for c in records if c.source in ("live", "cache", "cassette")]
    answered = [c for c in calls if not c.error]
    if not answered or llm is None or not all(c.input_tokens for c in answered):
        return Spend(len(calls))
    tokens_in = sum(c.input_tokens for c in answered)
    tokens_out = sum(c.output_tokens for c in answered)
    cached = sum(c.cached_tokens for c in answered)
    cost = llm.cost_usd(tokens_in, tokens_out, cached_tokens=cached) if llm.price() is not None else None
    return Spend(len(calls), tokens_in, cached, tokens_out, cost)


@dataclass(frozen=True)
class CaseRun:
    """One case's run: the output (parsed back from its Markdown), its scores, or why it failed."""

    case: Case
    gold: Briefing | None
    output: Briefing | None
    markdown: str
    card: Scorecard | None
    errors: tuple[str, ...] = ()
    seconds: float = 0.0
    outcome: Outcome | None = None  # the briefing and everything that explains it (calls, findings)
    results: tuple[ExtractionResult, ...] = ()  # every call's validated answer, for the run log and the report
    backend: str = ""
    patch: dict[str, Any] = field(default_factory=dict)  # eval.patch_score's, for a case with living-gold.md
    calls: tuple[CallRecord, ...] = ()  # every request the row's run sent: a shared one serves every topic

    @property
    def spend(self) -> Spend:
        """What the row's requests take: calls, and as their answers' usage reports them, prompt
        tokens (of which cached) and what they would cost live at the workspace's `[llm.prices]`
        (a replayed answer costs nothing tonight). The offline extractor sends nothing; a request
        the budget skipped was not sent."""
        return spend_of(self.calls, self.outcome.evening.llm if self.outcome is not None else None)

    @property
    def scores(self) -> dict[str, Score]:
        return self.card.scores if self.card else {}

    @property
    def stamp(self) -> str:
        """'extract@2#… · gpt-4o-mini · replay world': what the row was asked with."""
        if self.outcome is None:
            return self.backend
        ev = self.outcome.evening
        prompt = "offline" if self.backend == "offline" else str(ev.template.stamp)
        model = answered_by([r.record for r in self.results], ev.llm.model)
        return " · ".join(x for x in (prompt, model, self.backend, self.cassette_set, stale_note(self.stale)) if x)

    @property
    def cassette_folder(self) -> Path | None:
        """The set the row was answered from (or recorded into), which `record` may have moved
        beside the case's own (`recording_folder`)."""
        if self.backend == "offline":
            return None
        return self.outcome.evening.llm.cassette_dir if self.outcome is not None else self.case.cassettes

    @property
    def cassette_set(self) -> str:
        folder = self.cassette_folder
        return folder.name if folder is not None else ""

    @property
    def answers(self) -> str:
        """Whose answers the row scores: 'reference answers', 'real model (relayed)', 'offline
        extractor', 'record gpt-4o-mini → world-recorded', with a stale mark."""
        model = self.outcome.evening.llm.model if self.outcome is not None else ""
        if self.backend == "offline":
            label = "offline extractor"
        elif self.backend in ("live", "record"):
            label = f"{self.backend} {model}".strip()
        else:
            label = " + ".join(_ANSWERS.get(k, k) for k in self.kinds) or "no answers"
        if self.case.is_span:  # the span's own row: its scores are of the span as a whole
            label += f" · span of {len(self.case.evenings)} evenings"
        if self.case.extraction == "shared":
            # a document is asked only for the topics that read it: the evening's topics are all the calls name
            label += f" · shared by {len(called_topics(self.calls))} topics"
        if self.composed == "floor":
            label += " · floor"  # no composing answer: the rules assembled the evening
        elif self.composed and self.composed not in self.kinds:
            label += f" · composed by {_ANSWERS.get(self.composed, self.composed)}"
        folder = self.cassette_folder
        if folder is not None and self.case.cassettes is not None and folder.parent.name == RECORDED_BESIDE:
            label += f" → {RECORDED_BESIDE}/{folder.name}"
        return " · ".join(x for x in (label, stale_note(self.stale)) if x)

    @cached_property  # it reads the set's cassette files; the overview, report and page each ask
    def kinds(self) -> list[str]:
        """The provenance kinds of the cassettes that answered the row's extractions ('reference',
        'relayed', …); the composing answer's is `composed`."""
        used = {n for r in self.results for n in r.record.cassette.split(", ") if n}
        return sorted(set_kinds(self.cassette_folder, used))

    @cached_property
    def composed(self) -> str:
        """Who composed the row's evening: the composing cassette's kind, 'floor' when the call got no
        answer it could use (the rules assembled it), '' when no call was made (offline)."""
        calls = [c for c in self.calls if c.doc_path.startswith("compose/")]
        if not calls or self.backend == "offline":
            return ""
        if any(c.error for c in calls):
            return "floor"
        if self.backend in ("live", "record"):
            return ""  # the row's own model composed it, as its label says
        used = {n for c in calls for n in c.cassette.split(", ") if n}
        return ",".join(sorted(set_kinds(self.cassette_folder, used))) or "floor"

    @property
    def stale(self) -> tuple[str, ...]:
        """The older prompt stamps whose answers were replayed for this row (`--allow-stale`)."""
        return tuple(dict.fromkeys(r.record.stale for r in self.results if r.record.stale))


@dataclass(frozen=True)
class MetricResult:
    metric: str
    value: float | None  # None: the case failed before scoring
    baseline: float | None
    status: Status
    newly_missed: tuple[str, ...] = ()  # items missed now that the baseline did not miss
    newly_extra: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()  # items the baseline missed (or added) that are right now

    @property
    def delta(self) -> float | None:
        return None if self.value is None or self.baseline is None else self.value - self.baseline

    @property
    def failed(self) -> bool:
        return self.status in ("below", "missing", "noncompliant", "error")


@dataclass(frozen=True)
class CaseResult:
    run: CaseRun
    metrics: tuple[MetricResult, ...]

    @property
    def name(self) -> str:
        return self.run.case.name

    @property
    def ok(self) -> bool:
        return not self.run.errors and not any(m.failed for m in self.metrics)


@dataclass(frozen=True)
class EvalReport:
    results: tuple[CaseResult, ...]
    baseline_path: Path
    baseline_updated: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)
    run_id: str = ""  # the run log's id for this eval, once logged

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


# --- one case -------------------------------------------------------------------------------------


OnPlan = Callable[[Case, Evening], None]
OnResult = Callable[[ExtractionResult], None]


def run_case(
    case: Case,
    variant: Variant | None = None,
    *,
    backend: str | None = None,
    on_plan: OnPlan | None = None,
    on_result: OnResult | None = None,
    shared_runs: SharedRuns | None = None,
) -> CaseRun:
    """Run, parse back, score. User-fixable failures (a cassette miss, a broken workspace, an
    unparsable output) become the case's errors; a bug still raises. `backend` overrides the
    variant's (the offline row); `shared_runs` holds the shared evenings asked so far."""
    started = time.monotonic()
    variant = variant or Variant()
    used = backend or variant.backend
    gold: Briefing | None = None
    try:
        gold = case.gold()
        if case.extraction == "shared":
            runs = shared_runs if shared_runs is not None else {}
            ev, results, calls = _shared_run(case, variant.settings(case, used), on_plan, on_result, runs)
        else:
            ev = plan(variant.settings(case, used), for_writing=False, own_tonight=False)
            if on_plan is not None:
                on_plan(case, ev)
            results = tuple(extract(ev, None, on_result))
            calls = tuple(r.record for r in results)
        one = EveningSet((ev,))
        (draft,) = draft_topics(one, [results])
        (composed,) = compose_topics(one, [draft], None, on_result)
        calls += (composed.record,) if composed is not None else ()
        report = brief(ev, results, composed, draft=draft)
    except PredigestError as e:
        return CaseRun(case, gold, None, "", None, (str(e),), time.monotonic() - started, backend=used)
    # a composing call that fails is not the row's error: the floor assembles the evening, and says so
    extracted = report.records[: len(results)]
    errors = tuple(f"{r.doc_path}: {r.error}" for r in extracted if r.error)
    done = {"outcome": report, "results": results, "backend": used, "patch": _patch(case, report), "calls": calls}
    try:
        output = parse(report.markdown, path=f"<output of {case.name}>")
    except PredigestError as e:
        return CaseRun(case, gold, None, report.markdown, None, (*errors, str(e)), time.monotonic() - started, **done)
    card = score(gold, output, rule_context(report.evening, output))
    return CaseRun(case, gold, output, report.markdown, card, errors, time.monotonic() - started, **done)


def run_span_case(
    case: Case,
    variant: Variant | None = None,
    *,
    backend: str | None = None,
    on_plan: OnPlan | None = None,
    on_result: OnResult | None = None,
) -> list[CaseRun]:
    """A span case's rows: each evening scored against its gold as a one-evening row is, then the
    span's own row (`eval.span_metrics`). The evenings run as `run --from --to --apply-patch` runs
    them (`eval.span`); an evening that failed, or that the span never reached, is a row with its error."""
    started = time.monotonic()
    variant = variant or Variant()
    used = backend or variant.backend
    seen = (lambda day, es: on_plan(case.evening(day), es.evenings[0])) if on_plan is not None else None
    try:
        with replayed(case, variant.settings(case, used), seen, on_result) as rep:
            runs = [_span_evening(case.evening(day), rep, used) for day in case.evenings]
    except PredigestError as e:
        failed = [CaseRun(case.evening(d), None, None, "", None, (str(e),), backend=used) for d in case.evenings]
        return [*failed, CaseRun(case, None, None, "", None, (str(e),), time.monotonic() - started, backend=used)]
    return [*runs, _span_row(case, runs, rep, used, time.monotonic() - started)]


def _span_evening(case: Case, rep: SpanReplay, used: str) -> CaseRun:
    """One evening of a replayed span, scored against its gold (while the copy it ran in is there:
    rule compliance reads the files the briefing credits)."""
    gold = case.gold()
    outcome = rep.outcome(case.date)
    evening = rep.evening(case.date)
    seconds = evening.report.seconds if evening is not None and evening.report is not None else 0.0
    if outcome is None:
        return CaseRun(case, gold, None, "", None, (rep.error(case.date),), seconds, backend=used)
    results = tuple(r for r in outcome.results if not r.record.doc_path.startswith("compose/"))
    done = {"outcome": outcome, "results": results, "backend": used, "calls": tuple(outcome.records)}
    errors = tuple(f"{r.record.doc_path}: {r.record.error}" for r in results if r.record.error)
    errors += (why,) if (why := rep.error(case.date)) and not errors else ()
    try:
        output = parse(outcome.markdown, path=f"<output of {case.name}>")
    except PredigestError as e:
        return CaseRun(case, gold, None, outcome.markdown, None, (*errors, str(e)), seconds, **done)
    card = score(gold, output, rule_context(outcome.evening, output))
    return CaseRun(case, gold, output, outcome.markdown, card, errors, seconds, **done)


def _span_row(case: Case, runs: list[CaseRun], rep: SpanReplay, used: str, seconds: float) -> CaseRun:
    """The span's own row: its scores over every evening, its calls the span's; the last evening's
    briefing and answers stand for it in the reports. Not scored when an evening is missing."""
    last = runs[-1]
    done = {"outcome": last.outcome, "results": last.results, "backend": used}
    calls = tuple(c for r in runs for c in r.calls)
    if missing := [r.case.name for r in runs if r.output is None]:
        return CaseRun(case, None, None, "", None, (f"no briefing of {', '.join(missing)}",), seconds, **done)
    evenings = [(r.case.date, r.output) for r in runs if r.output is not None]
    card = Scorecard(span_scores(evenings, rep.before, rep.after), Matching((), (), ()))
    return CaseRun(case, None, None, "", card, (), seconds, calls=calls, **done)


SharedRuns = dict[str, tuple[EveningSet, list[list[ExtractionResult]]]]  # by the settings, topic aside


def _shared_run(
    case: Case, s: Settings, on_plan: OnPlan | None, on_result: OnResult | None, runs: SharedRuns
) -> tuple[Evening, tuple[ExtractionResult, ...], tuple[CallRecord, ...]]:
    """The case's topic out of an all-topics run with shared extraction: its evening, its share
    of the answers, and every shared request the run sent (each one is every topic's). The
    evening is asked once per eval (`runs`), and each of its topics' rows scored from it: asking it
    again per row would pay for every call again, and a recording would write over itself."""
    key = s.model_copy(update={"topic": ""}).model_dump_json()
    if key not in runs:
        es = shared_plan(case, s)
        if on_plan is not None:  # the progress counts what is sent: the shared requests
            on_plan(case, dataclasses.replace(es.evenings[es.topics.index(case.topic)], requests=list(es.shared)))
        runs[key] = es, extract_topics(es, None, on_result)
    es, answers = runs[key]
    mine = es.topics.index(case.topic)
    sent = {(r.record.doc_path, r.record.chunk): r.record for got in answers for r in got}
    return es.evenings[mine], tuple(answers[mine]), tuple(sent.values())


def shared_plan(case: Case, s: Settings) -> EveningSet:
    """The evening of every topic of the case's workspace, extracted shared."""
    topics = load_workspace(case.workspace).select([], all_topics=True)
    where = case.folder / "case.toml"
    if case.topic not in topics:
        raise CaseError(f"topic {case.topic!r} is not a topic of {case.workspace}", path=where)
    if len(topics) < 2:
        raise CaseError(
            f"{case.workspace} has one topic: a shared row would ask what its per-topic row asks",
            path=where,
            hint="drop `shared` from case.toml",
        )
    return plan_topics(as_shared(s), topics, for_writing=False, own_tonight=False)


def row_requests(case: Case, s: Settings) -> tuple[list[ExtractionRequest], LLMSettings]:
    """What a row asks, as its run would: the topic's own requests, or the shared requests of the
    all-topics evening."""
    if case.extraction == "shared":
        es = shared_plan(case, s)
        return list(es.shared), es.llm
    ev = plan(s, for_writing=False, own_tonight=False)
    return ev.requests, ev.llm


def not_asked(case: Case, variant: Variant) -> str:
    """Why the variant cannot ask this row at all ('' when it can): a one-topic prompt file has
    no shared form, and the shared prompt asks for every topic at once."""
    if variant.prompt_file is None:
        return ""
    stamp = load_template_file(variant.prompt_file).stamp
    if case.extraction == "shared" and stamp.name != SHARED:
        return f"{variant.prompt_file.name} is a one-topic prompt ({stamp}); the shared rows need one named {SHARED}"
    if case.extraction != "shared" and stamp.name == SHARED:
        return f"{variant.prompt_file.name} is the shared prompt ({stamp}); only the shared rows ask it"
    return ""


def _patch(case: Case, report: Outcome) -> dict[str, Any]:
    """The row's E2 patch against the editor's (not a metric: it is reported, never gated); a
    living document or gold the patch cannot be read against is said in the score, not raised."""
    try:
        return patch_score(case.folder, report.record())
    except PredigestError as e:
        return {"error": str(e)}


def rule_context(p: Evening, output: Briefing) -> RuleContext:
    """The anchors known before the evening (from the run's own plan), and the text of every
    file the output credits."""
    ws, registry = p.ws, p.registry
    files: dict[str, str] = {}
    for inc in output.increments:
        for ref in file_refs(inc):
            path = (ws.root / ref).resolve()
            if path.is_relative_to(ws.root) and path.is_file():
                files[ref] = path.read_text(encoding="utf-8", errors="replace")
    limits = ws.config.limits
    return RuleContext(
        date=p.window.date,
        anchored_arxiv=frozenset(a.key for a in registry.anchors if a.kind == "arxiv"),
        files=files,
        min_increments=limits.min_increments,
        max_increments=limits.max_increments,
    )


OFFLINE_ROW = " · offline"


def offline_row(case: Case) -> Case:
    """The case as the offline extractor's row: the floor a prompt's row must beat, scored and
    held against its own baseline entry like any other row."""
    return dataclasses.replace(case, name=case.name + OFFLINE_ROW, cassettes=None)


# --- baseline -------------------------------------------------------------------------------------

Baseline = dict[str, dict[str, dict[str, object]]]  # case → metric → {"score", "missed", "extra"}
Stamps = dict[str, dict[str, str]]  # case → what it was scored with (`run_stamp`)


class Committed(NamedTuple):
    """The baseline file as read: the scores the gate compares with, and what each case was scored with."""

    scores: Baseline
    stamps: Stamps


def load_baseline(path: Path) -> Committed:
    """The committed scores and stamps; an absent file is an empty baseline (every score is 'new')."""
    if not path.is_file():
        return Committed({}, {})
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        why = "nested too deep" if isinstance(e, RecursionError) else e
        raise CaseError(f"not valid JSON: {why}", path=path, hint="regenerate it with --update-baseline") from e
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, dict):
        raise CaseError("no 'cases' object", path=path, hint="regenerate it with --update-baseline")
    stamps = data.get("stamps")
    out: Baseline = {}
    for name, metrics in cases.items():
        if not isinstance(metrics, dict):
            raise CaseError(f"case {name!r} is not an object of metrics", path=path, hint="see eval/baseline.json")
        out[name] = {}
        for metric, entry in metrics.items():
            # a bare number is accepted too, for a baseline written by hand
            out[name][metric] = entry if isinstance(entry, dict) else {"score": entry}
            _check_score(out[name][metric].get("score"), f"{name} {metric}", path)
    return Committed(out, _checked_stamps(stamps, path))


def _checked_stamps(stamps: object, path: Path) -> Stamps:
    """Each case's stamp an object of strings: another value (a string written by hand) made the
    comparison of stamps crash after every case had run."""
    if not isinstance(stamps, dict):
        return {}
    for name, stamp in stamps.items():
        if not isinstance(stamp, dict) or not all(isinstance(v, str) for v in stamp.values()):
            raise CaseError(
                f"the stamp of {name} is {stamp!r}, not an object of strings (prompt, model, cassettes, backend)",
                path=path,
                hint="regenerate it with --update-baseline",
            )
    return stamps


def _check_score(score: object, where: str, path: Path) -> None:
    """A score the gate can compare: a string or NaN compares as nothing, so the gate would be
    off for that row while eval exits 0."""
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        raise CaseError(
            f"the score of {where} is {score!r}, not a number", path=path, hint="regenerate it with --update-baseline"
        )


def baseline_entry(s: Score) -> dict[str, object]:
    return {"score": round(s.value, DIGITS), "missed": list(s.missed), "extra": list(s.extra)}


def write_baseline(path: Path, runs: list[CaseRun], previous: Committed, keep: set[str]) -> Baseline:
    """Current scores of the cases that ran cleanly; the cases named in `keep` that did not run
    cleanly keep their committed entries, and every other entry is dropped (a deleted case)."""
    clean = [r for r in runs if r.card and not r.errors]
    cases = {name: entry for name, entry in previous.scores.items() if name in keep}
    cases.update({r.case.name: {m: baseline_entry(s) for m, s in r.scores.items()} for r in clean})
    stamps = {name: entry for name, entry in previous.stamps.items() if name in keep}
    stamps.update({r.case.name: run_stamp(r) for r in clean})
    payload = {
        "version": BASELINE_VERSION,
        "note": "Scores per case and metric; `predigest eval` fails when one drops below. "
        "Regenerate with `predigest eval --update-baseline` after an intended change.",
        "cases": {name: cases[name] for name in sorted(cases)},
        "stamps": {name: stamps[name] for name in sorted(stamps) if name in cases},
    }
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    except OSError as e:  # checked before the run, but a disk may fill or a mount turn read-only since
        raise _unwritable(path, e) from e
    return cases


def run_stamp(r: CaseRun) -> dict[str, str]:
    """What a baseline row was scored with: a later score is only comparable under the same."""
    ev = r.outcome.evening if r.outcome else None
    offline = r.backend == "offline"
    return {
        "prompt": "" if offline or ev is None else str(ev.template.stamp),
        "model": "" if offline or ev is None else ev.llm.model,
        "cassettes": r.cassette_set,
        "backend": r.backend,
    }


def drops(runs: list[CaseRun], baseline: Baseline) -> list[str]:
    """Every committed score a new baseline would lower: 'case metric 0.923 → 0.857'."""
    out = []
    for r in runs:
        if r.errors or r.card is None:
            continue
        for m in compare(r, baseline.get(r.case.name)).metrics:
            if m.baseline is not None and m.value is not None and _worse(m.metric, m.value, m.baseline):
                out.append(f"{r.case.name} {m.metric} {m.baseline:.3f} → {m.value:.3f}")
    return out


def _worse(metric: str, value: float, base: float) -> bool:
    """Below the baseline, or for a count of what an editor would rewrite, above it."""
    return value > base + EPSILON if metric in LOWER_IS_BETTER else value < base - EPSILON


def compare(r: CaseRun, committed: dict[str, dict[str, object]] | None) -> CaseResult:
    """Each metric against its committed score: below it (beyond EPSILON) fails, and rule
    compliance below 1.0 fails whatever the baseline says."""
    if r.card is None:
        names = SPAN_METRICS if r.case.is_span else METRICS
        return CaseResult(r, tuple(MetricResult(m, None, _score_of(committed, m), "error") for m in names))
    results = []
    for metric, s in r.scores.items():
        entry = (committed or {}).get(metric)
        base = _score_of(committed, metric)
        value = round(s.value, DIGITS)  # as the baseline stores it, so an unchanged score has Δ 0
        status: Status
        if r.errors:  # an incomplete run (a document unanswered): its scores are shown, not compared
            status = "error"
        elif metric == "rule_compliance" and value < 1.0 - EPSILON:
            status = "noncompliant"
        elif base is None:
            status = "new" if committed is None else "missing"
        elif _worse(metric, value, base):
            status = "below"
        else:
            status = "ok"
        was_missed = set(_items(entry, "missed"))
        was_extra = set(_items(entry, "extra"))
        results.append(
            MetricResult(
                metric,
                value,
                base,
                status,
                newly_missed=tuple(x for x in s.missed if entry is not None and x not in was_missed),
                newly_extra=tuple(x for x in s.extra if entry is not None and x not in was_extra),
                fixed=tuple(sorted((was_missed - set(s.missed)) | (was_extra - set(s.extra)))),
            )
        )
    return CaseResult(r, tuple(results))


def _score_of(committed: dict[str, dict[str, object]] | None, metric: str) -> float | None:
    entry = (committed or {}).get(metric)
    value = entry.get("score") if entry else None
    return float(value) if isinstance(value, int | float) else None


def _items(entry: dict[str, object] | None, key: str) -> list[str]:
    items = (entry or {}).get(key)
    return [str(x) for x in items] if isinstance(items, list) else []


# --- all cases ------------------------------------------------------------------------------------


def _stamp_notes(runs: list[CaseRun], committed: Stamps) -> list[str]:
    """A row scored under another prompt, model or cassette set than its baseline says so."""
    notes: list[str] = []
    for r in runs:
        was, now = committed.get(r.case.name), run_stamp(r)
        if (
            was
            and r.outcome is not None
            and (changed := [k for k in ("prompt", "model", "cassettes") if was.get(k) != now[k]])
        ):
            notes.append(
                f"{r.case.name}: baseline scored with {', '.join(f'{k} {was.get(k)!r}' for k in changed)}; "
                f"this run with {', '.join(f'{k} {now[k]!r}' for k in changed)}"
            )
    return notes


def _beside_notes(rows: list[Case], variant: Variant) -> list[str]:
    """A recording that went beside a relayed or reference set says where, and how to replay it."""
    notes = []
    for row in rows:
        target = variant.target(row)
        if variant.backend == "record" and target is not None and (folder := recording_folder(target)) != target:
            notes.append(
                f"{row.name}: {target} holds relayed or reference answers; recorded beside it into {folder}"
                f" (replay it with --cassettes {folder.parent})"
            )
    return notes


def _runs_of(
    row: Case,
    variant: Variant,
    backend: str | None,
    on_plan: OnPlan | None,
    on_result: OnResult | None,
    shared: SharedRuns,
) -> list[CaseRun]:
    """A row's runs: one for an evening, an evening each and the span's own for a span case."""
    if row.is_span:
        return run_span_case(row, variant, backend=backend, on_plan=on_plan, on_result=on_result)
    return [run_case(row, variant, backend=backend, on_plan=on_plan, on_result=on_result, shared_runs=shared)]


def _run_rows(
    rows: list[Case], variant: Variant, skip: Collection[str], on_plan: OnPlan | None, on_result: OnResult | None
) -> tuple[list[CaseRun], list[str]]:
    """Each row's run, and after each case's first row its offline floor; a row the variant
    cannot ask is said in a note instead."""
    runs: list[CaseRun] = []
    notes: list[str] = []
    shared: SharedRuns = {}
    for row in rows:
        if row.name in skip:
            continue
        if why := not_asked(row, variant):
            notes.append(f"{row.name}: not run: {why}")
            continue
        runs += _runs_of(row, variant, None, on_plan, on_result, shared)
        if "@" not in row.name:  # the offline floor does not depend on a cassette set: once per case
            runs += _runs_of(offline_row(row), variant, "offline", on_plan, on_result, shared)
    return runs, notes


def evaluate(
    cases_dir: Path,
    baseline_path: Path,
    *,
    only: str | None = None,
    update_baseline: bool = False,
    variant: Variant | None = None,
    on_plan: OnPlan | None = None,
    on_result: OnResult | None = None,
    accept_drops: bool = False,
    skip: Collection[str] = (),
) -> EvalReport:
    """Run the cases, compare each with its committed scores, and rewrite the baseline if asked:
    a rewrite that lowers any committed score is refused unless `accept_drops`. The rows named
    in `skip` (and a skipped row's offline floor) are not run: nothing could answer them."""
    variant = variant or Variant()
    rows = load_rows(cases_dir, only)
    _refuse_before_running(baseline_path, variant, update_baseline)
    committed = load_baseline(baseline_path)
    baseline = committed.scores
    runs, notes = _run_rows(rows, variant, skip, on_plan, on_result)
    notes += _stamp_notes(runs, committed.stamps) + _beside_notes(rows, variant)
    if update_baseline:
        # with --case, every other committed case stays; a full run also drops deleted cases
        keep = set(baseline) if only else {r.case.name for r in runs}
        baseline, written = _rewrite_baseline(baseline_path, runs, committed, keep, accept_drops)
        notes += written
    return EvalReport(
        tuple(compare(r, baseline.get(r.case.name)) for r in runs),
        baseline_path,
        baseline_updated=update_baseline,
        notes=tuple(notes),
    )


def _refuse_before_running(baseline_path: Path, variant: Variant, update_baseline: bool) -> None:
    """What would make the run meaningless or impossible, said before any row runs."""
    if not update_baseline and not baseline_path.is_file():
        # an absent baseline would pass every score as "new": a typo must not turn CI green
        raise PredigestError(
            f"the baseline {baseline_path} does not exist",
            hint="pass the committed eval/baseline.json, or --update-baseline to create it",
        )
    if update_baseline:
        _check_writable(baseline_path)
    if variant.backend in ("live", "record") and not variant.llm.get("api_key"):
        raise PredigestError(
            f"eval --backend {variant.backend} needs an API key",
            hint="set OPENAI_API_KEY (and OPENAI_BASE_URL for a server other than OpenAI's)",
        )


def _check_writable(path: Path) -> None:
    """The baseline can be written: tried, not judged from permission bits (root ignores them, a
    read-only mount does not): an existing file opened for appending, which changes nothing, or
    else a scratch file made and removed in the nearest folder that exists (the write makes the
    rest). Otherwise every case would run first, and the write fail after them."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        if path.exists():
            path.open("ab").close()
        else:
            tempfile.TemporaryFile(dir=folder).close()
    except OSError as e:
        raise _unwritable(path, e) from e


def _unwritable(path: Path, e: OSError) -> PredigestError:
    why = "a file stands where its folder would be" if isinstance(e, FileExistsError | NotADirectoryError) else ""
    return PredigestError(
        f"cannot write the baseline {path}: {why or e.strerror or e}",
        hint="pass --baseline a file you can write, or fix its permissions",
    )


def _rewrite_baseline(
    path: Path, runs: list[CaseRun], committed: Committed, keep: set[str], accept_drops: bool
) -> tuple[Baseline, list[str]]:
    """The new baseline, written, and what to say about it; refused when it would lower a
    committed score unless `accept_drops`."""
    if not accept_drops and (lower := drops(runs, committed.scores)):
        raise PredigestError(
            f"--update-baseline would lower {len(lower)} committed score(s): {'; '.join(lower)}",
            hint="pass --accept-drops if the drop is intended (say why in the commit)",
        )
    notes = [f"baseline written to {path}"]
    if failed := [r.case.name for r in runs if r.errors or r.card is None]:
        notes.append(f"kept the committed baseline of failed case(s): {', '.join(failed)}")
    return write_baseline(path, runs, committed, keep), notes
