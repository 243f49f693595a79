"""The E2 hand-off: the patch a briefing proposes for its living document, applied safely, read
back by the next evening. The demo evening (examples/world, 2026-09-22, replayed) is run once into
a copy of the workspace; each test patches its own copy of that copy."""

from __future__ import annotations

import datetime as dt
import difflib
import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.pipeline import Settings, run
from agent.write.living import LivingDocError, learn_style, text_hash
from agent.write.patch import propose
from agent.write.patch_apply import HISTORY
from schemas.briefing import KeyPoint
from schemas.run import FindingRecord, RunRecord
from tests.paths import ROOT, WORLD, copy_world, predigest

DATE = dt.date(2026, 9, 22)
LIVING = "living/inference.md"
STEM = "2026-09-22-inference-e1prep"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo evening run once, replayed, without cache, briefing and patch outside the workspace.
    The rules assemble it (no composing call): these tests name the lines the floor writes, so they
    weigh how a patch places lines, not what an editor's answer says (tests/test_compose.py does)."""
    base = tmp_path_factory.mktemp("demo")
    ws = copy_world(base / "world")
    s = Settings(
        workspace=ws,
        topic="inference",
        date=DATE,
        out=base / "out",
        backend="replay",
        no_cache=True,
        llm={"compose": False},
    )
    run(s, patch=True)
    return base


@pytest.fixture
def world(demo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A workspace and the demo's run record made in it: (workspace, record path)."""
    ws = tmp_path / "world"
    shutil.copytree(demo / "world", ws, symlinks=True)
    record = json.loads((demo / "out" / f"{STEM}.json").read_text(encoding="utf-8"))
    record["living"]["workspace"] = str(ws.resolve())
    path = tmp_path / f"{STEM}.json"
    path.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return ws, path


def _record(demo: Path) -> RunRecord:
    return RunRecord.model_validate_json((demo / "out" / f"{STEM}.json").read_text(encoding="utf-8"))


def _living(demo: Path) -> str:
    return (demo / "world" / LIVING).read_text(encoding="utf-8")


def _under(text: str, line_part: str) -> str:
    """The nearest heading above the first line holding `line_part`."""
    lines = text.splitlines()
    i = next(i for i, ln in enumerate(lines) if line_part in ln)
    return next(ln for ln in reversed(lines[:i]) if ln.startswith("#"))


# --- the proposal of the demo evening ---------------------------------------------------------------


def test_each_increment_becomes_a_line_under_its_section(demo: Path) -> None:
    p = propose(_record(demo), _living(demo), LIVING)
    new = p.new
    assert _under(new, "**NVIDIA Dynamo 1.0**（github.com/ai-dynamo/dynamo") == "### 分离架构（PD / EPD）"
    assert _under(new, "**vLLM FP8 KV-Cache 验证报告**") == "### 压缩"
    hookpoint = next(ln for ln in new.splitlines() if "（arXiv 2605.11093v1）" in ln)
    assert hookpoint.startswith("- **HookPoint: Enabling Performant")
    assert "平均 3.6%" in hookpoint and hookpoint.endswith("待核实）")  # its to-verify item is marked on it
    assert _under(new, "（arXiv 2605.11093v1）") == "## §1.4 推理可靠性与可观测性"
    assert _under(new, "（arXiv 2506.09713v2）") == "## §1.4 推理可靠性与可观测性"
    assert [a.increment for a in p.changes if a.kind == "increment"] == [3, 4, 5, 6]


def test_a_proposed_section_is_created_in_its_place(demo: Path) -> None:
    p = propose(_record(demo), _living(demo), LIVING)
    heads = [ln for ln in p.new.splitlines() if ln.startswith("## ")]
    assert heads[2:5] == ["## §1.3 KV Cache", "## §1.4 推理可靠性与可观测性", "## 附 A：arXiv 锚点索引"]
    assert "## §1.4 推理可靠性与可观测性\n\n- **HookPoint" in p.new  # a § heading is followed by a blank line here
    assert any("§1.4 推理可靠性与可观测性 is not a section" in f for f in p.findings)


def test_a_supplement_goes_under_its_anchor_line(demo: Path) -> None:
    lines = propose(_record(demo), _living(demo), LIVING).new.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("- **SGLang v0.5.19 发布**"))
    assert lines[i + 1].startswith("  - SGLang v0.5.19 破坏性 Flag Rename")
    assert "--enable-deepep-waterfill → --enable-waterfill" in lines[i + 1]
    assert lines[i + 1].endswith("（9-22 inference e1prep 补充）")
    j = next(i for i, ln in enumerate(lines) if ln.startswith("- **TGI 已死"))
    assert lines[j + 4] == "  （9-21 inference e1prep）"  # the anchor's own block stays whole
    assert lines[j + 5].startswith("  - TGI 正式死亡 → vLLM/SGLang 迁移三坑实战指南：")
    assert sum("SGLang v0.5.19 破坏性" in ln for ln in lines) == 1


def test_secondary_anchors_and_new_arxiv_ids(demo: Path) -> None:
    new = propose(_record(demo), _living(demo), LIVING).new
    short = (
        "- **H100 Prefix Reuse and TTFT: vLLM vs TRT-LLM**（arXiv 2609.19657）：5–6.5× TTFT 加速。"
        "（9-22 inference e1prep，次要锚点）"
    )
    assert short in new.splitlines()
    assert _under(new, "（arXiv 2607.02574）") == "### 综述"
    rows = [ln for ln in new.splitlines() if ln.endswith("| 9-22 |")]
    assert rows[0] == "| 2605.11093v1 | HookPoint | §1.4 | 9-22 |"
    assert len(rows) == 5


def test_secondary_anchors_are_read_from_the_trace_not_from_the_wording_of_six(demo: Path) -> None:
    """The rows of 六 reworded (as an editor or another language would): the patch places the
    same secondary anchors, since the record's trace names each one, its section and its IDs."""
    record = _record(demo)
    b = record.briefing
    reworded = [p.model_copy(update={"content": f"（改写）{i}"}) for i, p in enumerate(b.priorities)]
    changed = record.model_copy(update={"briefing": b.model_copy(update={"priorities": reworded})})
    assert len(record.trace.secondary) >= 1 and all(a.row >= len(b.increments) for a in record.trace.secondary)
    assert propose(changed, _living(demo), LIVING).new == propose(record, _living(demo), LIVING).new


def test_only_the_update_line_changes_and_it_gets_the_date(demo: Path) -> None:
    old = _living(demo)
    p = propose(_record(demo), old, LIVING)
    ops = difflib.SequenceMatcher(a=old.splitlines(), b=p.new.splitlines(), autojunk=False).get_opcodes()
    replaced = [(old.splitlines()[i1:i2], p.new.splitlines()[j1:j2]) for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    changed = [(a, b) for a, b in replaced if a]
    assert changed == [
        (
            ["> 最近一次 E2 更新：2026-09-21 23:06（依据 9-21 inference e1prep）；下一次：2026-09-22 晚。"],
            ["> 最近一次 E2 更新：2026-09-22（依据 9-22 inference e1prep）；下一次：2026-09-23 晚。"],
        )
    ]


def test_proposing_again_changes_nothing(demo: Path) -> None:
    once = propose(_record(demo), _living(demo), LIVING)
    twice = propose(_record(demo), once.new, LIVING)
    assert once.changed and not twice.changed and twice.diff() == ""


def test_line_ends_and_byte_order_mark_are_kept(demo: Path) -> None:
    crlf = "\ufeff" + _living(demo).replace("\n", "\r\n")
    p = propose(_record(demo), crlf, LIVING)
    assert p.new.startswith("\ufeff# inference 活文档\r\n")
    assert "\n" not in p.new.replace("\r\n", "")
    assert p.new.replace("\r\n", "\n").removeprefix("\ufeff") == propose(_record(demo), _living(demo), LIVING).new


def test_a_rerun_amends_tonights_line_instead_of_adding_one(demo: Path) -> None:
    """The same evening run again with other words: its lines replace tonight's, never doubled."""
    record = _record(demo)
    applied = propose(record, _living(demo), LIVING).new
    incs = record.briefing.increments
    reworded = [
        inc.model_copy(update={"key_points": [inc.key_points[0].model_copy(update={"text": f"改写 {inc.number}"})]})
        for inc in incs
    ]
    again = record.model_copy(
        update={"briefing": record.briefing.model_copy(update={"increments": reworded})}, deep=True
    )
    new = propose(again, applied, LIVING).new
    assert sum(ln.startswith("- **NVIDIA Dynamo 1.0**") for ln in new.splitlines()) == 1
    assert "改写 3" in new and len(new.splitlines()) == len(applied.splitlines())


def test_a_settled_item_clears_its_mark(demo: Path) -> None:
    record = _record(demo)
    settled = FindingRecord(
        rule="resolve",
        subject="colibri GLM-5.2 支持范围和实测性能",
        doc="inbox/jay/x.md",
        decision="resolved",
        detail="README 给出全部硬件实测",
    )
    record = record.model_copy(update={"findings": [*record.findings, settled]})
    new = propose(record, _living(demo), LIVING).new
    colibri = next(ln for ln in new.splitlines() if ln.startswith("- **colibri**"))
    assert colibri.endswith("（9-21 inference e1prep；GLM-5.2 支持范围与实测性能 9-22 已核实）")
    assert "- colibri GLM-5.2 支持范围和实测性能（9-21 起，低风险）" not in new  # gone from 附 B's open list
    assert "- NVIDIA 收购 Hugging Face $12.93B 实际进展（9-21 起，低风险；影响生态判断，不影响技术判断）" in new


def test_the_diff_applies_with_git(demo: Path, tmp_path: Path) -> None:
    ws = tmp_path / "w"
    shutil.copytree(demo / "world", ws)
    patch = (demo / "out" / f"{STEM}.patch").read_text(encoding="utf-8")
    assert patch == propose(_record(demo), _living(demo), LIVING).diff()  # run --patch wrote the same diff
    git = shutil.which("git")
    if git is None:
        pytest.skip("git is not installed")
    subprocess.run([git, "apply", "-"], input=patch, text=True, cwd=ws, check=True)
    assert (ws / LIVING).read_text(encoding="utf-8") == propose(_record(demo), _living(demo), LIVING).new


# --- style learnt from the document --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "expect"),
    [
        (
            ["## §1 A", "", "- **X**：a。（9-20 t e1prep）", "  - Y：b。（9-21 t e1prep 续立）"],
            ("-", True, "：", "续立"),
        ),
        (["## §1 A", "* X: a (9-20 t e1prep)", "* Z: b (9-21 t e1prep)"], ("*", False, ":", "补充")),
        (["## §1 A"], ("-", True, "：", "补充")),  # no line to learn from: the seed's style
    ],
    ids=["seed-like", "plain-ascii", "empty"],
)
def test_style_is_learnt_from_the_lines(lines: list[str], expect: tuple[str, bool, str, str]) -> None:
    s = learn_style([ln + "\n" for ln in lines], "t")
    assert (s.bullet, s.bold, s.colon, s.sub_suffix) == expect


UPDATES = [
    ("dated", "> 最后更新：2026-09-21\n", "> 最后更新：2026-09-22（E2）\n"),
    ("with-time-and-next", "> E2 更新：2026-09-21 23:06；下一次：9-22\n", "> E2 更新：2026-09-22；下一次：9-23\n"),
    ("none", "> 主题：t\n", "> 主题：t\n> 最后更新：2026-09-22（E2，依据 9-22 inference e1prep）\n"),
    ("later", "> 最后更新：2026-09-25（E2）\n", "> 最后更新：2026-09-25（E2）\n"),
]


@pytest.mark.parametrize(("name", "header", "expect"), UPDATES, ids=[u[0] for u in UPDATES])
def test_the_update_line_gets_the_date_and_e2(name: str, header: str, expect: str, demo: Path) -> None:
    doc = f"# t\n\n{header}\n## §1.3 KV Cache\n\n- **甲**：乙。（9-20 inference e1prep）\n"
    new = propose(_only(_record(demo), 3), doc, LIVING).new
    assert new.startswith(f"# t\n\n{expect}\n## §1.3 KV Cache\n"), new


# --- bad input ----------------------------------------------------------------------------------------


def _only(record: RunRecord, number: int, **update: str) -> RunRecord:
    """The record with one increment, changed as given, and no secondary anchors or settled items."""
    inc = next(i for i in record.briefing.increments if i.number == number).model_copy(update=update)
    b = record.briefing.model_copy(update={"increments": [inc], "priorities": [], "arxiv_rows": []})
    trace = record.trace.model_copy(update={"secondary": []})
    return record.model_copy(update={"briefing": b, "findings": [], "trace": trace})


OTHER_SECTIONS = "# t\n\n> 最后更新：2026-09-21\n\n## §2.1 别的\n\n- **甲**：乙。（9-20 inference e1prep）\n"


@dataclass(frozen=True)
class Bad:
    id: str
    living: Callable[[str], bytes]
    record: Callable[[RunRecord], RunRecord]
    error: str = ""
    finding: str = ""
    check: Callable[[str], bool] = lambda new: True


BAD = [
    Bad(
        "no-near-section",
        lambda _: OTHER_SECTIONS.encode(),
        lambda r: _only(r, 3),
        finding="§1.3 KV Cache is not a section of living/inference.md: created before §2.1 别的",
        check=lambda new: new.index("## §1.3 KV Cache\n\n- **NVIDIA Dynamo 1.0**") < new.index("## §2.1"),
    ),
    Bad(
        "unnumbered-section",
        lambda _: OTHER_SECTIONS.encode(),
        lambda r: _only(r, 3, suggested_section="（inference 活文档尚无 § 章节，建议新增）"),
        finding="no section of living/inference.md is near",
        check=lambda new: new.splitlines()[-1].startswith("- **NVIDIA Dynamo 1.0**"),
    ),
    Bad("not-utf8", lambda t: t.encode("gb18030"), lambda r: r, error="living/inference.md is not UTF-8 text"),
    Bad(
        "no-headings",
        lambda _: "# t\n\n- **甲**：乙。\n".encode(),
        lambda r: r,
        error="living/inference.md has no section headings",
    ),
    Bad(
        "duplicate-line",
        lambda t: t.replace("## 附 A", f"{_DYNAMO}\n\n## 附 A").encode(),
        lambda r: _only(r, 3),
        check=lambda new: new.count(_DYNAMO) == 1,
    ),
]
_DYNAMO = "- **NVIDIA Dynamo 1.0**（github.com/ai-dynamo/dynamo；Dev.to 2026-09-18）：x。（9-21 inference e1prep）"


@pytest.mark.parametrize("row", BAD, ids=[r.id for r in BAD])
def test_bad_input(row: Bad, demo: Path) -> None:
    from agent.write.living import read_living

    data = row.living(_living(demo))
    if row.error:
        with pytest.raises(LivingDocError) as e:
            propose(row.record(_record(demo)), read_living(data, LIVING), LIVING)
        assert row.error in str(e.value) and "\n" not in str(e.value)
        return
    p = propose(row.record(_record(demo)), read_living(data, LIVING), LIVING)
    assert not row.finding or any(row.finding in f for f in p.findings), p.findings
    assert row.check(p.new), p.diff()


# --- apply ----------------------------------------------------------------------------------------------


def test_apply_writes_keeps_the_previous_version_and_twice_changes_nothing(world: tuple[Path, Path]) -> None:
    ws, record = world
    before = (ws / LIVING).read_bytes()
    r = predigest("patch", str(record), "--apply")
    assert r.returncode == 0, r.stderr
    history = list((ws / "living" / HISTORY).glob("inference.*.md"))
    assert len(history) == 1 and history[0].read_bytes() == before
    after = (ws / LIVING).read_text(encoding="utf-8")
    assert "## §1.4 推理可靠性与可观测性" in after
    again = predigest("patch", str(record), "--apply")
    assert again.returncode == 0 and "nothing to change" in again.stdout
    assert (ws / LIVING).read_text(encoding="utf-8") == after
    assert len(list((ws / "living" / HISTORY).iterdir())) == 1


def _edit_living(ws: Path, record: Path) -> list[str]:
    (ws / LIVING).write_text((ws / LIVING).read_text(encoding="utf-8") + "- **手改**：x。\n", encoding="utf-8")
    return []


def _mark_partial(ws: Path, record: Path) -> list[str]:
    data = json.loads(record.read_text(encoding="utf-8"))
    data.update(partial=True, unread=[{"doc": "inbox/jay/a.md", "why": "timeout"}])
    record.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return []


def _forget_living(ws: Path, record: Path) -> list[str]:
    data = json.loads(record.read_text(encoding="utf-8"))
    data["living"] = None
    record.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return []


def _not_utf8(ws: Path, record: Path) -> list[str]:
    (ws / LIVING).write_bytes((ws / LIVING).read_text(encoding="utf-8").encode("gb18030"))
    return []


REFUSED = [
    ("edited", _edit_living, [], "living/inference.md changed since the briefing was made"),
    ("partial", _mark_partial, [], "is a partial briefing (1 source(s) not read)"),
    ("other-topic", lambda ws, r: [], ["--topic", "risk"], "is a briefing of 'inference', not 'risk'"),
    ("other-workspace", lambda ws, r: [], ["--workspace", str(WORLD)], "was made in the workspace"),
    ("no-living-record", _forget_living, [], "records no living document"),
    ("not-utf8", _not_utf8, [], "living/inference.md is not UTF-8 text"),
]


@pytest.mark.parametrize(("name", "setup", "args", "said"), REFUSED, ids=[r[0] for r in REFUSED])
def test_apply_refuses(
    name: str, setup: Callable[[Path, Path], list[str]], args: list[str], said: str, world: tuple[Path, Path]
) -> None:
    ws, record = world
    setup(ws, record)
    before = (ws / LIVING).read_bytes()
    r = predigest("patch", str(record), "--apply", *args)
    assert r.returncode == 2
    assert said in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert (ws / LIVING).read_bytes() == before and not (ws / "living" / HISTORY).exists()


def test_the_print_warns_what_apply_would_refuse(world: tuple[Path, Path]) -> None:
    ws, record = world
    _edit_living(ws, record)
    r = predigest("patch", str(record))
    assert r.returncode == 0 and r.stdout.startswith("--- a/living/inference.md\n+++ b/living/inference.md\n")
    assert "warning: living/inference.md changed since the briefing was made" in r.stderr


def test_the_record_holds_the_hash_of_the_living_document_read(demo: Path) -> None:
    ref = _record(demo).living
    assert ref is not None and ref.path == LIVING and Path(ref.workspace) == (demo / "world").resolve()
    assert ref.sha256 == text_hash(_living(demo))


# --- tomorrow reads it -------------------------------------------------------------------------------

NEXT_EVENING = """# 工程过滤报告 · 2026-09-23 下午场（15:00）

> 过滤器：jay / engineering-filter
> 扫描时段：2026-09-23 10:00–14:50（Asia/Shanghai）

---

## 条目 1：NVIDIA Dynamo 1.0 — 分布式推理编排层

- 来源：https://github.com/ai-dynamo/dynamo
- 评级：⭐⭐⭐⭐
- 要点：Dynamo 是协调层而非执行层，通过 NIXL 与 vLLM/SGLang/TRT-LLM backend 通信；KVBM 多层 offload
- 可信度：高（NVIDIA 官方开源项目）

---

## 条目 2：HookPoint：推理可观测性

- arXiv：arXiv:2605.11093v1（https://arxiv.org/abs/2605.11093v1）
- 评级：⭐⭐⭐⭐
- 要点：HookPoint 自定义 CUDA kernel overhead 仅 0.4–6.8%（平均 3.6%），PyTorch forward hooks 平均 46.9%
- 可信度：高（arXiv 原文）
"""


def _next_evening(ws: Path, out: Path) -> RunRecord:
    (ws / "inbox" / "jay" / "2026-09-23-1500-jay-engineering-filter.md").write_text(NEXT_EVENING, encoding="utf-8")
    r = predigest(
        "run", str(ws), "-t", "inference", "-d", "2026-09-23", "--backend", "offline", "--out", str(out), "--no-cache"
    )
    assert r.returncode == 0, r.stderr
    return RunRecord.model_validate_json((out / "2026-09-23-inference-e1prep.json").read_text(encoding="utf-8"))


def _repeated(record: RunRecord) -> list[str]:
    """Tonight's subjects the next evening's briefing takes for new."""
    news = [i.title for i in record.briefing.increments if i.relation_kind == "new"]
    return [t for t in news if "Dynamo" in t or "HookPoint" in t]


def test_tomorrow_reads_tonights_lines_as_anchors(world: tuple[Path, Path], tmp_path: Path) -> None:
    """The evening is patched in; the next evening's documents repeat two of its subjects, and
    those are covered by the living document's new lines, dated tonight (no 9-22 briefing is in
    the inbox: only the living document can know them). Unpatched, the same evening takes them
    for new."""
    ws, record = world
    unpatched = tmp_path / "unpatched"
    shutil.copytree(ws, unpatched, symlinks=True)
    assert len(_repeated(_next_evening(unpatched, tmp_path / "next0"))) == 2
    assert predigest("patch", str(record), "--apply").returncode == 0
    nxt = _next_evening(ws, tmp_path / "next")
    dedupe = [f for f in nxt.findings if f.rule == "dedupe" and f.decision in ("already covered", "supplement")]
    by_living = {f.subject for f in dedupe if "(9-22, living/inference.md)" in f.detail}
    assert {"HookPoint：推理可观测性", "NVIDIA Dynamo 1.0 — 分布式推理编排层"} <= by_living, dedupe
    assert _repeated(nxt) == []


# --- eval: the patch against the editor's living document ---------------------------------------------

CASE = ROOT / "eval" / "cases" / "2026-09-22-inference"


def test_patch_score_of_the_demo_evening(demo: Path) -> None:
    """The demo evening's patch against the editor's E2 of the 9-22 seed (living-gold.md)."""
    from eval.patch_score import patch_score

    score = patch_score(CASE, _record(demo))
    assert score["case"] == "2026-09-22-inference"
    counts = {k: score[k] for k in ("editor_lines", "patch_lines", "matched", "placed", "same_heading")}
    assert counts == {"editor_lines": 15, "patch_lines": 15, "matched": 15, "placed": 15, "same_heading": 15}
    assert score["missing"] == [] and score["extra"] == [] and score["misplaced"] == []


def test_a_case_without_living_gold_has_no_patch_score(demo: Path) -> None:
    from eval.patch_score import patch_score

    assert patch_score(ROOT / "eval" / "cases" / "2026-09-21-inference", _record(demo)) == {}


BASE = "## §1 A\n\n- **甲**：旧。（9-20 t e1prep）\n\n## §2 B\n\n- **乙**：旧。（9-20 t e1prep）\n"
NEW_A = "- **丙引擎**：新。（9-22 t e1prep）\n"
NONE = {"matched": 0, "placed": 0}
SCORES = [
    ("same", BASE.replace("\n\n## §2", f"\n{NEW_A}\n## §2"), BASE.replace("\n\n## §2", f"\n{NEW_A}\n## §2"), {}),
    (
        "misplaced",
        BASE.replace("\n\n## §2", f"\n{NEW_A}\n## §2"),
        BASE + NEW_A,
        {"placed": 0, "placement": 0.0, "misplaced": [{"line": NEW_A.strip(), "patch": "§1", "editor": "§2"}]},
    ),
    ("missing", BASE, BASE + NEW_A, {"patch_lines": 0, "recall": 0.0, "missing": [NEW_A.strip()], **NONE}),
    ("extra", BASE + NEW_A, BASE, {"editor_lines": 0, "precision": 0.0, "extra": [NEW_A.strip()], **NONE}),
    (
        "reworded",
        BASE + NEW_A,
        BASE + "- **丙引擎**：编辑改写过的句子。（9-22 t e1prep）\n",
        {},
    ),
]


@pytest.mark.parametrize(("name", "patched", "gold", "differs"), SCORES, ids=[s[0] for s in SCORES])
def test_score_lines(name: str, patched: str, gold: str, differs: dict[str, object]) -> None:
    from eval.patch_score import score_lines

    perfect = {"matched": 1, "placed": 1, "recall": 1.0, "precision": 1.0, "placement": 1.0, "missing": []}
    perfect |= {"extra": [], "misplaced": [], "editor_lines": 1, "patch_lines": 1}
    got = score_lines(BASE, gold, patched)
    assert {k: got[k] for k in perfect} == perfect | differs


def test_the_readme_e2_commands_run(tmp_path: Path) -> None:
    """The E2 hand-off block (docs/e2.md, linked from the README), as written up to the copy
    --apply patches (tests/test_readme.py runs the whole block), with `out/` redirected."""
    import re
    import shlex

    readme = (ROOT / "docs" / "e2.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, flags=re.S)
    assert block is not None
    lines = [ln.split("#", 1)[0].strip() for ln in block[1].splitlines()]
    out = str(tmp_path / "out") + "/"
    for line in lines[:2]:
        args = [a.replace("out/", out) if a.startswith("out/") else a for a in shlex.split(line)[1:]]
        r = predigest(*args)
        assert r.returncode == 0, f"{line}\n{r.stderr}"
    assert r.stdout.startswith("--- a/living/inference.md")
    assert "--apply" in lines[-1] and lines[-1].split()[2].startswith("out/e2/")


TRT_LINE = "- **TensorRT-LLM v1.4.0**：PyTorch 后端进入预览。（9-20 inference e1prep）"


@pytest.mark.parametrize(
    ("title", "under", "line"),
    [
        pytest.param(
            "SGLang v0.5.20：新增 X", "- **SGLang v0.5.19 发布**", "", id="a-later-release-of-an-anchored-product"
        ),
        pytest.param("sglang 0.6.0 发布", "- **SGLang v0.5.19 发布**", "", id="its-name-in-another-case"),
        pytest.param("SGLangX v1.0.0：另一个项目", None, "", id="another-product"),
        pytest.param("tensorrt_llm 1.5.0：PyTorch 后端转默认", "- **TensorRT-LLM v1.4.0**", TRT_LINE, id="its-package"),
        pytest.param("sglang-router 0.2.0：独立发布", None, "", id="a-product-named-after-it"),
    ],
)
def test_a_new_release_goes_under_its_products_line(demo: Path, title: str, under: str | None, line: str) -> None:
    """One product keeps one line in the living document: a new increment about a later release of
    it is written under that line, not as a second line of the product elsewhere. `line` is added to
    the document's releases first."""
    record = _record(demo)
    incs = list(record.briefing.increments)
    i = next(k for k, inc in enumerate(incs) if "Dynamo" in inc.title)
    incs[i] = incs[i].model_copy(update={"title": title})
    changed = record.model_copy(update={"briefing": record.briefing.model_copy(update={"increments": incs})})
    living = _living(demo).replace("### 版本锚点\n", f"### 版本锚点\n{line}\n") if line else _living(demo)
    lines = propose(changed, living, LIVING).new.splitlines()
    name = title.split("：", 1)[0].split(" 发布", 1)[0]
    (k,) = [k for k, ln in enumerate(lines) if name in ln]
    if under is None:
        assert lines[k].startswith("- **"), lines[k]
        return
    parent = next(ln for ln in reversed(lines[:k]) if not ln.startswith((" ", "\t")))  # the block it ends
    assert lines[k].startswith("  - ") and parent.startswith(under), (parent[:40], lines[k][:40])


def test_the_floors_line_is_as_long_as_the_documents_own_and_holds_whole_points(demo: Path) -> None:
    """Without an editor's line, the patch writes the increment's first points whole, as many as a line of
    the living document holds (`LINE_CHARS`), never a run-on paragraph of every point nor a point cut."""
    from agent.write.patch import LINE_CHARS

    record = _record(demo)
    incs = list(record.briefing.increments)
    i = next(k for k, inc in enumerate(incs) if "Dynamo" in inc.title)
    many = [KeyPoint(text=f"第 {n} 项：新增 `--flag-{n}` 参数，默认关闭，开启后吞吐提升 {n}0%。") for n in range(1, 13)]
    incs[i] = incs[i].model_copy(update={"key_points": many})
    changed = record.model_copy(update={"briefing": record.briefing.model_copy(update={"increments": incs})})
    (line,) = [ln for ln in propose(changed, _living(demo), LIVING).new.splitlines() if "--flag-1`" in ln]
    said = [p.text.rstrip("。") for p in many if p.text.rstrip("。") in line]
    assert said == [p.text.rstrip("。") for p in many[: len(said)]] and 1 < len(said) < len(many)
    assert sum(len(t) + 1 for t in said) <= LINE_CHARS + 1 and "--flag-12" not in line
