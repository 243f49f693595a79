"""Three views of one eval: a table for the terminal, JSON for machines, a static HTML page.

The terminal table answers "did anything drop, and which item moved?"; the JSON carries every
item so a script can diff two runs; the HTML page puts each case's output and gold side by
side, increment by increment as the matching paired them, with misses and extras marked.
The HTML page is a Jinja2 template with autoescape on: briefings quote the inbox, and the inbox
is other people's text.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.text import Text

from agent.core import listing
from agent.core.labels import ZH
from agent.core.listing import width
from agent.core.text import facts
from agent.runlog import claim_fate
from agent.write.templating import render
from eval import overview
from eval.explain import fates
from eval.metrics import METRICS, Matching, key_facts, stated_facts
from eval.runner import CaseResult, CaseRun, EvalReport, MetricResult
from schemas.briefing import Briefing, VerifyItem
from schemas.run import FindingRecord

_SHOW = 3  # items per list in the terminal; the JSON and HTML have them all


# --- terminal -------------------------------------------------------------------------------------


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _delta(m: MetricResult) -> str:
    return "—" if m.delta is None else f"{m.delta:+.3f}"


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
    table = [[m.metric, _num(m.value), _num(m.baseline), _delta(m), m.status] for m in r.metrics]
    lines = listing.render(head, ["metric", "score", "baseline", "Δ", "status"], table, room).splitlines()
    lines += _moved_lines(r, room or 120)
    lines += [f"  error {_clip(e, (room or 120) - 8)}" for e in r.run.errors[:_SHOW]]
    if len(r.run.errors) > _SHOW:
        lines.append(f"  … and {len(r.run.errors) - _SHOW} more error(s); --json or --html lists them all")
    return lines


def print_report(report: EvalReport, console: Console, *, verbose: bool = False) -> None:
    """The overview (failing rows first), then in full each row that failed or moved (every row
    with `verbose`), the notes, and a last line that counts the rows. Plain text styled with
    `Text`, never markup, and never wrapped by rich: a pipe gets whole lines."""
    room = console.width if console.is_terminal else None

    def say(line: str, style: str = "") -> None:
        console.print(Text(line, style=style), soft_wrap=True, highlight=False)

    order = overview.ordered(report)
    title = f"{len(order)} rows against {report.baseline_path}, failing rows first"
    table = listing.render(title, overview.HEADERS, [row.as_list() for row in overview.rows(report)], room)
    for line, r in zip(table.splitlines(), [None, None, None, *order], strict=False):
        say(line, "red" if r is not None and not r.ok else "")
    for r in order:
        if verbose or overview.status(r) in ("FAILED", "moved"):
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
    cases = []
    for r in report.results:
        metrics: dict[str, object] = {}
        for m in r.metrics:
            s = r.run.scores.get(m.metric)
            metrics[m.metric] = {
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
        cases.append(
            {
                "case": r.name,
                "stamp": r.run.stamp,
                "ok": r.ok,
                "topic": r.run.case.topic,
                "date": r.run.case.date.isoformat(),
                "seconds": round(r.run.seconds, 3),
                "errors": list(r.run.errors),
                "metrics": metrics,
            }
        )
    return {
        "ok": report.ok,
        "baseline": str(report.baseline_path),
        "baseline_updated": report.baseline_updated,
        "notes": list(report.notes),
        "cases": cases,
    }


# --- HTML -----------------------------------------------------------------------------------------


def write_html(report: EvalReport, path: Path) -> Path:
    """A self-contained page (no scripts, no external assets) for every case of the report,
    rendered from agent/templates/eval_report.html.j2 with autoescape on."""
    page = render("eval_report.html.j2", report=report, cases=[_case_view(r) for r in report.results], num=_num)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _case_view(r: CaseResult) -> dict[str, object]:
    """What the template shows of one case; facts only, no markup."""
    metrics = []
    for m in r.metrics:
        s = r.run.scores.get(m.metric)
        lists = []
        if s is not None:
            lists = [
                (label, items)
                for label, items in (
                    ("missed", s.missed),
                    ("extra", s.extra),
                    ("matched", s.matched),
                    ("newly missed", m.newly_missed),
                    ("newly extra", m.newly_extra),
                    ("fixed", m.fixed),
                )
                if items
            ]
        metrics.append(
            {
                "metric": m,
                "score": s,
                "lists": lists,
                "delta": "—" if m.delta is None else f"{m.delta:+.3f}",
                "description": METRICS.get(m.metric, ""),
            }
        )
    side: list[dict[str, object]] = []
    gold, output, card = r.run.gold, r.run.output, r.run.card
    if gold is not None and output is not None and card is not None:
        side = _side_by_side(gold, output, card.matching)
    return {
        "result": r,
        "metrics": metrics,
        "side": side,
        "gold_text": _gold_text(r),
        "missed": [f for f in fates(r.run) if not f.matched],
        "blocks": _blocks(gold, output),
        "documents": _documents(r.run),
    }


def _blocks(gold: Briefing | None, output: Briefing | None) -> list[dict[str, object]]:
    """三 (to-verify), 四 (arXiv) and 五 (no increment) of output and gold, side by side."""
    if gold is None or output is None:
        return []

    def verify(b: Briefing) -> list[str]:
        def carried(v: VerifyItem) -> str:
            return f"，{v.carried_from} {ZH.carried_short}" if v.carried_from else ""

        return [f"{v.title}（{v.risk}{ZH.risk_suffix}{carried(v)}）" for v in b.to_verify]

    def arxiv(b: Briefing) -> list[str]:
        return [f"{a.arxiv_id} · {a.title} · {a.relation}" for a in b.arxiv_rows]

    def five(b: Briefing) -> list[str]:
        return [f"{n.source}：{n.note}" for n in b.no_increment]

    return [
        {"id": key, "label": label, "output": fn(output), "gold": fn(gold)}
        for (key, fn), label in zip(
            (("verify", verify), ("arxiv", arxiv), ("five", five)), ZH.blocks_short, strict=True
        )
    ]


def _documents(run: CaseRun) -> list[dict[str, object]]:
    """Per document: what the model returned and what became of each claim."""
    if run.outcome is None:
        return []
    findings = [FindingRecord(**f.__dict__) for f in run.outcome.findings]
    docs: dict[str, dict[str, object]] = {}
    for res in run.results:
        d = docs.setdefault(
            res.request.doc_path, {"path": res.request.doc_path, "calls": [], "answers": [], "claims": []}
        )
        d["calls"].append(res.record)  # type: ignore[attr-defined]
        if res.extraction is None:
            continue
        d["answers"].append(res.extraction)  # type: ignore[attr-defined]
        for c in res.extraction.claims:
            d["claims"].append({"claim": c, "fate": claim_fate(findings, res.request.doc_path, c.title)})  # type: ignore[attr-defined]
    return list(docs.values())


def _gold_text(r: CaseResult) -> str:
    try:
        return r.run.case.gold_path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _side_by_side(gold: Briefing, output: Briefing, m: Matching) -> list[dict[str, object]]:
    """Rows as the matching paired them: pairs (with the gold facts the output lacks), misses, extras."""
    rows: list[dict[str, object]] = []
    for p in m.pairs:
        g, o = gold.increments[p.gold], output.increments[p.out]
        counted, have = key_facts(g), stated_facts(o)
        wanted = counted | facts(g.title)
        rows.append(
            {
                "kind": "pair",
                "output": o,
                "gold": g,
                "reasons": p.reasons,
                "facts": sorted(counted - have),  # what key_fact_recall counts as missed
                "only_gold": sorted(wanted - have),
                "only_out": sorted(have - wanted),
            }
        )
    rows += [{"kind": "missed", "gold": gold.increments[i]} for i in m.missed]
    rows += [{"kind": "extra", "output": output.increments[i]} for i in m.extra]
    return rows
