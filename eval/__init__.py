"""The evaluation harness: replays each gold case, scores it against its gold briefing, and
holds the scores against the committed baseline, so CI fails when a prompt, model or rule
change makes the briefing worse. `run_eval` is `predigest eval` as a function; the CLI only
prints what it returns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.core.settings import llm_overrides
from agent.runlog import load_run, log_quietly
from eval.compare import Comparison, compare_runs, comparison_json, print_comparison, write_comparison_html
from eval.overview import markdown as overview_markdown
from eval.record import eval_record
from eval.report import print_report, to_json, write_html
from eval.runner import EvalReport, OnPlan, OnResult, Variant, evaluate


def run_eval(
    cases_dir: Path,
    baseline_path: Path,
    *,
    only: str | None = None,
    update_baseline: bool = False,
    html_path: Path | None = None,
    variant: Variant | None = None,
    command: Sequence[str] = ("eval",),
    logs: Path | None = None,
    on_plan: OnPlan | None = None,
    on_result: OnResult | None = None,
    accept_drops: bool = False,
    skip: Sequence[str] = (),
) -> EvalReport:
    """Run every case (or `only` one), compare with the baseline, write the baseline and the
    HTML page when asked, and append the run to the log `logs` (None: not logged).
    `report.ok` is what the exit code should say."""
    variant = variant or Variant()
    report = evaluate(
        cases_dir,
        baseline_path,
        only=only,
        update_baseline=update_baseline,
        variant=variant,
        on_plan=on_plan,
        on_result=on_result,
        accept_drops=accept_drops,
        skip=skip,
    )
    if logs is not None:
        record = eval_record(report, variant, command)
        if log_quietly(record, logs) is not None:
            report = dataclasses.replace(report, run_id=record.id)
    if html_path is not None:
        write_html(report, html_path)
        report = dataclasses.replace(report, notes=(*report.notes, f"wrote {html_path}"))
    return report


def variants(
    prompts: Sequence[Path],
    *,
    backend: str,
    model: str | None,
    flags: Mapping[str, Any],
    env: Mapping[str, str],
    cassette_root: Path | None = None,
    allow_stale: bool = False,
) -> list[Variant]:
    """One variant per prompt file (the default prompt when none), with the `[llm]` overrides of
    the flags over the environment: the settings path `run` takes."""
    llm = llm_overrides(flags, env)
    return [
        Variant(
            backend=backend,
            prompt_file=p,
            model=model,
            llm=llm,
            cassette_root=cassette_root,
            allow_stale=allow_stale,
        )
        for p in (prompts or [None])
    ]


def compare_logged(a: str, b: str, logs: Path | None) -> Comparison:
    """Two logged evals, by id, id prefix, `last` or `last~N` (counted among evals only)."""
    return compare_runs(load_run(logs, a, kind="eval"), load_run(logs, b, kind="eval"))


__all__ = [
    "Comparison",
    "EvalReport",
    "Variant",
    "compare_logged",
    "comparison_json",
    "evaluate",
    "overview_markdown",
    "print_comparison",
    "print_report",
    "run_eval",
    "to_json",
    "variants",
    "write_comparison_html",
    "write_html",
]
