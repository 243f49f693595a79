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
from rich.table import Table
from rich.text import Text

from agent.core.labels import ZH
from agent.core.text import facts
from agent.runlog import claim_fate
from agent.write.templating import render
from agent.write.trace import finding_record
from eval.explain import fates
from eval.metrics import METRICS, Matching, key_facts, stated_facts
from eval.runner import CaseResult, CaseRun, EvalReport, MetricResult
from schemas.briefing import Briefing, VerifyItem

_SHOW = 3  # items per list in the terminal; the JSON and HTML have them all


# --- terminal -------------------------------------------------------------------------------------


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _delta(m: MetricResult) -> Text:
    d = m.delta
    if d is None:
        return Text("—")
    style = "red" if d < 0 else ("green" if d > 0 else "")
    return Text(f"{d:+.3f}", style=style)


def _moved(m: MetricResult) -> str:
    parts = []
    for label, items in (("now missed", m.newly_missed), ("now extra", m.newly_extra), ("fixed", m.fixed)):
        if items:
            more = f" (+{len(items) - _SHOW} more)" if len(items) > _SHOW else ""
            parts.append(f"{label}{more}:\n" + "\n".join(f"· {i[:80]}" for i in items[:_SHOW]))
    return "\n".join(parts)


def case_table(r: CaseResult) -> Table:
    """One case: metric, score, baseline, delta, status, and the items that moved."""
    c = r.run.case
    status = ("ok", "green") if r.ok else ("FAILED", "red")
    t = Table(
        title=Text.assemble(f"{c.name} · {c.topic} · {c.date} · {r.run.stamp} · {r.run.seconds:.1f}s · ", status),
        title_justify="left",
    )
    for col, kw in (
        ("metric", {"no_wrap": True, "min_width": 19}),
        ("score", {"justify": "right"}),
        ("baseline", {"justify": "right"}),
        ("Δ", {"justify": "right"}),
        ("status", {}),
        ("what moved", {"overflow": "fold"}),
    ):
        t.add_column(col, **kw)  # type: ignore[arg-type]
    for m in r.metrics:
        style = "red" if m.failed else ""
        t.add_row(
            Text(m.metric, style=style),
            Text(_num(m.value), style=style),
            _num(m.baseline),
            _delta(m),
            Text(m.status, style=style or ("green" if m.status == "ok" else "yellow")),
            Text(_moved(m) or _violations(r, m)),
        )
    return t


def _violations(r: CaseResult, m: MetricResult) -> str:
    """For a non-compliant run, the broken rules themselves (there is no baseline to diff)."""
    if m.status != "noncompliant":
        return ""
    return "\n".join(r.run.scores[m.metric].missed[:_SHOW])


def print_report(report: EvalReport, console: Console) -> None:
    """Styled with `Text`, never markup: case names, stamps and errors print as written, on any
    console (the CLI's has markup off)."""
    for r in report.results:
        console.print(case_table(r))
        for e in r.run.errors[:_SHOW]:
            console.print(Text.assemble("  ", ("error", "red"), f" {e}"), highlight=False)
        if len(r.run.errors) > _SHOW:
            console.print(f"  … and {len(r.run.errors) - _SHOW} more error(s); --json or --html lists them all")
    for note in report.notes:
        console.print(note, markup=False, highlight=False)
    failed = [r.name for r in report.results if not r.ok]
    summary = f"{len(report.results)} case(s), baseline {report.baseline_path}"
    if failed:
        console.print(Text.assemble(("FAILED", "red"), f" {summary}: {', '.join(failed)}"), highlight=False)
    else:
        console.print(Text.assemble(("ok", "green"), f" {summary}"), highlight=False)


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
    findings = [finding_record(f) for f in run.outcome.findings]
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
