"""The run record and the page built from it: traced, self-contained, rebuilt from the JSON alone.

The browser checks (highlights inside the panel, no request, no console error) are in
test_page_browser.py; these check the record and the HTML as written.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from agent.core.errors import PredigestError
from agent.core.labels import ZH
from agent.pipeline import Settings, run
from agent.plan.anchors import AnchorRegistry
from agent.rules.claims import DocResult
from agent.rules.compose import Limits, compose
from agent.write.page import load_record, render_page, view
from agent.write.patch_apply import proposed_diff
from agent.write.trace import run_record
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import Claim, FileExtraction
from schemas.run import RUN_SCHEMA_VERSION, PatchLine, RunRecord
from tests.paths import ROOT, WORLD, predigest

DATE = dt.date(2026, 9, 22)


def demo_page(tmp: Path) -> tuple[RunRecord, Path]:
    """The demo evening replayed into `tmp`, its run record and its page (the browser tests use it too)."""
    s = Settings(
        workspace=WORLD,
        topic="inference",
        date=DATE,
        out=tmp / "b.md",
        backend="replay",
        no_cache=True,
        cassette_dir=ROOT / "cassettes" / "world",
    )
    report = run(s)
    json_path = report.written.json_path
    assert json_path is not None
    return load_record(json_path), view(json_path)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[RunRecord, Path]:
    return demo_page(tmp_path_factory.mktemp("page"))


def test_every_increment_rests_on_located_quotes(demo: tuple[RunRecord, Path]) -> None:
    rec, _ = demo
    spans = {s.id: s for s in rec.spans}
    texts = {d.path: d.text for d in rec.documents}
    assert len(rec.trace.increments) == len(rec.briefing.increments) == 6
    for it, inc in zip(rec.trace.increments, rec.briefing.increments, strict=True):
        assert it.claims, inc.title
        assert {c.doc for c in it.claims} <= {s.ref for s in inc.sources}
        for c in it.claims:
            assert c.spans
            for sid in c.spans:
                s = spans[sid]
                assert s.kind != "none", (inc.title, s.quote)
                # offsets index the embedded text: the highlighted passage is the quote (exact) or folds to it
                assert texts[s.doc][s.start : s.end] == s.quote or s.kind != "exact"
        n_points = len(inc.all_points())
        assert len(it.points) == n_points and all(p.spans for p in it.points), inc.title


def _paths(points: Sequence[KeyPoint], at: str = "") -> list[tuple[str, str]]:
    """(path, text) of every point, as the trace numbers them."""
    out = []
    for i, p in enumerate(points):
        here = f"{at}.{i}" if at else str(i)
        out += [(here, p.text), *_paths(p.children, here)]
    return out


def test_a_key_point_is_tied_to_the_quote_with_its_figures(demo: tuple[RunRecord, Path]) -> None:
    rec, _ = demo
    spans = {s.id: s for s in rec.spans}
    hook = next(it for it in rec.trace.increments if "HookPoint" in rec.briefing.increments[it.number - 1].title)
    inc = rec.briefing.increments[hook.number - 1]
    by_path = {p.path: p for p in hook.points}
    # the point stating "平均 3.6%", wherever the briefing places it (a path is "2", or "0.1" for a step)
    path = next(path for path, text in _paths(inc.key_points) if "3.6%" in text)
    traced = by_path[path]
    assert traced.by_figures and traced.spans
    assert all("3.6%" in spans[s].quote for s in traced.spans)
    assert len(traced.spans) < len(hook.claims[0].spans)


def test_to_verify_items_link_to_increments_or_say_carried(demo: tuple[RunRecord, Path]) -> None:
    rec, _ = demo
    traces = {v.number: v for v in rec.trace.verify}
    for v in rec.briefing.to_verify:
        t = traces[v.number]
        if v.carried_from:
            assert t.carried_from == v.carried_from and t.source.startswith("inbox/tom/")
        else:
            assert t.increments, v.title
            for n in t.increments:
                assert v.number in rec.trace.increments[n - 1].verify
    assert sum(1 for v in rec.briefing.to_verify if v.carried_from) == 2


def test_supplements_show_their_anchor_and_the_facts_they_add(demo: tuple[RunRecord, Path]) -> None:
    rec, _ = demo
    sups = [it for it in rec.trace.increments if it.supplement]
    assert len(sups) == 2  # SGLang v0.5.19 (9-20) and TGI (9-21), as the rules decided
    spans = {s.id: s for s in rec.spans}
    for it in sups:
        sup = it.supplement
        assert sup is not None and sup.when in ("9-20", "9-21") and sup.source.endswith("-inference-e1prep.md")
        assert sup.adds and sup.spans
        assert all(
            spans[s].role == "fact" and spans[s].quote.lower() in {a.lower() for a in sup.adds} for s in sup.spans
        )
        assert any(p.marks for p in it.points)
    sglang = next(it for it in sups if it.supplement and it.supplement.when == "9-20")
    assert "--enable-waterfill" in sglang.supplement.adds  # type: ignore[union-attr]


def test_sources_of_block_one_open_their_documents(demo: tuple[RunRecord, Path]) -> None:
    rec, _ = demo
    embedded = {d.path for d in rec.documents}
    links = {s.row: s.docs for s in rec.trace.sources}
    for i, row in enumerate(rec.briefing.sources):
        assert links[i], row
        assert set(links[i]) <= embedded
    cards = next(docs for i, docs in links.items() if rec.briefing.sources[i].directory.startswith("paper_cards"))
    assert len(cards) == 2


def test_removed_claims_carry_their_rule_and_quotes(demo: tuple[RunRecord, Path]) -> None:
    rec, _ = demo
    removed = [(rec.findings[r.finding], r) for r in rec.trace.removed]
    decisions = {f.decision for f, _ in removed}
    assert {"already covered", "secondary anchor"} <= decisions
    assert not decisions & {"increment", "supplement", "merged"}
    assert all(r.spans for f, r in removed if f.decision != "failed")


def test_page_is_self_contained_small_and_embeds_each_document_once(demo: tuple[RunRecord, Path]) -> None:
    rec, page = demo
    html = page.read_text(encoding="utf-8")
    assert page.stat().st_size < 2_000_000
    # nothing that would load: no external script, stylesheet, image, frame, font or import
    assert not re.search(r"<(script|link|img|iframe|source|video|audio|embed|object)\b[^>]*\b(src|href)=", html, re.I)
    assert not re.search(r"url\(|@import|@font-face", html, re.I)
    assert html.count('<section class="doc"') == len(rec.documents) == len({d.path for d in rec.documents})
    for d in rec.documents:
        lines = [ln for ln in d.text.splitlines() if len(ln) > 40 and not any(c in ln for c in "<>&\"'")]
        if lines:
            longest = max(lines, key=len)
            assert html.count(longest) <= 1 + sum(o.text.count(longest) for o in rec.documents if o is not d)
    # light and dark, and fonts that exist on the reader's machine
    assert "prefers-color-scheme: dark" in html and "Noto Sans CJK SC" in html and "PingFang SC" in html
    # links out: arXiv abstracts and URLs with their scheme added
    assert 'href="https://arxiv.org/abs/2605.11093v1"' in html
    assert 'href="https://github.com/sgl-project/sglang/releases"' in html


def test_view_rebuilds_the_same_page_from_the_json_alone(demo: tuple[RunRecord, Path], tmp_path: Path) -> None:
    rec, page = demo
    copy = tmp_path / "elsewhere" / "old-run.json"
    copy.parent.mkdir()
    copy.write_text(page.with_suffix(".json").read_text(encoding="utf-8"), encoding="utf-8")
    r = predigest("view", str(copy))
    assert r.returncode == 0, r.stderr
    assert copy.with_suffix(".html").read_text(encoding="utf-8") == page.read_text(encoding="utf-8")
    assert render_page(rec) == page.read_text(encoding="utf-8")


def test_the_e2_patch_is_shown_as_a_diff_whose_added_lines_link_to_their_increments(
    demo: tuple[RunRecord, Path],
) -> None:
    rec, page = demo
    html = page.read_text(encoding="utf-8")
    block = re.search(r'<section id="patch">.*?<pre class="diff">(.*?)</pre>', html, re.S)
    assert block is not None and '<a href="#patch">' in html
    # the diff `predigest patch` prints (its file headers aside), against the living document the run read
    assert [p.text for p in rec.patch] == proposed_diff(
        RunRecord.model_validate_json(page.with_suffix(".json").read_text("utf-8")), WORLD
    ).splitlines()[2:]
    added = re.findall(r'<span class="d-add">(.*?)</span>', block[1], re.S)
    assert len(added) == sum(p.text.startswith("+") for p in rec.patch) > 0
    linked = {int(m[1]) for a in added if (m := re.search(r'<a class="inc-link" href="#inc-(\d+)">', a))}
    # every increment is written into the living document, and each link lands on an increment of the page
    assert linked == {inc.number for inc in rec.briefing.increments}
    assert linked <= {int(n) for n in re.findall(r'<article class="inc" id="inc-(\d+)"', html)}
    # escaped like the rest of the page; no block when the record proposes no patch
    evil = rec.model_copy(update={"patch": [PatchLine(text="+<script>alert(1)</script>", increment=1)]})
    assert "+&lt;script&gt;alert(1)&lt;/script&gt;" in render_page(evil)
    bare = render_page(rec.model_copy(update={"patch": []}))
    assert 'id="patch"' not in bare and 'href="#patch"' not in bare


def _bad_records(tmp: Path) -> list[tuple[Path, str]]:
    v1 = json.dumps({"schema_version": 1, "briefing": {}})  # before the trace listed the secondary anchors
    cases = {
        "missing.json": (None, "cannot read"),
        "not-json.json": ("{oops", "cannot read"),
        "a-list.json": ("[1, 2]", "not a predigest run record"),
        "old.json": (json.dumps({"briefing": {}, "prompt": "p", "model": "m", "findings": []}), "schema before 1"),
        "future.json": (json.dumps({"schema_version": 99, "briefing": {}}), "schema 99"),
        "broken.json": (json.dumps({"schema_version": RUN_SCHEMA_VERSION, "briefing": {"topic": "x"}}), "not a valid"),
        "v1.json": (v1, f"schema 1, this one reads {RUN_SCHEMA_VERSION}"),
    }
    out = []
    for name, (body, msg) in cases.items():
        if body is not None:
            (tmp / name).write_text(body, encoding="utf-8")
        out.append((tmp / name, msg))
    return out


def test_view_says_what_is_wrong_with_a_bad_record(tmp_path: Path) -> None:
    for path, msg in _bad_records(tmp_path):
        with pytest.raises(PredigestError, match=msg):
            load_record(path)
        r = predigest("view", str(path))
        assert r.returncode == 2 and r.stderr.startswith("error: ") and "Traceback" not in r.stderr, path.name
        assert len(r.stderr.strip().splitlines()) == 1


def _doc(path: str, text: str) -> SourceDoc:
    return SourceDoc(path=path, kind="report", read=True, in_window=True, text=text, agent="jay")


def _claim(title: str, points: list[str], evidence: list[str], section: str) -> Claim:
    return Claim(
        title=title,
        stars=4,
        key_points=[KeyPoint(text=p) for p in points],
        evidence=evidence,
        section_ref=section,
        credibility="高",
        credibility_reason="test",
        relation="new",
        relation_note="新",
        suggested_section="§1.2 调度",
    )


def _extraction(*claims: Claim) -> FileExtraction:
    return FileExtraction(relevance="高", relevance_reason="r", held="h", claims=list(claims))


def test_figures_that_disagree_are_marked_on_both_sides() -> None:
    a = _doc("inbox/jay/a.md", "## 条目 1\nSGLang 在 H100 上吞吐 16,200 tok/s，vLLM 落后。\n")
    b = _doc("inbox/jay/b.md", "## 条目 3\n实测 SGLang H100 吞吐只有 14500 tok/s。\n")
    title = "SGLang H100 吞吐实测"
    results = [
        DocResult(a, _extraction(_claim(title, ["吞吐 16,200 tok/s"], ["H100 上吞吐 16,200 tok/s"], "§条目 1"))),
        DocResult(b, _extraction(_claim(title, ["吞吐 14500 tok/s"], ["H100 吞吐只有 14500 tok/s"], "§条目 3"))),
    ]
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(), sections=())
    composed = compose(results, reg, [], topic="inference", date=DATE, window="w", limits=Limits(min_increments=1))
    rec = run_record(composed, results, [a, b], prompt="p", model="m")
    (it,) = rec.trace.increments
    (conflict,) = it.conflicts
    v = rec.briefing.to_verify[conflict.verify - 1]
    assert "16200" in v.title and "14500" in v.title and rec.trace.verify[conflict.verify - 1].increments == [1]
    spans = {s.id: s for s in rec.spans}
    sides = {side.doc: [spans[s].quote for s in side.spans] for side in conflict.sides}
    assert sides == {"inbox/jay/a.md": ["16,200 tok/s"], "inbox/jay/b.md": ["14500 tok/s"]}
    # neither figure is stated in the increment: its point says the figure is disputed and where
    (inc,) = rec.briefing.increments
    points = [p.text for p in inc.all_points()]
    assert not any("16,200" in p or "14500" in p for p in points)
    assert any(f"待核实 {ZH.circled(conflict.verify)}" in p for p in points)
    html = render_page(rec)
    in_docs = re.findall(r'<mark class="[^"]*\bfigure\b[^"]*" data-s="[^"]*"', html)
    assert len(in_docs) == 2  # both figures, each in its own document
    assert f'href="#verify-{conflict.verify}"' in html


def test_everything_from_the_inbox_is_escaped() -> None:
    evil = '<script>alert(1)</script><img src="https://evil.example/x.png">'
    a = _doc("inbox/jay/a.md", f"## 条目 1\n{evil} 吞吐 3.6% 开销。\n")
    claim = _claim(f"标题 {evil}", [f"要点 {evil} 3.6%"], [f"{evil} 吞吐 3.6% 开销"], "§条目 1")
    results = [DocResult(a, _extraction(claim))]
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(), sections=())
    composed = compose(results, reg, [], topic="inference", date=DATE, window="w", limits=Limits(min_increments=1))
    html = render_page(run_record(composed, results, [a], prompt="p", model="m"))
    assert "<script>alert" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # the page's own


def test_an_installed_package_carries_its_templates(demo: tuple[RunRecord, Path], tmp_path: Path) -> None:
    """What `pip install .` copies (setuptools' build_py with our package data), imported from
    outside the checkout, renders the page: templates are read through importlib.resources."""
    src = tmp_path / "src"
    for name in ("agent", "schemas", "eval"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "cases"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    lib = tmp_path / "lib"
    build = [sys.executable, "-c", "from setuptools import setup; setup()", "-q", "build_py", "--build-lib", str(lib)]
    r = subprocess.run(build, cwd=src, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert {p.name for p in (lib / "agent" / "templates").iterdir()} >= {"briefing.html.j2", "page.css", "page.js"}
    _, page = demo
    script = (
        f"import sys; sys.path.insert(0, {str(lib)!r}); import agent, pathlib; from agent.write.page import view; "
        f"assert agent.__file__.startswith({str(lib)!r}), agent.__file__; "
        f"print(view(pathlib.Path({str(page.with_suffix('.json'))!r}), pathlib.Path({str(tmp_path / 'p.html')!r})))"
    )
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.html").read_text(encoding="utf-8") == page.read_text(encoding="utf-8")


def test_the_readme_page_commands_run_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "docs" / "page.md").read_text(encoding="utf-8")  # linked from the README
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    assert block is not None
    out = tmp_path / "out"
    page = out / "2026-09-22-inference-e1prep.html"
    for line in block.group(1).splitlines():
        args = [f"{out}/" if a == "out/" else a.replace("out/", f"{out}/") for a in shlex.split(line.split("#")[0])]
        r = predigest(*args[1:])
        assert r.returncode == 0, f"{line}\n{r.stderr}"
        assert f"wrote {page}" in r.stdout
    assert page.stat().st_size < 2_000_000


def test_a_partial_evening_says_so_on_the_page() -> None:
    a = _doc("inbox/jay/a.md", "## 条目 1\n吞吐 3.6% 开销。\n")
    results = [DocResult(a, _extraction(_claim("标题", ["3.6%"], ["吞吐 3.6% 开销"], "§条目 1")))]
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(), sections=())
    composed = compose(results, reg, [], topic="inference", date=DATE, window="w", limits=Limits(min_increments=1))
    rec = run_record(composed, results, [a], prompt="p", model="m", unread=[("inbox/jay/b.md", "timeout")])
    assert rec.partial and rec.unread[0].doc == "inbox/jay/b.md"
    html = render_page(RunRecord.model_validate_json(rec.model_dump_json()))
    assert '<p class="partial"' in html and "inbox/jay/b.md (timeout)" in html
