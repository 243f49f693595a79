"""Two logged evals side by side: per case and metric the delta, and every item that flipped
(matched in one run, missed in the other) with the stage that lost it in the losing run.

Both runs are read from the run log, so a comparison costs nothing and can be made long after
the runs; the reasons are the ones each run recorded (eval/explain.py), not recomputed under
today's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agent.core.errors import PredigestError
from agent.write.templating import render
from eval.metrics import METRICS
from schemas.runlog import EveningEntry, ItemFate, RunLog

# increment precision, recall and F1 share one item list: their flips are reported once
_SAME_ITEMS = {"increment_precision": "increment_recall", "increment_f1": "increment_recall"}


@dataclass(frozen=True)
class Flip:
    metric: str
    item: str
    winner: str  # "A" or "B": the run that matched it
    stage: str  # in the losing run: not extracted / ungrounded / covered / merged / …
    detail: str

    @property
    def loser(self) -> str:
        return "B" if self.winner == "A" else "A"


@dataclass(frozen=True)
class MetricDelta:
    metric: str
    a: float | None
    b: float | None

    @property
    def delta(self) -> float | None:
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass(frozen=True)
class CaseDelta:
    name: str
    a: EveningEntry
    b: EveningEntry
    metrics: tuple[MetricDelta, ...]
    flips: tuple[Flip, ...]


@dataclass(frozen=True)
class Comparison:
    a: RunLog
    b: RunLog
    cases: tuple[CaseDelta, ...]
    only_in: tuple[str, ...] = ()  # rows one of the runs does not have

    @property
    def flips(self) -> list[Flip]:
        return [f for c in self.cases for f in c.flips]


def stamp(e: EveningEntry) -> str:
    """What a row was asked with, as every report prints it; stale answers say whose they were."""
    parts = [e.prompt or "offline", e.model, e.backend, e.cassettes]
    if e.stale:
        parts.append("stale (" + ", ".join(s.split("#", 1)[0] for s in e.stale) + ")")
    return " · ".join(p for p in parts if p)


def compare_runs(a: RunLog, b: RunLog) -> Comparison:
    if a.kind != "eval" or b.kind != "eval":
        which = a.id if a.kind != "eval" else b.id
        raise PredigestError(f"run {which} is a `predigest run`, not an eval", hint="compare two eval runs")
    rows_b = {e.name: e for e in b.evenings}
    cases = []
    for ea in a.evenings:
        eb = rows_b.get(ea.name)
        if eb is not None:
            cases.append(_case(ea, eb))
    names_a = {e.name for e in a.evenings}
    only = tuple(sorted(names_a ^ set(rows_b)))
    return Comparison(a, b, tuple(cases), only)


def _case(a: EveningEntry, b: EveningEntry) -> CaseDelta:
    metrics = tuple(
        MetricDelta(m, a.scores[m].score if m in a.scores else None, b.scores[m].score if m in b.scores else None)
        for m in METRICS
        if m in a.scores or m in b.scores
    )
    flips: list[Flip] = []
    for m in METRICS:
        if m in _SAME_ITEMS or m not in a.scores or m not in b.scores:
            continue
        missed_a, missed_b = set(a.scores[m].missed), set(b.scores[m].missed)
        flips += [_flip(m, item, "A", b) for item in b.scores[m].missed if item not in missed_a]
        flips += [_flip(m, item, "B", a) for item in a.scores[m].missed if item not in missed_b]
    return CaseDelta(a.name, a, b, metrics, tuple(flips))


def _flip(metric: str, item: str, winner: str, losing: EveningEntry) -> Flip:
    fate = _fate(losing, metric, item)
    if fate is not None:
        return Flip(metric, item, winner, fate.stage, fate.detail)
    why = "; ".join(losing.errors[:1]) or "no recorded reason for this metric's items"
    return Flip(metric, item, winner, "", why)


def _fate(e: EveningEntry, metric: str, item: str) -> ItemFate | None:
    return next((f for f in e.fates if f.metric == metric and f.item == item and not f.matched), None)


# --- views -----------------------------------------------------------------------------------------


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def print_comparison(c: Comparison, console: Console) -> None:
    console.print(f"A {c.a.id} ({c.a.prompt or 'offline'} · {c.a.model})", markup=False, highlight=False)
    console.print(f"B {c.b.id} ({c.b.prompt or 'offline'} · {c.b.model})", markup=False, highlight=False)
    for case in c.cases:
        changed = [m for m in case.metrics if m.delta]
        t = Table(title=f"{case.name} · A {stamp(case.a)} → B {stamp(case.b)}", title_justify="left")
        for col in ("metric", "A", "B", "Δ"):
            t.add_column(col, justify="left" if col == "metric" else "right")
        for m in case.metrics:
            d = m.delta
            style = "red" if d and d < 0 else ("green" if d and d > 0 else "")
            t.add_row(m.metric, _num(m.a), _num(m.b), Text("—" if d is None else f"{d:+.3f}", style=style))
        if not changed and not case.flips:
            console.print(f"{case.name}: no change", markup=False, highlight=False)
            continue
        console.print(t)
        for f in case.flips:
            verb = "lost in B" if f.winner == "A" else "won in B"
            reason = f"{f.stage}: {f.detail}" if f.stage else f.detail
            console.print(f"  {verb} [{f.metric}] {f.item} — in {f.loser}: {reason}", markup=False, highlight=False)
    for name in c.only_in:
        console.print(f"only in one run: {name}", markup=False, highlight=False)


def comparison_json(c: Comparison) -> dict[str, object]:
    return {
        "a": c.a.id,
        "b": c.b.id,
        "cases": [
            {
                "case": case.name,
                "a": stamp(case.a),
                "b": stamp(case.b),
                "metrics": {m.metric: {"a": m.a, "b": m.b, "delta": m.delta} for m in case.metrics},
                "flips": [
                    {"metric": f.metric, "item": f.item, "matched_in": f.winner, "stage": f.stage, "detail": f.detail}
                    for f in case.flips
                ],
            }
            for case in c.cases
        ],
        "only_in_one": list(c.only_in),
    }


def write_comparison_html(c: Comparison, path: Path) -> Path:
    page = render("eval_compare.html.j2", c=c, stamp=stamp, num=_num)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
