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
from rich.text import Text

from agent.core import listing
from agent.core.errors import PredigestError
from agent.core.labels import ZH
from agent.write.templating import render
from eval.metrics import METRICS
from eval.overview import num, signed
from eval.reasons import key_fact, reason
from eval.runner import EPSILON, stale_note
from schemas.runlog import EveningEntry, RunLog

# The item lists that define each metric: a recall is moved by what it misses, a precision by
# what it adds, a set F1 by both. Increment F1 has no items of its own (they are recall's and
# precision's); a metric not named here is read by its missed items.
_LISTS: dict[str, tuple[str, ...]] = {
    "increment_precision": ("extra",),
    "increment_f1": (),
    "to_verify_precision": ("extra",),
    "new_arxiv_f1": ("missed", "extra"),
    "continued_arxiv_f1": ("missed", "extra"),
    "priority_agreement": ("missed", "extra"),
}
_GROUP_FROM = 2  # key facts of one increment, lost together, are one line from this many on


@dataclass(frozen=True)
class Flip:
    metric: str
    item: str  # the item, or for a group "12 key facts of unmatched 增量 3：…"
    winner: str  # "A" or "B": the run where the item is right (matched, or not added)
    stage: str  # in the losing run: not extracted / ungrounded / covered / merged / not listed / …
    detail: str
    kind: str = "missed"  # "missed": the loser misses a gold item; "extra": the loser adds one
    items: tuple[str, ...] = ()  # the items of a group

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

    @property
    def moved(self) -> bool:
        return self.delta is not None and abs(self.delta) > EPSILON


@dataclass(frozen=True)
class CaseDelta:
    name: str
    a: EveningEntry
    b: EveningEntry
    metrics: tuple[MetricDelta, ...]
    flips: tuple[Flip, ...]
    swapped: tuple[tuple[str, int], ...] = ()  # (metric, items that flipped) of a score that did not move
    stale: tuple[str, ...] = ()  # "A", "B": the runs that scored answers given to another prompt

    @property
    def moved(self) -> list[MetricDelta]:
        return [m for m in self.metrics if m.moved]

    @property
    def stale_mark(self) -> str:
        """'B stale (extract@2)': a side whose scores are of another prompt's answers, said first."""
        sides = {"A": self.a, "B": self.b}
        return " · ".join(f"{side} {stale_note(sides[side].stale)}" for side in self.stale)


@dataclass(frozen=True)
class Comparison:
    a: RunLog
    b: RunLog
    cases: tuple[CaseDelta, ...]
    only_in: tuple[str, ...] = ()  # rows one of the runs does not have

    @property
    def differences(self) -> list[str]:
        """What differs between the runs: prompt, model, backend, cassette sets, code revision and
        every other setting, as 'what A → B'; [] when nothing does."""
        a, b = self.a, self.b
        pairs = [
            ("prompt", a.prompt or "offline", b.prompt or "offline"),
            ("prompt file", a.settings.get("prompt_file") or "default", b.settings.get("prompt_file") or "default"),
            ("model", a.model, b.model),
            ("backend", a.backend, b.backend),
            ("cassettes", _sets(a), _sets(b)),
            ("code", a.git or "?", b.git or "?"),
        ]
        keys = sorted((set(a.settings) | set(b.settings)) - _NAMED)
        pairs += [(f"setting {k}", a.settings.get(k), b.settings.get(k)) for k in keys]
        dash = ("", None)
        return [f"{what} {'—' if x in dash else x} → {'—' if y in dash else y}" for what, x, y in pairs if x != y]


def stamp(e: EveningEntry) -> str:
    """What a row was asked with, as every report prints it; stale answers say whose they were."""
    return " · ".join(p for p in (e.prompt or "offline", e.model, e.backend, e.cassettes, stale_note(e.stale)) if p)


# settings that the lines above already name, or that only restate the first row's
_NAMED = {"model", "backend", "effective_backend", "cassette_dir", "cassette_root", "prompt_file"}


def _sets(r: RunLog) -> str:
    names = ", ".join(sorted({e.cassettes for e in r.evenings if e.cassettes})) or "none"
    root = str(r.settings.get("cassette_root") or "")
    return f"{names} under {root}" if root else f"{names} (each case's own)"


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
    """Deltas per metric, and the flipped items of each metric whose score moved; a score that
    did not move lists none (an item lost and another won leave it where it was: counted only)."""
    names = [m for m in METRICS if m in a.scores or m in b.scores]
    names += [m for m in {**a.scores, **b.scores} if m not in names]  # a metric this code does not know yet
    metrics = tuple(
        MetricDelta(m, a.scores[m].score if m in a.scores else None, b.scores[m].score if m in b.scores else None)
        for m in names
    )
    flips: list[Flip] = []
    swapped: list[tuple[str, int]] = []
    stale = tuple(side for side, e in (("A", a), ("B", b)) if e.stale)
    if stale:  # answers given to another prompt: what moved is not the prompt's doing, and no item is laid to it
        return CaseDelta(a.name, a, b, metrics, (), (), stale)
    for md in metrics:
        m = md.metric
        if m not in a.scores or m not in b.scores:
            continue
        found = [f for kind in _LISTS.get(m, ("missed",)) for f in _flips(m, kind, a, b)]
        if md.moved:
            flips += _grouped(found)
        elif found:
            swapped.append((m, len(found)))
    return CaseDelta(a.name, a, b, metrics, tuple(flips), tuple(swapped))


def _flips(metric: str, kind: str, a: EveningEntry, b: EveningEntry) -> list[Flip]:
    """The items in one run's `kind` list only: the other run is the winner."""
    in_a, in_b = set(getattr(a.scores[metric], kind)), set(getattr(b.scores[metric], kind))
    lost = [(i, "A", b) for i in getattr(b.scores[metric], kind) if i not in in_a]
    lost += [(i, "B", a) for i in getattr(a.scores[metric], kind) if i not in in_b]
    return [Flip(metric, item, winner, *reason(metric, item, kind, losing), kind) for item, winner, losing in lost]


def _grouped(flips: list[Flip]) -> list[Flip]:
    """The key facts of one increment that flipped together, as one line: '12 key facts of
    unmatched 增量 3: …' rather than one line per figure."""
    groups: dict[tuple[str, str, str, str, bool], list[tuple[Flip, str]]] = {}
    out: list[Flip] = []
    for f in flips:
        fact = key_fact(f.item) if f.metric == "key_fact_recall" else None
        if fact is None:
            out.append(f)
            continue
        number, figure, unmatched = fact
        groups.setdefault((f.winner, f.stage, f.detail, number, unmatched), []).append((f, figure))
    for (winner, stage, detail, number, unmatched), members in groups.items():
        if len(members) < _GROUP_FROM:
            out += [f for f, _ in members]
            continue
        figures = ", ".join(figure for _, figure in members)
        item = f"{len(members)} key facts of {'unmatched ' if unmatched else ''}{ZH.increment} {number}: {figures}"
        out.append(Flip("key_fact_recall", item, winner, stage, detail, "missed", tuple(f.item for f, _ in members)))
    return out


# --- views -----------------------------------------------------------------------------------------


_VERBS = {
    ("missed", "A"): "lost in B",
    ("missed", "B"): "won in B",
    ("extra", "A"): "added in B",
    ("extra", "B"): "dropped in B",
}


def flip_line(f: Flip) -> str:
    """'lost in B [metric] item — in B: stage: why'."""
    why = f"{f.stage}: {f.detail}" if f.stage else f.detail
    return f"{_VERBS[(f.kind, f.winner)]} [{f.metric}] {f.item} — in {f.loser}: {why}"


def print_comparison(c: Comparison, console: Console) -> None:
    """The two runs and what differs between them, then per row the metrics that moved and each
    flipped item with its stage and reason. Plain lines, never wrapped by rich."""

    def say(line: str, style: str = "") -> None:
        console.print(Text(line, style=style), soft_wrap=True, highlight=False)

    room = console.width if console.is_terminal else None
    for name, r in (("A", c.a), ("B", c.b)):
        say(f"{name} {r.id} · {r.time} · {run_prompt(r)} · {r.model} · {r.backend} · git {r.git or '?'}")
    diffs = c.differences
    say("differs: " + "; ".join(diffs) if diffs else "differs: nothing (same prompt, model, cassettes, code, settings)")
    say(summary_line(c))
    for case in c.cases:
        mark = f"{case.stale_mark} · " if case.stale else ""
        if not case.moved and not case.flips:
            say(f"{case.name}: {mark}no change")
            continue
        say("")
        same = stamp(case.a) == stamp(case.b)
        title = f"{case.name} · {mark}" + (
            f"A and B {stamp(case.a)}" if same else f"A {stamp(case.a)} → B {stamp(case.b)}"
        )
        rows = [[m.metric, num(m.a), num(m.b), signed(m.delta)] for m in case.moved]
        for line in listing.render(title, ["metric", "A", "B", "Δ"], rows, room).splitlines():
            say(line)
        if case.stale:
            say(f"  {STALE_WHY.format(sides=' and '.join(case.stale))}")
        for f in case.flips:
            say("  " + flip_line(f), "red" if f.winner == "A" else "green")
        for metric, n in case.swapped:
            say(f"  [{metric}] same score, {n} item(s) flipped both ways (--json lists them)")
    for name in c.only_in:
        say(f"only in one run: {name}")


STALE_WHY = (
    "not the prompt's doing: {sides} scored answers given to another prompt (--allow-stale), so no item"
    " is laid to a prompt; record that prompt's own answers to compare prompts"
)


def run_prompt(r: RunLog) -> str:
    """A run's prompt by its stamp and the file it was read from: two edits of one file name differ."""
    file = r.settings.get("prompt_file")
    return f"{r.prompt or 'offline'} ({Path(str(file)).name if file else 'default file'})"


def summary_line(c: Comparison) -> str:
    """What moved, in one line: how many rows moved (how many of them on stale answers), how many did not."""
    moved = [case for case in c.cases if case.moved or case.flips]
    stale = sum(1 for case in moved if case.stale)
    on_stale = f" ({stale} of them on stale answers: not the prompt's doing)" if stale else ""
    return f"moved: {len(moved)} of {len(c.cases)} rows{on_stale}; {len(c.cases) - len(moved)} unchanged"


def comparison_json(c: Comparison) -> dict[str, object]:
    return {
        "a": c.a.id,
        "b": c.b.id,
        "differs": c.differences,
        "cases": [
            {
                "case": case.name,
                "a": stamp(case.a),
                "b": stamp(case.b),
                "metrics": {m.metric: {"a": m.a, "b": m.b, "delta": m.delta} for m in case.metrics},
                "flips": [
                    {
                        "metric": f.metric,
                        "item": f.item,
                        "kind": f.kind,
                        "matched_in": f.winner,
                        "stage": f.stage,
                        "detail": f.detail,
                        "items": list(f.items),
                    }
                    for f in case.flips
                ],
                "swapped": dict(case.swapped),
                "stale": list(case.stale),
            }
            for case in c.cases
        ],
        "only_in_one": list(c.only_in),
    }


def write_comparison_html(c: Comparison, path: Path) -> Path:
    page = render(
        "eval_compare.html.j2",
        c=c,
        stamp=stamp,
        num=num,
        summary=summary_line(c),
        stale_why=STALE_WHY,
        run_prompt=run_prompt,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path
