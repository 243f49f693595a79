"""An eval as a run-log entry: each row's calls, answers and findings, its scores per metric and
item, and each gold item's fate (eval/explain.py), so `eval --compare` and `logs show` can read a
past eval without running anything again."""

from __future__ import annotations

from collections.abc import Sequence

from agent.runlog import evening_entry, new_record
from eval.explain import fates
from eval.runner import CaseResult, EvalReport, Variant
from schemas.runlog import EveningEntry, MetricEntry, RunLog


def row_entry(r: CaseResult) -> EveningEntry:
    run = r.run
    case = run.case
    if run.outcome is not None:
        entry = evening_entry(case.name, run.outcome, run.results, backend=run.backend, cassettes=run.cassette_set)
    else:
        entry = EveningEntry(
            name=case.name,
            workspace=str(case.workspace),
            topic=case.topic,
            date=case.date.isoformat(),
            backend=run.backend,
            cassettes=run.cassette_set,
        )
    scores = {
        name: MetricEntry(score=round(s.value, 6), matched=list(s.matched), missed=list(s.missed), extra=list(s.extra))
        for name, s in run.scores.items()
    }
    return entry.model_copy(update={"scores": scores, "fates": fates(run), "errors": list(run.errors), "ok": r.ok})


def eval_record(report: EvalReport, variant: Variant, command: Sequence[str]) -> RunLog:
    first = next((r.run.outcome for r in report.results if r.run.outcome is not None), None)
    settings = first.evening.llm.public_dict() if first else {}  # plain values (paths as text)
    settings.update(
        {
            "prompt_file": str(variant.prompt_file or ""),
            "cassette_root": str(variant.cassette_root or ""),
            "allow_stale": variant.allow_stale,
            "baseline": str(report.baseline_path),
        }
    )
    rec = new_record("eval", command, settings, [row_entry(r) for r in report.results])
    return rec.model_copy(update={"ok": report.ok})
