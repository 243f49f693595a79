"""The evaluation harness: replays each gold case, scores it against its gold briefing, and
holds the scores against the committed baseline, so CI fails when a prompt, model or rule
change makes the briefing worse.

Modules, one concept each:

- cases.py    a case folder (case.toml + gold.md) and where its paths point
- metrics.py  pure scores of a briefing against its gold, each with matched / missed / extra items
- runner.py   run a case offline, parse the output back, score, compare with eval/baseline.json
- report.py   the terminal table, the JSON for machines, the side-by-side HTML page
- relay.py    a folder of a real model's saved answers -> relayed cassettes (`predigest cassettes relay`)

`run_eval` is the `predigest eval` command as a function; the CLI only prints what it returns.
"""

from __future__ import annotations

from pathlib import Path

from eval.report import print_report, to_json, write_html
from eval.runner import EvalReport, evaluate


def run_eval(
    cases_dir: Path,
    baseline_path: Path,
    *,
    only: str | None = None,
    update_baseline: bool = False,
    html_path: Path | None = None,
    backend: str = "replay",
) -> EvalReport:
    """Run every case (or `only` one), compare with the baseline, write the baseline and the
    HTML page when asked. `report.ok` is what the exit code should say."""
    report = evaluate(cases_dir, baseline_path, only=only, update_baseline=update_baseline, backend=backend)
    if html_path is not None:
        write_html(report, html_path)
    return report


__all__ = ["EvalReport", "evaluate", "print_report", "run_eval", "to_json", "write_html"]
