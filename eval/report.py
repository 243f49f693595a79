"""Three views of one eval: a table for the terminal, JSON for machines, a static HTML page.

The terminal table answers "did anything drop, and which item moved?"; the JSON carries every
item so a script can diff two runs; the HTML page puts each case's output and gold side by
side, increment by increment as the matching paired them, with misses and extras marked.
Everything that reaches the HTML page is escaped: briefings quote the inbox, and the inbox is
other people's text.
"""

from __future__ import annotations

import html
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from eval.metrics import METRICS, Matching
from eval.runner import CaseResult, EvalReport, MetricResult
from schemas.briefing import Briefing, Increment, KeyPoint

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
    status = "[green]ok[/]" if r.ok else "[red]FAILED[/]"
    t = Table(title=f"{c.name} · {c.topic} · {c.date} · {r.run.seconds:.1f}s · {status}", title_justify="left")
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
    for r in report.results:
        console.print(case_table(r))
        for e in r.run.errors[:_SHOW]:
            console.print(f"  [red]error[/] {escape(e)}", highlight=False)
        if len(r.run.errors) > _SHOW:
            console.print(f"  … and {len(r.run.errors) - _SHOW} more error(s); --json or --html lists them all")
    for note in report.notes:
        console.print(note, markup=False, highlight=False)
    failed = [r.name for r in report.results if not r.ok]
    summary = f"{len(report.results)} case(s), baseline {report.baseline_path}"
    if failed:
        console.print(f"[red]FAILED[/] {summary}: {', '.join(failed)}", highlight=False)
    else:
        console.print(f"[green]ok[/] {summary}", highlight=False)


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

_CSS = """
body{font:14px/1.5 system-ui,sans-serif;margin:2em auto;max-width:1400px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{border-top:2px solid #ccc;padding-top:.8em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ddd;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f4f4f4}.num{text-align:right;font-variant-numeric:tabular-nums}
.below,.noncompliant,.error{background:#fde2e2}.ok{color:#176b1c}.new{color:#8a6d00}
.side{width:100%;table-layout:fixed}.side td{width:50%}
.pair{background:#f3faf3}.missed{background:#fff1f0}.extra{background:#fff8e6}
.tag{display:inline-block;border-radius:3px;padding:0 6px;font-size:12px;margin-right:4px}
.tag.match{background:#d7f0d8}.tag.missed{background:#f7c6c2}.tag.extra{background:#fbe3a7}
.inc h4{margin:.2em 0}.meta{color:#666;font-size:12px}ul{margin:.2em 0 .2em 1.2em;padding:0}
.fact{background:#f7c6c2;border-radius:3px;padding:0 3px;margin-right:3px;font-size:12px}
pre{white-space:pre-wrap;background:#fafafa;border:1px solid #eee;padding:.6em;font-size:12px}
details{margin:.3em 0}summary{cursor:pointer}
"""


def _e(x: object) -> str:
    return html.escape(str(x), quote=True)


def write_html(report: EvalReport, path: Path) -> Path:
    """A self-contained page (no scripts, no external assets) for every case of the report."""
    body = [f"<h1>predigest eval — {'ok' if report.ok else 'FAILED'}</h1>"]
    body.append(f"<p class='meta'>baseline {_e(report.baseline_path)}</p>")
    for r in report.results:
        body.append(_case_html(r))
    page = (
        "<!doctype html><html lang='zh'><head><meta charset='utf-8'>"
        f"<title>predigest eval</title><style>{_CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path


def _case_html(r: CaseResult) -> str:
    c = r.run.case
    out = [f"<h2 id='{_e(c.name)}'>{_e(c.name)} <span class='{'ok' if r.ok else 'error'}'>{'ok' if r.ok else 'FAILED'}"]
    out.append("</span></h2>")
    out.append(f"<p>{_e(c.description)}</p><p class='meta'>{_e(c.workspace)} · {_e(c.topic)} · {_e(c.date)}</p>")
    if r.run.errors:
        out.append("<ul class='error'>" + "".join(f"<li>{_e(e)}</li>" for e in r.run.errors) + "</ul>")
    out.append(_metric_table(r))
    gold, output, card = r.run.gold, r.run.output, r.run.card
    if gold is not None and output is not None and card is not None:
        missed_facts = r.run.scores["key_fact_recall"].missed
        out.append("<h3>Increments: output ↔ gold</h3>")
        out.append(_side_by_side(gold, output, card.matching, missed_facts))
    for label, text in (("output Markdown", r.run.markdown), ("gold Markdown", _gold_text(r))):
        if text:
            out.append(f"<details><summary>{_e(label)}</summary><pre>{_e(text)}</pre></details>")
    return "".join(out)


def _gold_text(r: CaseResult) -> str:
    try:
        return r.run.case.gold_path.read_text(encoding="utf-8")
    except OSError:
        return ""


def _metric_table(r: CaseResult) -> str:
    rows = ["<table><tr><th>metric</th><th>score</th><th>baseline</th><th>Δ</th><th>status</th><th>items</th></tr>"]
    for m in r.metrics:
        s = r.run.scores.get(m.metric)
        delta = "—" if m.delta is None else f"{m.delta:+.3f}"
        items = ""
        if s is not None:
            lists = [
                ("missed", s.missed),
                ("extra", s.extra),
                ("matched", s.matched),
                ("newly missed", m.newly_missed),
                ("newly extra", m.newly_extra),
                ("fixed", m.fixed),
            ]
            inner = "".join(f"<b>{_e(k)}</b><ul>{''.join(f'<li>{_e(i)}</li>' for i in v)}</ul>" for k, v in lists if v)
            note = f"{_e(s.note)} · " if s.note else ""
            counts = f"{len(s.matched)} matched · {len(s.missed)} missed · {len(s.extra)} extra"
            items = f"<details><summary>{note}{counts}</summary>{inner}</details>" if inner else _e(s.note)
        rows.append(
            f"<tr class='{_e(m.status)}'><td title='{_e(METRICS.get(m.metric, ''))}'>{_e(m.metric)}</td>"
            f"<td class='num'>{_num(m.value)}</td><td class='num'>{_num(m.baseline)}</td>"
            f"<td class='num'>{_e(delta)}</td><td>{_e(m.status)}</td><td>{items}</td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _side_by_side(gold: Briefing, output: Briefing, m: Matching, missed_facts: tuple[str, ...]) -> str:
    rows = ["<table class='side'><tr><th>output</th><th>gold</th></tr>"]
    for p in m.pairs:
        g = gold.increments[p.gold]
        facts = [f.split(" · ", 1)[1] for f in missed_facts if f.startswith(f"增量 {g.number} · ")]
        tag = f"<span class='tag match'>matched: {_e(', '.join(p.reasons))}</span>"
        miss = "".join(f"<span class='fact'>{_e(f)}</span>" for f in facts)
        miss = f"<p class='meta'>gold facts not in the output: {miss}</p>" if miss else ""
        rows.append(
            f"<tr class='pair'><td>{tag}{_inc_html(output.increments[p.out])}</td>"
            f"<td>{tag}{_inc_html(g)}{miss}</td></tr>"
        )
    for i in m.missed:
        rows.append(
            "<tr class='missed'><td><span class='tag missed'>missed: no output increment</span></td>"
            f"<td><span class='tag missed'>missed</span>{_inc_html(gold.increments[i])}</td></tr>"
        )
    for i in m.extra:
        rows.append(
            f"<tr class='extra'><td><span class='tag extra'>extra</span>{_inc_html(output.increments[i])}</td>"
            "<td><span class='tag extra'>extra: not in the gold</span></td></tr>"
        )
    rows.append("</table>")
    return "".join(rows)


def _inc_html(inc: Increment) -> str:
    refs = "；".join(f"{s.ref} {s.section}".strip() for s in inc.sources)
    parts = [
        f"<div class='inc'><h4>增量 {inc.number}：{_e(inc.title)}（{'⭐' * inc.stars}）</h4>",
        f"<p class='meta'>来源：{_e(refs)}</p>",
    ]
    if inc.arxiv_line:
        parts.append(f"<p class='meta'>arXiv 号：{_e(inc.arxiv_line)}</p>")
    parts.append(_points(inc.key_points))
    cred = f"{inc.credibility.level}（{inc.credibility.reason}）" if inc.credibility.reason else inc.credibility.level
    parts.append(
        f"<p class='meta'>可信度：{_e(cred)}<br>关系：{_e(inc.relation)}<br>章节：{_e(inc.suggested_section)}</p>"
    )
    parts.append("</div>")
    return "".join(parts)


def _points(points: list[KeyPoint]) -> str:
    if not points:
        return ""
    items = "".join(f"<li>{_e(p.text)}{_points(p.children)}</li>" for p in points)
    return f"<ul>{items}</ul>"
