"""The eval page, read top down, and one page per row beside it; each self-contained.

`eval.html`: a matrix of every row (failing first) linking to each row and metric, then per row
its scores and why each missed gold item was lost. `eval-rows/<row>.html`: the row in full
(increments beside the gold's, 三 / 四 / 五, every item, each document's answers, both Markdown
texts), so the first page grows by a row's scores, not its briefings. Every row, metric and item
has an id a link can point at. Autoescape is on: briefings quote other people's text.
"""

from __future__ import annotations

import re
from pathlib import Path

from agent.core.labels import ZH
from agent.core.text import facts
from agent.rules.claims import with_refs
from agent.runlog import claim_fate
from agent.write.templating import render
from agent.write.trace import finding_record
from eval import overview
from eval.explain import fates
from eval.metrics import METRICS, Matching, key_facts, stated_facts
from eval.runner import CaseResult, CaseRun, EvalReport
from eval.span_metrics import SPAN_METRICS
from schemas.briefing import Briefing, VerifyItem

# metrics whose items are another metric's: their lists are shown under that one
_SHARED = {"increment_precision": "increment_recall", "increment_f1": "increment_recall"}
_SHARED |= {"to_verify_precision": "to_verify_recall"}


def row_id(name: str) -> str:
    """An id for a row: '2026-09-22-inference@world-relayed' -> 'row-2026-09-22-inference-world-relayed'."""
    return "row-" + re.sub(r"[^0-9A-Za-z]+", "-", name).strip("-")


def rows_folder(path: Path) -> Path:
    """Where the row pages of the page `path` go: `eval.html` -> `eval-rows/`."""
    return path.with_name(path.stem + "-rows")


def write_html(report: EvalReport, path: Path) -> Path:
    """The page (agent/templates/eval_report.html.j2) and one page per row beside it
    (eval_row.html.j2, in `rows_folder(path)`), failing rows first."""
    path = Path(path)
    rows = overview.ordered(report)
    folder = rows_folder(path)
    views = [_case_view(r, f"{folder.name}/{row_id(r.name)}.html", f"../{path.name}") for r in rows]
    folder.mkdir(parents=True, exist_ok=True)
    for view in views:
        text = render("eval_row.html.j2", c=view, num=overview.num)
        (folder / f"{view['id']}.html").write_text(text, encoding="utf-8")
    page = render(
        "eval_report.html.j2",
        report=report,
        cases=views,
        matrix=_matrix(rows, overview.columns(report)),
        headers=[(short, header) for _, header, short in overview.columns(report)],
        num=overview.num,
    )
    path.write_text(page, encoding="utf-8")
    return path


def _matrix(rows: list[CaseResult], columns: list[tuple[str, str, str]]) -> list[dict[str, object]]:
    """The summary at the top: per row its status and headline scores, each a link."""
    out = []
    for r in rows:
        by_metric = {m.metric: m for m in r.metrics}
        rid = row_id(r.name)
        cells = [
            {"text": overview.cell(by_metric.get(k)).partition(" ")[0],
             "delta": overview.cell(by_metric.get(k)).partition(" ")[2], "href": f"#{rid}-m-{k}", "label": header,
             "failed": bool(by_metric.get(k) and by_metric[k].failed)}
            for k, header, _ in columns
        ]  # fmt: skip
        out.append(
            {"id": rid, "status": overview.status(r), "case": r.run.case.label, "answers": r.run.answers,
             "name": r.name, "cells": cells}
        )  # fmt: skip
    return out


def _metric_views(r: CaseResult, rid: str) -> list[dict[str, object]]:
    out = []
    for m in r.metrics:
        s = r.run.scores.get(m.metric)
        lists: list[tuple[str, str, tuple[str, ...]]] = []
        if s is not None and m.metric not in _SHARED:
            named = (
                ("missed", s.missed),
                ("extra", s.extra),
                ("newly missed", m.newly_missed),
                ("newly extra", m.newly_extra),
                ("fixed", m.fixed),
                ("matched", s.matched),
            )
            lists = [(label, f"{rid}-{m.metric}-{label.replace(' ', '-')}", items) for label, items in named if items]
        out.append(
            {
                "id": f"{rid}-m-{m.metric}",
                "metric": m,
                "score": s,
                "lists": lists,
                "shared": _SHARED.get(m.metric, ""),
                "shared_id": f"{rid}-m-{_SHARED.get(m.metric, '')}",
                "delta": overview.signed(m.delta),
                "description": METRICS.get(m.metric) or SPAN_METRICS.get(m.metric, ""),
            }
        )
    return out


def _case_view(r: CaseResult, page: str, back: str) -> dict[str, object]:
    """What the templates show of one row; facts only, no markup. `page`: the row's own page,
    relative to the first; `back`: the first page, relative to the row's."""
    rid = row_id(r.name)
    side: list[dict[str, object]] = []
    gold, output, card = r.run.gold, r.run.output, r.run.card
    if gold is not None and output is not None and card is not None:
        side = _side_by_side(gold, output, card.matching)
    return {
        "id": rid,
        "page": page,
        "back": f"{back}#{rid}",
        "result": r,
        "status": overview.status(r),
        "metrics": _metric_views(r, rid),
        "side": side,
        "gold_text": _gold_text(r),
        "missed": [f for f in fates(r.run) if not f.matched],
        "blocks": _blocks(gold, output),
        "documents": _documents(r.run),
    }


def _gold_text(r: CaseResult) -> str:
    try:
        return r.run.case.gold_path.read_text(encoding="utf-8")
    except OSError:
        return ""


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
        return [f"{n.source}：{n.note}" if n.note else n.source for n in b.no_increment]

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
        for ref, c in with_refs(res.request.doc_path, res.request.chunk, res.extraction.claims):
            fate = claim_fate(findings, str(ref))
            d["claims"].append({"claim": c, "fate": fate})  # type: ignore[attr-defined]
    return list(docs.values())


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
