"""The eval page in headless Chromium, as a prompt engineer reads it after one row failed: the
matrix first (failing row first, every cell a link to an id on the page), each row's "why
missed" list before its increments, no sideways scrolling at 420 px, and a first page that stays
small (each row's briefings are on the row's own page).

Each page is opened top-level, as a reader opens it, in a viewport 420 px wide (headless
Chromium's window is never narrower than 500 px, so the viewport is set through DevTools), and
read as the browser built it, every <details> opened.

The same eval's terminal report is read here too, without a browser: one failing eval serves both.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from eval.metrics import METRICS
from eval.overview import COLUMNS
from tests.paths import predigest, some_cases
from tests.test_page_browser import BROWSER_SERVICES, _chromium, browse_pages

CASE = "2026-09-22-inference"
RELAYED = f"{CASE}@world-relayed"
LIMIT = 400_000  # bytes: a row's own page
ROW_LIMIT = 17_000  # bytes of the first page a row adds: today's 24 rows stay under LIMIT

# What a prompt engineer's reading depends on, read from the page as the browser built it, every
# <details> opened.
PROBE = """(function (d, w) {
  d.querySelectorAll("details").forEach(function (x) { x.open = true; });
  var links = Array.prototype.map.call(d.querySelectorAll("a[href^='#']"), function (a) {
    return {href: a.getAttribute("href"), found: !!d.getElementById(a.getAttribute("href").slice(1))};
  });
  var order = Array.prototype.map.call(d.querySelectorAll("section.case h3, section.case details > summary"),
    function (e) { return e.textContent.slice(0, 20); });
  return {
    inner: w.innerWidth, scroll: d.documentElement.scrollWidth, links: links, order: order,
    matrix: Array.prototype.map.call(d.querySelectorAll("table.matrix tbody tr"), function (tr) {
      return {cls: tr.className, status: tr.cells[0].textContent,
              href: tr.cells[1].querySelector("a").getAttribute("href"), cells: tr.querySelectorAll("td a").length};
    }),
    sections: Array.prototype.map.call(d.querySelectorAll("section.case"), function (s) { return s.id; }),
    items: d.querySelectorAll("td.items li, li.missed-reason").length,
    items_with_id: d.querySelectorAll("td.items li[id], li.missed-reason[id]").length,
    metrics: d.querySelectorAll("table.metrics tbody tr").length,
    metrics_with_id: d.querySelectorAll("table.metrics tbody tr[id]").length
  };
})(document, window)"""


CASES = (CASE, "2026-10-15-retrieval")  # a few rows, one of them failing, are enough to read the page by


def _read(chromium: str, folder: Path, pages: list[str], tmp: Path) -> dict:
    """Every page opened top-level in a viewport 420 px wide, one browser: what the probe saw in each."""
    seen, _, requests = browse_pages(chromium, [folder / p for p in pages], tmp / "profile", PROBE, width=420)
    assert [x for x in requests if x and not BROWSER_SERVICES.match(x)] == []  # "": a connection that asked nothing
    return dict(zip(pages, seen, strict=True))


@pytest.fixture(scope="module")
def failing(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The committed suite with one row held to a score it cannot meet, run once with its page
    written: its terminal report and its page are both read here. No test may change the eval's
    inputs there."""
    tmp = tmp_path_factory.mktemp("evalpage")
    cases, baseline = some_cases(tmp, *CASES)
    committed = json.loads(baseline.read_text(encoding="utf-8"))
    committed["cases"][RELAYED]["increment_f1"]["score"] = 0.95
    baseline.write_text(json.dumps(committed, ensure_ascii=False), encoding="utf-8")
    page = tmp / "eval.html"
    piped = {**os.environ, "COLUMNS": ""}  # whole rows, every column
    r = predigest("eval", "--cases", str(cases), "--baseline", str(baseline), "--html", str(page), env=piped)
    return {"tmp": tmp, "cases": cases, "baseline": baseline, "committed": committed, "page": page, "r": r}


@pytest.fixture(scope="module")
def pages(failing: dict[str, Any]) -> dict[str, Any]:
    """Every page of the failing eval, as the browser built it."""
    tmp, page, r = failing["tmp"], failing["page"], failing["r"]
    assert r.returncode == 1 and page.is_file(), r.stdout + r.stderr
    rows = sorted((tmp / "eval-rows").glob("row-*.html"))
    seen = _read(_chromium(), tmp, ["eval.html", *(f"eval-rows/{p.name}" for p in rows)], tmp)
    n = len(failing["committed"]["cases"])
    return {"page": page, "rows": rows, "main": seen.pop("eval.html"), "row": seen, "n": n}


def test_the_matrix_comes_first_failing_row_first_and_every_link_lands(pages: dict) -> None:
    main = pages["main"]
    matrix = main["matrix"]
    # the failing row replays a real model's answers to the earlier prompt, so it is marked stale too
    assert len(matrix) == pages["n"] and matrix[0]["status"] == "FAILED stale" and matrix[0]["cls"] == "failed stale"
    assert matrix[0]["href"] == "#row-2026-09-22-inference-world-relayed"
    assert all(not row["status"].startswith("FAILED") for row in matrix[1:])
    assert all(row["cells"] == 1 + len(COLUMNS) for row in matrix)  # the case, and each headline score, link
    assert main["sections"][0] == "row-2026-09-22-inference-world-relayed"  # the page's order is the matrix's
    assert main["links"] and all(link["found"] for link in main["links"]), [x for x in main["links"] if not x["found"]]
    # ids on every row, metric and item, so a link can point at one
    assert main["metrics"] == main["metrics_with_id"] == pages["n"] * len(METRICS)
    assert main["items"] == main["items_with_id"] > 0


def test_each_rows_why_missed_comes_before_its_increments(pages: dict) -> None:
    relayed = pages["row"]["eval-rows/row-2026-09-22-inference-world-relayed.html"]
    assert relayed["order"][0].startswith("Why missed"), relayed["order"]
    assert relayed["order"][1].startswith("Increments: output"), relayed["order"]
    assert all(link["found"] for page in pages["row"].values() for link in page["links"])


def test_readable_at_420_px_without_sideways_scrolling(pages: dict) -> None:
    for name, seen in [("eval.html", pages["main"]), *pages["row"].items()]:
        assert seen["inner"] == 420, name
        assert seen["scroll"] <= 420, (name, seen["scroll"])


def test_the_first_page_stays_small_and_loads_nothing(pages: dict) -> None:
    page = pages["page"]
    assert page.stat().st_size < ROW_LIMIT * pages["n"], page.stat().st_size
    assert all(p.stat().st_size < LIMIT for p in pages["rows"])
    assert len(pages["rows"]) == pages["n"]
    for p in [page, *pages["rows"]]:
        text = p.read_text(encoding="utf-8")
        assert "<script" not in text and "default-src 'none'" in text, p.name


def test_the_overview_comes_first_failing_rows_first_and_the_last_line_counts_rows(failing: dict) -> None:
    """One row below its baseline: the overview lists it first and marks it, only that row is
    printed in full, and the last line counts rows. Piped, every row of the overview is one line.
    No browser: the terminal report of the eval the pages come from."""
    cases, baseline, committed, r = failing["cases"], failing["baseline"], failing["committed"], failing["r"]
    n = len(committed["cases"])  # one baseline entry per row
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"{n} rows against {baseline}, failing rows first"
    assert lines[1].split()[:3] == ["status", "case", "answers"] and "inc F1" in lines[1]
    table = lines[3 : 3 + n]
    assert table[0].split()[0] == "FAILED" and f" {CASE} " in table[0] and "real model (relayed)" in table[0]
    assert "▼0.027" in table[0]
    # every other row holds its baseline (a real model's answers to the earlier prompt replay marked stale)
    assert all(row.split()[0] in ("ok", "stale") for row in table[1:]), table
    assert lines[3 + n] == ""  # the overview ends: each row was one line
    details = [ln for ln in lines if ln.startswith("metric ") and "baseline" in ln]
    assert len(details) == 1 and any(ln.startswith(RELAYED + " · ") and "FAILED" in ln for ln in lines)
    assert lines[-1] == f"FAILED 1 of {n} rows: {RELAYED}"
    # the failing row's case alone is enough for the other two forms
    mine = sum(1 for name in committed["cases"] if name.split(" · ")[0].split("@")[0] == CASE)
    verbose = predigest("eval", "--cases", str(cases), "--baseline", str(baseline), "--verbose", "--case", CASE)
    assert len([ln for ln in verbose.stdout.splitlines() if ln.startswith("metric ") and "baseline" in ln]) == mine
    md = predigest("eval", "--cases", str(cases), "--baseline", str(baseline), "--markdown", "--case", CASE)
    assert md.returncode == 1
    rows = [ln for ln in md.stdout.splitlines() if ln.startswith("| ")]
    assert rows[0].startswith("| status | case | answers | increment F1 |") and len(rows) == mine + 1
    assert rows[1].startswith(
        f"| FAILED stale | {CASE} | real model (relayed) · composed by reference answers · stale (extract@2)"
        " | 0.923 ▼0.027 |"
    )


# Every word and number of the matrix, each a range: one broken across lines has two boxes.
BROKEN = """(function (d, w) {
  var broken = [];
  d.querySelectorAll("table.matrix th, table.matrix td").forEach(function (cell) {
    var walker = d.createTreeWalker(cell, NodeFilter.SHOW_TEXT), node, m;
    while ((node = walker.nextNode())) {
      var words = /\\S+/g;
      while ((m = words.exec(node.data))) {
        var r = d.createRange();
        r.setStart(node, m.index);
        r.setEnd(node, m.index + m[0].length);
        if (r.getClientRects().length > 1) { broken.push(m[0]); }
      }
    }
  });
  return {inner: w.innerWidth, scroll: d.documentElement.scrollWidth, broken: broken,
          cells: d.querySelectorAll("table.matrix td").length};
})(document, window)"""


def test_the_matrix_reads_at_1280_px_without_a_broken_word(failing: dict[str, Any]) -> None:
    """At a laptop's width the matrix of every row fits, and no word or number in it (a status, a
    score, a header) is broken across lines."""
    page = failing["page"]
    (seen,), _, _ = browse_pages(_chromium(), [page], failing["tmp"] / "profile-1280", BROKEN, width=1280)
    assert seen["inner"] == 1280 and seen["cells"] > 50, seen
    assert seen["broken"] == [] and seen["scroll"] <= 1280, seen
