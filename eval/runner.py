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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent.errors import PredigestError
from agent.parse import parse
from agent.pipeline import Evening, Settings, brief, extract, plan
from eval.cases import Case, CaseError, load_rows
from eval.metrics import METRICS, RuleContext, Score, Scorecard, file_refs, score
from schemas.briefing import Briefing

DIGITS = 6  # scores are stored and compared at this precision
EPSILON = 1e-6  # scores are exact fractions; this only absorbs float rounding
BASELINE_VERSION = 1
Status = Literal["ok", "below", "new", "noncompliant", "error"]


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

    @property
    def scores(self) -> dict[str, Score]:
        return self.card.scores if self.card else {}


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
        return self.status in ("below", "noncompliant", "error")


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

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)


# --- one case -------------------------------------------------------------------------------------


def run_case(case: Case, *, backend: str = "replay") -> CaseRun:
    """Run, parse back, score. User-fixable failures (a cassette miss, a broken workspace, an
    unparsable output) become the case's errors; a bug still raises."""
    started = time.monotonic()
    gold: Briefing | None = None
    try:
        gold = case.gold()
        settings = Settings(
            workspace=case.workspace,
            topic=case.topic,
            date=case.date,
            force=True,
            backend=backend,
            cassette_dir=case.cassettes,
            no_cache=backend == "replay",
        )
        report = brief(ev := plan(settings, for_writing=False), extract(ev))
    except PredigestError as e:
        return CaseRun(case, gold, None, "", None, (str(e),), time.monotonic() - started)
    errors = tuple(f"{r.doc_path}: {r.error}" for r in report.records if r.error)
    try:
        output = parse(report.markdown, path=f"<output of {case.name}>")
    except PredigestError as e:
        return CaseRun(case, gold, None, report.markdown, None, (*errors, str(e)), time.monotonic() - started)
    card = score(gold, output, rule_context(report.evening, output))
    return CaseRun(case, gold, output, report.markdown, card, errors, time.monotonic() - started)


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


def load_baseline(path: Path) -> Baseline:
    """The committed scores; an absent file is an empty baseline (every score is 'new')."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CaseError(f"not valid JSON: {e}", path=path, hint="regenerate it with --update-baseline") from e
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, dict):
        raise CaseError("no 'cases' object", path=path, hint="regenerate it with --update-baseline")
    out: Baseline = {}
    for name, metrics in cases.items():
        if not isinstance(metrics, dict):
            raise CaseError(f"case {name!r} is not an object of metrics", path=path, hint="see eval/baseline.json")
        out[name] = {}
        for metric, entry in metrics.items():
            # a bare number is accepted too, for a baseline written by hand
            out[name][metric] = entry if isinstance(entry, dict) else {"score": entry}
    return out


def baseline_entry(s: Score) -> dict[str, object]:
    return {"score": round(s.value, DIGITS), "missed": list(s.missed), "extra": list(s.extra)}


def write_baseline(path: Path, runs: list[CaseRun], previous: Baseline, keep: set[str]) -> None:
    """Current scores of the cases that ran cleanly; the cases named in `keep` that did not run
    cleanly keep their committed entries, and every other entry is dropped (a deleted case)."""
    cases = {name: entry for name, entry in previous.items() if name in keep}
    for r in runs:
        if r.card and not r.errors:
            cases[r.case.name] = {m: baseline_entry(s) for m, s in r.scores.items()}
    payload = {
        "version": BASELINE_VERSION,
        "note": "Scores per case and metric; `predigest eval` fails when one drops below. "
        "Regenerate with `predigest eval --update-baseline` after an intended change.",
        "cases": {name: cases[name] for name in sorted(cases)},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def compare(r: CaseRun, committed: dict[str, dict[str, object]] | None) -> CaseResult:
    """Each metric against its committed score: below it (beyond EPSILON) fails, and rule
    compliance below 1.0 fails whatever the baseline says."""
    if r.card is None:
        return CaseResult(r, tuple(MetricResult(m, None, _score_of(committed, m), "error") for m in METRICS))
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
            status = "new"
        elif value < base - EPSILON:
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


def evaluate(
    cases_dir: Path,
    baseline_path: Path,
    *,
    only: str | None = None,
    update_baseline: bool = False,
    backend: str = "replay",
) -> EvalReport:
    """Run the cases, compare each with its committed scores, and rewrite the baseline if asked."""
    rows = load_rows(cases_dir, only)
    if not update_baseline and not baseline_path.is_file():
        # an absent baseline would pass every score as "new": a typo must not turn CI green
        raise PredigestError(
            f"the baseline {baseline_path} does not exist",
            hint="pass the committed eval/baseline.json, or --update-baseline to create it",
        )
    baseline = load_baseline(baseline_path)
    runs: list[CaseRun] = []
    for row in rows:
        runs.append(run_case(row, backend=backend))
        if "@" not in row.name:  # the offline floor does not depend on a cassette set: once per case
            runs.append(run_case(offline_row(row), backend="offline"))
    notes: list[str] = []
    if update_baseline:
        # with --case, every other committed case stays; a full run also drops deleted cases
        keep = set(baseline) if only else {r.case.name for r in runs}
        write_baseline(baseline_path, runs, baseline, keep)
        skipped = [r.case.name for r in runs if r.errors or r.card is None]
        notes.append(f"baseline written to {baseline_path}")
        if skipped:
            notes.append(f"kept the committed baseline of failed case(s): {', '.join(skipped)}")
        baseline = load_baseline(baseline_path)
    return EvalReport(
        tuple(compare(r, baseline.get(r.case.name)) for r in runs),
        baseline_path,
        baseline_updated=update_baseline,
        notes=tuple(notes),
    )
