"""Block 三 as an editor's list, and arXiv IDs that cannot exist (issue 21), on hand-built evenings.

One question an item under a short title; within the budget, what the evening itself raises
(disputes, carried items, impossible IDs) before the model's doubts of like weight; a note that
asks what is already asked is not asked twice; an impossible ID is named as invalid or not at all.
"""

from __future__ import annotations

import re

import pytest

from agent.plan.anchors import OpenItem
from agent.rules.claims import DocResult
from agent.write.render import render
from eval.metrics import RuleContext, rule_compliance
from schemas.briefing import VerifyItem
from schemas.extraction import FileExtraction, SkippedItem, VerifyNote
from tests.test_editor import DATE, A, B, brief, claim, doc, note, result, written

MARK = "（编号无效）"


def carried(title: str, risk: str) -> OpenItem:
    """An open question of the living document's list, which 三 carries at any risk until settled."""
    item = VerifyItem(number=1, title=title, risk=risk, carried_from="10-20", problem="p", suggestion="s")  # type: ignore[arg-type]
    return OpenItem(item=item, origin="10-20", source="inbox/tom/2026-10-20-inference-e1prep.md", kind="living")


def block(md: str, name: str) -> str:
    """The text of one block of the rendered briefing ('三', '五')."""
    m = re.search(rf"^{name}、[^\n]*\n(.*?)(?=^[一二三四五六七]、|\Z)", md, re.S | re.M)
    assert m, f"no block {name}"
    return m[1]


# --- one question an item -----------------------------------------------------------------------------

LONG_TITLE = "Microsoft Agent Framework 1.0 GA：多智能体编排、持久化状态与 MCP 工具接入"
LONG = "推测解码在长上下文场景下的实际加速比与论文所报告的数字是否来自同一测试配置与同一批次硬件"


SHORT_TITLE = "vLLM v0.23.0 发布"
SUBJECT_RAISED = "ThinkEvict 推理时 KV 驱逐"


@pytest.mark.parametrize(
    ("title", "notes"),
    [
        pytest.param(SHORT_TITLE, [note("TTFT 测试配置未给出")], id="one-note"),
        pytest.param(SHORT_TITLE, [note("TTFT 测试配置未给出"), note("KV Pin API 是否默认开启", "高")], id="two-notes"),
        pytest.param(
            SHORT_TITLE,
            [note("TTFT 测试配置未给出"), note("KV Pin API 是否默认开启"), note("与 LMCache 0.4 兼容性", "低")],
            id="three-notes",
        ),
        pytest.param(SHORT_TITLE, [note(LONG), note("KV Pin API 是否默认开启")], id="a-long-note-title"),
        pytest.param(
            LONG_TITLE,
            [note(LONG), note("GA 日期")],
            id="a-long-subject",
        ),
    ],
)
def test_each_model_note_is_its_own_short_item(title: str, notes: list[VerifyNote]) -> None:
    c = claim(title, "移除 --enable-chunked-prefill", notes=notes)
    bf = brief(written(A, c)).briefing
    assert len(bf.to_verify) == len(notes)
    for v in bf.to_verify:
        assert len(v.title) <= 40 and "；" not in v.title, v.title
        assert " ：" not in v.title, v.title
    assert {v.problem for v in bf.to_verify} == {n.problem for n in notes}


def test_a_dispute_on_a_long_subject_keeps_a_short_title() -> None:
    results = [written(A, claim(LONG_TITLE, "吞吐提升 13%")), written(B, claim(LONG_TITLE, "吞吐提升 31%"))]
    (item,) = brief(*results).briefing.to_verify
    assert len(item.title) <= 40 and "13%" in item.title and "31%" in item.title


def test_two_members_asking_one_question_ask_it_once() -> None:
    one = claim(SHORT_TITLE, "移除 --enable-chunked-prefill", notes=[note("KV Pin API 默认开启与否")])
    two = claim(SHORT_TITLE, "新增 KV Connector API v2", notes=[note("KV Pin API 是否默认开启")])
    assert len(brief(written(A, one), written(B, two)).briefing.to_verify) == 1


# --- the budget --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("notes", "open_items", "budget", "kept"),
    [
        pytest.param(
            [note("模型质疑 中", "中")], [carried("延续 中", "中")], 1, ["延续 中"], id="carried-mid-over-model-mid"
        ),
        pytest.param(
            [note("模型质疑 高", "高")],
            [carried("延续 低", "低")],
            1,
            ["模型质疑 高"],
            id="model-high-over-carried-low",
        ),
        pytest.param(
            [note("模型质疑 低", "低")], [carried("延续 低", "低")], 1, ["延续 低"], id="carried-low-over-model-low"
        ),
        pytest.param(
            [note("模型质疑 高", "高")],
            [carried("延续 中", "中")],
            1,
            ["延续 中"],
            id="carried-mid-weighs-as-model-high",
        ),
        pytest.param(
            [note("模型质疑 中", "中")], [carried("延续 中", "中")], 2, ["模型质疑 中", "延续 中"], id="both-fit"
        ),
    ],
)
def test_the_budget_keeps_what_the_evening_promised_first(
    notes: list[VerifyNote], open_items: list[OpenItem], budget: int, kept: list[str]
) -> None:
    c = claim("vLLM v0.23.0 发布", "移除 --enable-chunked-prefill", notes=notes)
    bf = brief(written(A, c), open_items=open_items, max_to_verify=budget).briefing
    assert [_core(v.title) for v in bf.to_verify] == kept
    for o in open_items:
        if o.item.title not in kept:  # a carried item the budget drops stops being carried, and 五 says so
            assert any("未核实即停止延续" in n.note and o.item.title in n.note for n in bf.no_increment)


def _core(title: str) -> str:
    """A note's own title, without the subject the layout may put in front of it."""
    return title.rsplit("：", 1)[-1]


@pytest.mark.parametrize(
    ("raised", "model_risk", "kept"),
    [
        pytest.param("dispute", "中", "dispute", id="dispute-over-model-mid"),
        pytest.param("dispute", "高", "dispute", id="dispute-weighs-as-model-high"),
        pytest.param("invalid id", "低", "invalid id", id="invalid-id-over-model-low"),
        pytest.param("invalid id", "高", "model", id="model-high-over-invalid-id"),
    ],
)
def test_what_the_evening_raises_comes_before_a_model_note_of_like_weight(
    raised: str, model_risk: str, kept: str
) -> None:
    other = claim("SGLang v0.5.19 发布", "新增 --enable-waterfill", notes=[note("模型质疑", model_risk)])
    if raised == "dispute":
        raising = [
            written(A, claim(SUBJECT_RAISED, "TTFT 降低 2.1×")),
            written(B, claim(SUBJECT_RAISED, "TTFT 降低 1.6×")),
        ]
    else:
        raising = [written(A, claim(SUBJECT_RAISED, "KV 显存降低 4.3×", arxiv=["2613.01234"]))]
    bf = brief(*raising, written(doc("inbox/lin/c.md"), other), max_to_verify=1).briefing
    (item,) = bf.to_verify
    got = "model" if item.title.endswith("模型质疑") else "dispute" if "1.6×" in item.title else "invalid id"
    assert got == kept, item.title
    if kept == "invalid id":
        assert item.risk == "低"


def test_each_increments_first_question_before_any_increments_second() -> None:
    one = claim("vLLM v0.23.0 发布", "移除 --enable-chunked-prefill", notes=[note("甲一 配置"), note("甲二 兼容")])
    two = claim("SGLang v0.5.19 发布", "新增 --enable-waterfill", notes=[note("乙一 数字"), note("乙二 默认")])
    bf = brief(written(A, one), written(B, two), max_to_verify=2).briefing
    assert sorted(_core(v.title) for v in bf.to_verify) == ["乙一 数字", "甲一 配置"]


def test_an_increments_first_question_is_its_riskiest_whichever_source_asked_it_first() -> None:
    """The second report's 中 doubt about a release is that release's first question: it is kept
    before a later increment's first question of like weight, and the first report's 低 one waits."""
    lead = claim("vLLM v0.23.0 发布", "移除 --enable-chunked-prefill", stars=5, notes=[note("丙一 配置")])
    first = claim("TensorRT-LLM v1.4.0 发布", "NVFP4 KV cache 转正", notes=[note("甲一 适用硬件", "低")])
    second = claim("TensorRT-LLM v1.4.0 发布", "NVFP4 KV cache 转正", notes=[note("甲二 对比基线", "中")])
    later = claim("ThinkEvict KV 淘汰", "KV 占用降 4.3×", notes=[note("乙一 实验条件", "中")])
    evening = (written(A, lead, first), written(B, second, later))
    bf = brief(*evening, max_to_verify=2).briefing
    assert [i.title for i in bf.increments][:3] == [
        "vLLM v0.23.0 发布",
        "TensorRT-LLM v1.4.0 发布",
        "ThinkEvict KV 淘汰",
    ]
    assert [_core(v.title) for v in bf.to_verify] == ["丙一 配置", "甲二 对比基线"]


def test_a_note_asking_about_a_dispute_is_folded_into_it() -> None:
    a = claim("PreemptServe 抢占式调度", "TTFT 降低 2.1×", notes=[note("TTFT 2.1× 与 1.6× 不一致")])
    b = claim("PreemptServe 抢占式调度", "TTFT 降低 1.6×", notes=[note("开源许可证未说明", "低")])
    composed = brief(written(A, a), written(B, b))
    items = composed.briefing.to_verify
    assert len(items) == 2
    assert sum("2.1×" in f"{v.title} {v.problem}" for v in items) == 1
    (folded,) = [f for f in composed.findings if f.rule == "to-verify" and f.decision == "folded"]
    assert folded.subject == "TTFT 2.1× 与 1.6× 不一致" and folded.target and folded.ref is not None


def test_a_note_asking_what_a_carried_item_asks_is_folded_into_it() -> None:
    open_item = carried("vLLM v0.23.0 KV Pin API 默认开启与否", "中")
    c = claim("vLLM v0.23.0 发布", "移除 --enable-chunked-prefill", notes=[note("KV Pin API 默认开启与否")])
    bf = brief(written(A, c), open_items=[open_item]).briefing
    assert [v.title for v in bf.to_verify] == [open_item.item.title]
    assert bf.to_verify[0].carried_from == "10-20"


# --- arXiv IDs that cannot exist ----------------------------------------------------------------------


def context(*docs: tuple[str, str]) -> RuleContext:
    return RuleContext(date=DATE, files=dict(docs))


def _naming(where: str, arxiv_id: str) -> tuple[DocResult, str]:
    """A document naming an arXiv ID in passing, and the block of the briefing that repeats it."""
    d = doc("inbox/lin/digest.md", f"另见 arXiv:{arxiv_id}（与推理无关）")
    said = f"arXiv:{arxiv_id} 属训练主题"
    if where == "skipped":
        return result(d, skipped=[SkippedItem(subject="训练侧论文", reason=said)]), "五"
    if where == "held":
        ex = FileExtraction(relevance="中", relevance_reason="r", held=f"训练侧论文 {said}")
        return DocResult(d, ex), "一"
    c = claim("vLLM v0.23.0 发布", "移除 --enable-chunked-prefill", notes=[note("引用编号", "低", f"原文写 {said}")])
    return written(d, c), "三"


@pytest.mark.parametrize("where", ["skipped", "held", "note"])
@pytest.mark.parametrize(
    ("arxiv_id", "invalid"),
    [
        pytest.param("2613.01234", True, id="month-13"),
        pytest.param("2611.00042", True, id="after-the-briefing-date"),
        pytest.param("2610.01234", False, id="valid"),
    ],
)
def test_an_id_a_source_names_in_passing_is_marked_where_named(where: str, arxiv_id: str, invalid: bool) -> None:
    r, name = _naming(where, arxiv_id)
    bf = brief(r).briefing
    md = render(bf)
    assert arxiv_id in block(md, name)
    assert all(md[m.end() :].startswith(MARK) is invalid for m in re.finditer(re.escape(arxiv_id), md))
    assert rule_compliance(bf, context((r.doc.path, r.doc.text))).value == 1.0


def test_an_unmarked_invalid_id_breaks_rule_compliance() -> None:
    """The metric the marked form passes is one that can fail."""
    d = doc("inbox/lin/digest.md", "另见 arXiv:2613.01234")
    bf = brief(result(d, skipped=[SkippedItem(subject="训练侧论文", reason="arXiv:2613.01234 属训练主题")])).briefing
    bare = bf.model_copy(
        update={"no_increment": [n.model_copy(update={"note": n.note.replace(MARK, "")}) for n in bf.no_increment]}
    )
    assert rule_compliance(bare, context((d.path, d.text))).value < 1.0


def test_an_id_rejected_from_a_claim_raises_one_low_risk_question() -> None:
    c = claim("ThinkEvict 推理时 KV 驱逐", "KV 显存降低 4.3×", arxiv=["2613.01234"], notes=[note("基线未说明", "中")])
    twice = claim("ThinkEvict 推理时 KV 驱逐", "KV 显存降低 4.3×", arxiv=["2613.01234"])
    r1, r2 = written(A, c), written(B, twice)
    bf = brief(r1, r2).briefing
    (inc,) = bf.increments
    assert "2613.01234" not in inc.arxiv_line and not any("2613.01234" in s.ref for s in inc.sources)
    asked = [v for v in bf.to_verify if "2613.01234" in f"{v.title} {v.problem}"]
    assert len(asked) == 1 and asked[0].risk == "低"
    assert f"2613.01234{MARK}" in asked[0].title + asked[0].problem
    ctx = context((r1.doc.path, r1.doc.text), (r2.doc.path, r2.doc.text))
    assert rule_compliance(bf, ctx).value == 1.0
