"""Two views of one eval: the terminal report and JSON for machines (the page is eval/page.py).

The terminal report answers "did anything drop, and which item moved?" (the overview first,
eval/overview.py); the JSON carries every item so a script can diff two runs.
"""

from __future__ import annotations

import dataclasses

from rich.console import Console
from rich.text import Text

from agent.core import listing
from agent.core.listing import width
from eval import overview, shared_gap
from eval.metrics import Score
from eval.overview import num, signed
from eval.page import write_html
from eval.runner import CaseResult, EvalReport, MetricResult

_SHOW = 3  # items per list in the terminal; the JSON and HTML have them all


# --- terminal -------------------------------------------------------------------------------------


def _clip(s: str, cells: int) -> str:
    """`s` cut to `cells` terminal cells with an ellipsis: an item is named, not quoted whole."""
    if width(s) <= cells:
        return s
    out, used = "", 0
    for c in s:
        if used + width(c) > cells - 1:
            break
        out, used = out + c, used + width(c)
    return out + "…"


def _moved_lines(r: CaseResult, room: int) -> list[str]:
    """What moved, one item per line; metrics that share an item list (increment P/R/F1,
    to-verify R/P) name each item once."""
    seen: set[tuple[str, str]] = set()
    lines: list[str] = []
    for m in r.metrics:
        lists = [("now missed", m.newly_missed), ("now extra", m.newly_extra), ("fixed", m.fixed)]
        if m.status == "noncompliant":
            lists.append(("broken", tuple(r.run.scores[m.metric].missed)))
        if m.status == "missing":
            lists.append(("unscored", ("the baseline's row has no score for it: --update-baseline records one",)))
        for label, items in lists:
            fresh = [i for i in items if (label, i) not in seen]
            seen.update((label, i) for i in fresh)
            head = f"  {label:<10} {m.metric}  "
            lines += [head + _clip(i, max(20, room - width(head))) for i in fresh[:_SHOW]]
            if len(fresh) > _SHOW:
                lines.append(f"  {'':<10} {m.metric}  … and {len(fresh) - _SHOW} more (--json or --html lists them)")
    return lines


def detail_lines(r: CaseResult, room: int | None) -> list[str]:
    """One row in full: what it was asked with, every metric against its baseline, what moved."""
    c = r.run.case
    head = f"{c.name} · {c.topic} · {c.date} · {r.run.stamp} · {r.run.seconds:.1f}s · {overview.status(r)}"
    table = [[m.metric, num(m.value), num(m.baseline), signed(m.delta), m.status] for m in r.metrics]
    lines = listing.render(head, ["metric", "score", "baseline", "Δ", "status"], table, room).splitlines()
    lines += _moved_lines(r, room or 120)
    lines += [f"  error {e if room is None else _clip(e, room - 8)}" for e in r.run.errors[:_SHOW]]  # piped: whole
    if len(r.run.errors) > _SHOW:
        lines.append(f"  … and {len(r.run.errors) - _SHOW} more error(s); --json or --html lists them all")
    return lines


def patch_line(r: CaseResult) -> str:
    """The row's E2 patch against the editor's living document, in one line."""
    p = r.run.patch
    head = f"patch ({r.name}, {r.run.answers})"
    if "error" in p:
        return f"{head}: not scored: {p['error']}"
    return (
        f"{head}: {p['placed']}/{p['editor_lines']} lines under the editor's sections, "
        f"{len(p['missing'])} missing, {len(p['extra'])} extra"
    )


def folded(line: str, room: int | None) -> list[str]:
    """`line` in lines of at most `room` cells, the continuation lines indented by two; whole when
    the width is unknown (a pipe: one line per line, for grep)."""
    if room is None or width(line) <= room:
        return [line]
    first = listing.fold(line, room)[0]
    rest = line[len(first) :].lstrip(" ")
    return [first, *("  " + piece for piece in listing.fold(rest, room - 2))]


def print_report(
    report: EvalReport, console: Console, *, verbose: bool = False, named: str = "", wide: bool = False
) -> None:
    """The overview (failing rows first, as many columns as the width holds unless `wide`), then
    in full each row that failed or moved (every row with `verbose`), the notes, and a last line
    that counts the rows. `named`: the prompt the report is of, when there are two. Plain text
    styled with `Text`, never markup, and never wrapped by rich; on a terminal or with COLUMNS set
    no line is wider than the width, and a pipe gets whole lines."""
    room = console.width if console.is_terminal else listing.room()

    def say(line: str, style: str = "") -> None:
        for piece in folded(line, room):
            console.print(Text(piece, style=style), soft_wrap=True, highlight=False)

    order = overview.ordered(report)
    title = f"{len(order)} rows against {report.baseline_path}, failing rows first"
    table = overview.terminal_table(report, room, wide=wide)
    say(f"{named}: {title}" if named else title)
    for line in listing.render("", table.headers, table.rows, room).splitlines()[1:]:
        say(line)  # a failing row says FAILED in its first cell
    if table.left_out:
        say(f"left out at this width (--wide shows them): {', '.join(table.left_out)}")
    patched = [r for r in order if r.run.patch]
    if patched:
        say("")
    for r in patched:
        say(patch_line(r))
    if gap := shared_gap.lines(shared_gap.compare(report)):
        say("")
        for line in gap:
            say(line)
    for r in order:
        if verbose or not r.ok or overview.status(r) == "moved":
            say("")
            for i, line in enumerate(detail_lines(r, room)):
                say(line, "red" if i == 0 and not r.ok else "")
    for note in report.notes:
        say(note)
    if report.run_id:
        say(f"logged as {report.run_id}")
    say(overview.summary(report), "green" if report.ok else "red")


# --- JSON -----------------------------------------------------------------------------------------


def to_json(report: EvalReport) -> dict[str, object]:
    """Everything a script needs to tell two runs apart, items included."""
    return {
        "ok": report.ok,
        "baseline": str(report.baseline_path),
        "baseline_updated": report.baseline_updated,
        "notes": list(report.notes),
        "cases": [_row_json(r) for r in report.results],
        "shared_vs_per_topic": shared_gap.to_json(shared_gap.compare(report)),
    }


def _row_json(r: CaseResult) -> dict[str, object]:
    return {
        "case": r.name,
        "stamp": r.run.stamp,
        "answers": r.run.answers,
        "cassettes": r.run.cassette_set,
        "ok": r.ok,
        "topic": r.run.case.topic,
        "date": r.run.case.date.isoformat(),
        "seconds": round(r.run.seconds, 3),
        "extraction": r.run.case.extraction,
        "spend": dataclasses.asdict(r.run.spend),
        "errors": list(r.run.errors),
        "metrics": {m.metric: _metric_json(m, r.run.scores.get(m.metric)) for m in r.metrics},
        "patch": r.run.patch or None,
    }


def _metric_json(m: MetricResult, s: Score | None) -> dict[str, object]:
    return {
        "score": m.value,
        "baseline": m.baseline,
        "delta": m.delta,
        "status": m.status,
        "note": s.note if s else "",
        "matched": list(s.matched) if s else [],
        "missed": list(s.missed) if s else [],
        "extra": list(s.extra) if s else [],
        "newly_missed": list(m.newly_missed),
        "newly_extra": list(m.newly_extra),
        "fixed": list(m.fixed),
    }


__all__ = ["detail_lines", "patch_line", "print_report", "to_json", "write_html"]
