"""The first thing `predigest eval` prints: one row per case and answer set, the headline scores
as columns, failing rows first; and the same table as Markdown (`eval --markdown`, quoted in the
README).

The columns are `COLUMNS`: a new metric on the overview is one line there. Cells are plain text,
laid out by agent/core/listing.py, so a pipe gets one line per row and a terminal gets the
columns folded to its width, never a CJK title wrapped over six lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from eval.metrics import COUNTS
from eval.runner import EPSILON, CaseResult, EvalReport, MetricResult, Spend

# (metric, header, terminal header): the headline scores, in the order a reader scans them
COLUMNS: list[tuple[str, str, str]] = [
    ("increment_f1", "increment F1", "inc F1"),
    ("new_arxiv_f1", "new arXiv F1", "arXiv F1"),
    ("key_fact_recall", "key facts", "facts"),
    ("relevance_agreement", "relevance", "relev"),
    ("to_verify_recall", "to-verify R", "verify R"),
    ("to_verify_precision", "to-verify P", "verify P"),
    ("priority_agreement", "priorities", "prio"),
    ("rule_compliance", "rules", "rules"),
    # what an editor would rewrite, counted (0 is right): facts twice, split releases, stapled 三, disputed as fact
    ("facts_twice", "facts twice", "2×"),
    ("releases_split", "split releases", "split"),
    ("multi_question_items", "multi-question items", "multi-Q"),
    ("disputed_stated", "disputed as fact", "disput"),
]
# what the row's requests take (a shared request serves every topic of the run), beside its scores
SPEND = [("calls", "calls"), ("prompt tokens", "in tok"), ("cached", "cached"), ("cost (live)", "$")]
HEADERS = ["status", "case", "answers", *(header for _, header, _ in COLUMNS), *(h for h, _ in SPEND)]
SHORT_HEADERS = ["status", "case", "answers", *(short for _, _, short in COLUMNS), *(s for _, s in SPEND)]


def num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def signed(d: float | None) -> str:
    return "—" if d is None else f"{d:+.3f}"


def moved(m: MetricResult) -> bool:
    """A score that differs from its baseline, or the same score over other items."""
    d = m.delta
    return bool((d is not None and abs(d) > EPSILON) or m.newly_missed or m.newly_extra or m.fixed)


def status(r: CaseResult) -> str:
    """FAILED (a score below its baseline, rules broken, a case that did not run), moved, new or ok."""
    if not r.ok:
        return "FAILED"
    if any(moved(m) for m in r.metrics):
        return "moved"
    if r.metrics and all(m.status == "new" for m in r.metrics):
        return "new"
    return "ok"


def ordered(report: EvalReport) -> list[CaseResult]:
    """Failing rows first, then the rest; each group in case order."""
    return sorted(report.results, key=lambda r: r.ok)


def cell(m: MetricResult | None) -> str:
    """'0.923', and beside it how far it moved from the baseline: '0.857 ▼0.066'."""
    if m is None or m.value is None:
        return "—"
    d, fmt = m.delta, ".0f" if m.metric in COUNTS else ".3f"  # a count is an integer
    if d is None or abs(d) <= EPSILON:
        return f"{m.value:{fmt}}"
    return f"{m.value:{fmt}} {'▲' if d > 0 else '▼'}{abs(d):{fmt}}"


def spend_cells(sp: Spend) -> tuple[str, ...]:
    """'14', '51388', '28288', '$0.0112'; '—' where nothing was sent, the answers report no usage or
    the model has no price."""
    if not sp.calls:
        return ("—",) * len(SPEND)
    tokens = (str(sp.prompt_tokens), str(sp.cached_tokens)) if sp.prompt_tokens is not None else ("—", "—")
    return str(sp.calls), *tokens, "—" if sp.cost_usd is None else f"${sp.cost_usd:.4f}"


@dataclass(frozen=True)
class Row:
    status: str
    case: str
    answers: str
    cells: tuple[str, ...]

    def as_list(self) -> list[str]:
        return [self.status, self.case, self.answers, *self.cells]


def rows(report: EvalReport) -> list[Row]:
    out = []
    for r in ordered(report):
        by_metric = {m.metric: m for m in r.metrics}
        scores = tuple(cell(by_metric.get(k)) for k, _, _ in COLUMNS)
        out.append(Row(status(r), r.run.case.folder.name, r.run.answers, scores + spend_cells(r.run.spend)))
    return out


def markdown(report: EvalReport) -> str:
    """The overview as a Markdown table (pipes in a cell escaped)."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    body = [line(r.as_list()) for r in rows(report)]
    return "\n".join([line(HEADERS), "|" + "---|" * len(HEADERS), *body]) + "\n"


def summary(report: EvalReport) -> str:
    """The last line: 'ok 13 rows', or 'FAILED 1 of 13 rows: <row>, …'."""
    failed = [r.name for r in ordered(report) if not r.ok]
    n = len(report.results)
    return f"FAILED {len(failed)} of {n} rows: {', '.join(failed)}" if failed else f"ok {n} rows"
