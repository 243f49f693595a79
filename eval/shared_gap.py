"""Shared extraction against per-topic, on every case with both rows: how far each shared row's
scores fall from its topic's per-topic row, and what either way of asking spends on the evening.

Whether shared extraction can be the default stands on these numbers: the same kind of answers
(the case's own set against its shared set), every score, and the whole evening's calls and tokens
(a shared request serves every topic that reads its document; each topic still composes alone).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from eval.runner import CaseResult, EvalReport, Spend, called_topics, spend_of
from eval.span_metrics import LOWER_IS_BETTER

WITHIN = 0.02  # a shared row this close to per-topic on every score is as good


@dataclass(frozen=True)
class RowGap:
    """One shared row beside its topic's per-topic row: the score it falls furthest behind on."""

    case: str
    metric: str  # '' when no score falls behind
    shared: float
    per_topic: float

    @property
    def behind(self) -> float:
        """How far shared falls behind on `metric` (0 when it does not)."""
        if not self.metric:
            return 0.0
        worse = self.shared - self.per_topic if self.metric in LOWER_IS_BETTER else self.per_topic - self.shared
        return max(0.0, worse)

    @property
    def within(self) -> bool:
        return self.behind <= WITHIN


@dataclass(frozen=True)
class EveningSpend:
    """One evening asked both ways. `per_topic` is None when some topic of the evening has no
    per-topic row to add up (its spend would be missing from the sum)."""

    workspace: Path
    date: dt.date
    topics: tuple[str, ...]
    shared: Spend
    per_topic: Spend | None
    without_row: tuple[str, ...]  # the evening's topics with no per-topic row


@dataclass(frozen=True)
class SharedGap:
    rows: tuple[RowGap, ...]
    evenings: tuple[EveningSpend, ...]

    @property
    def all_within(self) -> bool:
        return bool(self.rows) and all(r.within for r in self.rows)


def compare(report: EvalReport) -> SharedGap:
    """Each shared row against the per-topic row of its case that replays the case's own answers,
    and each shared evening's spend against the sum of its topics' per-topic rows."""
    own = {r.run.case.folder: r for r in report.results if _own_row(r)}
    shared = [r for r in report.results if r.run.case.extraction == "shared" and not r.run.errors]
    rows = tuple(_row_gap(r, own[r.run.case.folder]) for r in shared if r.run.case.folder in own)
    by_evening: dict[tuple[Path, dt.date], list[CaseResult]] = {}
    for r in shared:
        by_evening.setdefault((r.run.case.workspace, r.run.case.date), []).append(r)
    evenings = tuple(_evening(key, rs, list(own.values())) for key, rs in by_evening.items())
    return SharedGap(rows, evenings)


def _own_row(r: CaseResult) -> bool:
    """The per-topic row of a case that replays the case's own answer set (not another set's, not offline)."""
    c = r.run.case
    return c.extraction == "per-topic" and r.name == c.folder.name and r.run.backend != "offline" and not r.run.errors


def _row_gap(shared: CaseResult, per_topic: CaseResult) -> RowGap:
    a, b = shared.run.scores, per_topic.run.scores
    gaps = [RowGap(shared.name, m, a[m].value, b[m].value) for m in a if m in b]
    worst = max(gaps, key=lambda g: g.behind, default=None)
    if worst is None or worst.behind == 0:
        return RowGap(shared.name, "", 0.0, 0.0)
    return worst


def _evening(key: tuple[Path, dt.date], shared: list[CaseResult], own: list[CaseResult]) -> EveningSpend:
    """The evening's shared requests once (every shared row holds them all) and each row's own
    composing call, against the per-topic rows of the same workspace and evening."""
    workspace, date = key
    extraction = [c for c in shared[0].run.calls if not c.doc_path.startswith("compose/")]
    composing = [c for r in shared for c in r.run.calls if c.doc_path.startswith("compose/")]
    llm = shared[0].run.outcome.evening.llm if shared[0].run.outcome is not None else None
    topics = called_topics(extraction)
    mine = {r.run.case.topic: r for r in own if (r.run.case.workspace, r.run.case.date) == key}
    without = tuple(t for t in topics if t not in mine)
    per_topic = None if without else spend_of([c for t in topics for c in mine[t].run.calls], llm)
    return EveningSpend(workspace, date, topics, spend_of(extraction + composing, llm), per_topic, without)


def lines(gap: SharedGap) -> list[str]:
    """The comparison as the terminal report says it: each evening's spend, each row's worst score."""
    if not gap.rows and not gap.evenings:
        return []
    out = ["shared extraction against per-topic (the case's own answers against its shared set):"]
    for e in gap.evenings:
        head = f"  {e.date:%Y-%m-%d} · {', '.join(e.topics)}: "
        if e.per_topic is None:
            out.append(head + f"{e.shared.calls} calls shared; no per-topic row for {', '.join(e.without_row)}")
            continue
        out.append(head + _spend_line(e.shared, e.per_topic))
    for r in gap.rows:
        said = "every score within" if r.within else "furthest behind on"
        detail = f" {r.metric} {r.shared:.3f} vs {r.per_topic:.3f}" if r.metric else ""
        out.append(f"  {r.case}: {said}{detail}" + (f" ({WITHIN})" if r.within and not r.metric else ""))
    n = sum(r.within for r in gap.rows)
    out.append(f"  {n} of {len(gap.rows)} shared rows within {WITHIN} of per-topic on every score")
    return out


def _spend_line(shared: Spend, per_topic: Spend) -> str:
    parts = [f"calls {shared.calls} vs {per_topic.calls}"]
    if shared.completion_tokens is not None and per_topic.completion_tokens:
        out, base = shared.completion_tokens, per_topic.completion_tokens
        parts.append(f"completion tokens {out:,} vs {base:,} ({out / base:.2f}×)")
    if shared.prompt_tokens is not None and per_topic.prompt_tokens is not None:
        parts.append(f"prompt tokens {shared.prompt_tokens:,} vs {per_topic.prompt_tokens:,}")
    if shared.cost_usd is not None and per_topic.cost_usd is not None:
        parts.append(f"live cost ${shared.cost_usd:.4f} vs ${per_topic.cost_usd:.4f}")
    return " · ".join(parts)


def to_json(gap: SharedGap) -> dict[str, object]:
    return {
        "within": WITHIN,
        "all_within": gap.all_within,
        "rows": [
            {"case": r.case, "metric": r.metric, "shared": r.shared, "per_topic": r.per_topic, "behind": r.behind}
            for r in gap.rows
        ],
        "evenings": [
            {
                "date": e.date.isoformat(),
                "topics": list(e.topics),
                "shared": dataclasses.asdict(e.shared),
                "per_topic": None if e.per_topic is None else dataclasses.asdict(e.per_topic),
                "without_row": list(e.without_row),
            }
            for e in gap.evenings
        ],
    }
