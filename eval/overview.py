"""The first thing `predigest eval` prints: one row per case and answer set, the headline scores
as columns, failing rows first; and the same table as Markdown (`eval --markdown`, quoted in the
docs/eval.md).

The columns are `COLUMNS`: a new metric on the overview is one line there. Cells are plain text,
laid out by agent/core/listing.py, so a pipe gets one line per row and a terminal gets the
columns folded to its width, never a CJK title wrapped over six lines.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.core.listing import width
from eval.runner import EPSILON, CaseResult, EvalReport, MetricResult, Spend
from eval.span_metrics import LOWER_IS_BETTER

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
    ("points_over_8", "points beyond 8", ">8"),
    ("cut_sentences", "cut sentences", "cut"),
]
# a span case's own row (eval.span_metrics): shown when the report has one, after the evenings' scores
SPAN_COLUMNS: list[tuple[str, str, str]] = [
    ("re_reported", "re-reported", "re-rep"),
    ("subjects_twice", "subjects twice", "subj 2×"),
    ("living_disputed", "disputed in living doc", "liv disp"),
    ("growth", "growth (B/evening)", "B/eve"),
]
# what the row's requests take (a shared request serves every topic of the run), beside its scores
SPEND = [("calls", "calls"), ("prompt tokens", "in tok"), ("cached", "cached"), ("cost (live)", "$")]


def columns(report: EvalReport) -> list[tuple[str, str, str]]:
    """The score columns of this report: the span's only when it has a span case's row, so a suite of
    one-evening cases reads as it always has."""
    return COLUMNS + (SPAN_COLUMNS if any(r.run.case.is_span for r in report.results) else [])


def header_row(report: EvalReport, *, short: bool = False) -> list[str]:
    cols = [c[2] if short else c[1] for c in columns(report)]
    return ["status", "case", "answers", *cols, *(s if short else h for h, s in SPEND)]


def num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def signed(d: float | None) -> str:
    return "—" if d is None else f"{d:+.3f}"


def moved(m: MetricResult) -> bool:
    """A score that differs from its baseline, or the same score over other items."""
    d = m.delta
    return bool((d is not None and abs(d) > EPSILON) or m.newly_missed or m.newly_extra or m.fixed)


def status(r: CaseResult) -> str:
    """FAILED (a score below its baseline, rules broken, a case that did not run), stale (scored on
    answers given to another prompt, `--allow-stale`: its scores say nothing of this prompt), moved,
    new or ok; a failing stale row says both."""
    if not r.ok:
        return "FAILED stale" if r.run.stale else "FAILED"
    if r.run.stale:
        return "stale"
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
    d, fmt = m.delta, ".0f" if m.metric in LOWER_IS_BETTER else ".3f"  # a count (or bytes) is an integer
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
        scores = tuple(cell(by_metric.get(k)) for k, _, _ in columns(report))
        out.append(Row(status(r), r.run.case.label, r.run.answers, scores + spend_cells(r.run.spend)))
    return out


# the overview's scores in the order a narrow terminal keeps them: what a prompt engineer reads first
PRIORITY = [
    "increment_f1",
    "key_fact_recall",
    "to_verify_recall",
    "priority_agreement",
    "relevance_agreement",
    "new_arxiv_f1",
    "to_verify_precision",
    "rule_compliance",
    "facts_twice",
    "releases_split",
    "multi_question_items",
    "disputed_stated",
    "points_over_8",
    "cut_sentences",
]
_SHORT = {metric: short for metric, _, short in COLUMNS + SPAN_COLUMNS}


def short_answers(r: CaseResult) -> str:
    """Whose answers, in a word: 'reference', 'relayed', 'offline', 'shared' (the reference answers
    to the shared requests); the stale mark is the status column's, a recording's folder a note's."""
    run = r.run
    if run.backend in ("offline", "live", "record"):
        return run.backend
    word = "+".join(run.kinds) or "none"
    if run.case.extraction == "shared":
        word = "shared" if word == "reference" else f"{word} shared"
    return f"{word} floor" if run.composed == "floor" else word


def compact(m: MetricResult | None) -> str:
    """A score with the way it moved but not by how much ('0.857▼'): the rows printed in full below
    the overview give the deltas, and a narrow terminal keeps more columns this way."""
    full = cell(m)
    value, _, moved_by = full.partition(" ")
    return value + moved_by[:1]


@dataclass(frozen=True)
class Table:
    headers: list[str]
    rows: list[list[str]]
    left_out: list[str]  # the headers of the columns a narrow terminal leaves out


def terminal_table(report: EvalReport, room: int | None, *, wide: bool = False) -> Table:
    """The overview for a terminal: every column when it is `wide` or the width is unknown (a pipe:
    whole rows for grep); else the status, the case, whose answers, and as many scores as fit in
    `room` in `PRIORITY` order, each row on one line, and the names of the columns left out."""
    if wide or room is None:
        return Table(header_row(report, short=True), [r.as_list() for r in rows(report)], [])
    results = ordered(report)
    table = [[status(r), r.run.case.label, short_answers(r)] for r in results]
    headers = ["status", "case", "answers"]
    used = sum(max(width(x) for x in column) for column in zip(headers, *table, strict=True)) + 2 * 2
    shown = 0
    shown_first = PRIORITY + [m for m, _, _ in columns(report)[len(COLUMNS) :]]
    for metric in shown_first:
        cells = [compact(next((m for m in r.metrics if m.metric == metric), None)) for r in results]
        need = 2 + max(width(x) for x in [_SHORT[metric], *cells])
        if used + need > room:
            break
        used, shown = used + need, shown + 1
        headers.append(_SHORT[metric])
        table = [[*row, c] for row, c in zip(table, cells, strict=True)]
    left_out = [_SHORT[m] for m in shown_first[shown:]] + [short for _, short in SPEND]
    return Table(headers, table, left_out)


def markdown(report: EvalReport) -> str:
    """The overview as a Markdown table (pipes in a cell escaped)."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    body = [line(r.as_list()) for r in rows(report)]
    head = header_row(report)
    return "\n".join([line(head), "|" + "---|" * len(head), *body]) + "\n"


def summary(report: EvalReport) -> str:
    """The last line: 'ok 13 rows', or 'FAILED 1 of 13 rows: <row>, …'."""
    failed = [r.name for r in ordered(report) if not r.ok]
    n = len(report.results)
    return f"FAILED {len(failed)} of {n} rows: {', '.join(failed)}" if failed else f"ok {n} rows"
