"""What 三 carries from one evening to the next (issue 41, item 5), on hand-built evenings.

Each row is an earlier evening (its briefing rendered as Markdown and read back, as the inbox holds
it), the living document's list of open questions, and tonight; the assertion is what tonight's 三
holds. The living document's questions and the disputes wait for a document to settle them; a
briefing's own doubt is carried only at 高 risk; a question naming an impossible arXiv ID is said
the evening it appears; what is carried comes before tonight's lesser doubts within the budget.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest

from agent.plan.anchors import build_registry
from agent.rules.claims import DocResult
from agent.rules.compose import Composed, Limits, compose
from agent.write.render import render
from schemas.documents import SourceDoc
from schemas.extraction import FileExtraction
from tests.test_editor import DATE, A, B, claim, doc, note, written

YESTERDAY = DATE - dt.timedelta(days=1)
TWO_AGO = DATE - dt.timedelta(days=2)  # past the one evening a lesser doubt is asked again
LAST_WEEK = DATE - dt.timedelta(days=6)  # past `carry_evenings` (3): a doubt raised then has aged out
LIVING = "living/inference.md"


def living(*questions: str) -> str:
    """A living document with its list of open questions, as the demo worlds write it."""
    listed = "".join(f"- {q}\n" for q in questions)
    return f"# inference 活文档\n\n## §1.1 框架格局\n\n- **vLLM**：推理引擎。\n\n## 附 B：开放待核实\n\n{listed}"


def quiet(path: str = "inbox/lin/quiet.md") -> DocResult:
    """A document of tonight with nothing to say: 三 holds only what is carried."""
    return DocResult(doc(path, "x"), FileExtraction(relevance="中", relevance_reason="r", held="h"))


def living_doc(text: str) -> SourceDoc:
    return SourceDoc(path=LIVING, kind="living", agent="", in_window=True, read=True, text=text)


def briefing_of(results: Sequence[DocResult], on: dt.date, *known: SourceDoc) -> SourceDoc:
    """The briefing of the evening `on`, written into the inbox as the run writes it."""
    reg = build_registry(known, "inference", on)
    b = compose(results, reg, [], topic="inference", date=on, window="w", limits=Limits()).briefing
    path = f"inbox/tom/{on}-inference-e1prep.md"
    return SourceDoc(path=path, kind="baseline", agent="tom", in_window=True, read=True, text=render(b))


def evening(
    earlier: Sequence[DocResult] = (),
    *,
    on: dt.date = YESTERDAY,
    living_text: str = "",
    tonight: Sequence[DocResult] = (),
    budget: int = 6,
) -> Composed:
    """Tonight's briefing, after the evening `on` whose documents were `earlier` (its briefing in the
    inbox), both with the living document `living_text`."""
    docs = [living_doc(living_text)] if living_text else []
    if earlier:
        docs.append(briefing_of(earlier, on, *docs))
    reg = build_registry(docs, "inference", DATE)
    limits = Limits(max_to_verify=budget)
    return compose(list(tonight) or [quiet()], reg, [], topic="inference", date=DATE, window="w", limits=limits)


RELEASE = "vLLM v0.23.0 发布"
MID = note("TTFT 测试配置未给出", "中")
HIGH = note("KV Pin API 默认开启会否改变显存上限", "高")
TONIGHT_MID = note("SGLang waterfill 的适用模型未说明", "中")


def _release(*notes_: object) -> DocResult:
    return written(A, claim(RELEASE, "移除 --enable-chunked-prefill", notes=list(notes_)))  # type: ignore[arg-type]


def _dispute() -> list[DocResult]:
    subject = "PreemptServe 抢占式调度"
    return [written(A, claim(subject, "TTFT 降低 2.1×")), written(B, claim(subject, "TTFT 降低 1.6×"))]


def _tonight_note() -> DocResult:
    return written(doc("inbox/lin/c.md"), claim("SGLang v0.5.19 发布", "新增 --enable-waterfill", notes=[TONIGHT_MID]))


@pytest.mark.parametrize(
    ("earlier", "on", "living_text", "tonight", "budget", "held"),
    [
        pytest.param(
            [], YESTERDAY, living("SGLang HiCache 实测命中率（10-18 起，中风险）"), [], 6,
            ["SGLang HiCache 实测命中率"],
            id="a-living-question-no-briefing-carried-yet",
        ),
        pytest.param(
            [_release()], LAST_WEEK, living("SGLang HiCache 实测命中率（10-14 起，低风险）"), [], 6,
            ["SGLang HiCache 实测命中率"],
            id="a-living-question-past-three-evenings",
        ),
        pytest.param(
            _dispute(), LAST_WEEK, "", [], 6,
            ["2.1× 还是 1.6×"],
            id="a-dispute-past-three-evenings",
        ),
        pytest.param(
            [_release(MID)], YESTERDAY, "", [], 6, ["TTFT 测试配置未给出"],
            id="a-mid-doubt-is-asked-again-the-next-evening",
        ),
        pytest.param([_release(MID)], TWO_AGO, "", [], 6, [], id="a-mid-doubt-is-let-go-after-the-next-evening"),
        pytest.param(
            [_release(MID, HIGH)], TWO_AGO, "", [], 6,
            ["KV Pin API 默认开启会否改变显存上限"],
            id="a-high-doubt-outlives-a-mid-one",
        ),
        pytest.param(
            [written(A, claim("ThinkEvict 推理时 KV 驱逐", "KV 显存降低 4.3×", arxiv=["2613.01234"]))],
            YESTERDAY, "", [], 6, [],
            id="an-impossible-id-is-said-once",
        ),
        pytest.param(
            [_release(note("引用的 arXiv 2613.01234 是哪篇", "高", "原文写 arXiv:2613.01234"))],
            YESTERDAY, "", [], 6, [],
            id="a-high-doubt-naming-an-impossible-id-is-said-once",
        ),
        pytest.param(
            [_release(MID, note("KV Connector v2 兼容性", "中"), note("Pin 上限", "中"))],
            TWO_AGO, living("SGLang HiCache 实测命中率（10-18 起，低风险）"), [_tonight_note()], 2,
            ["SGLang waterfill 的适用模型未说明", "SGLang HiCache 实测命中率"],
            id="the-living-question-keeps-its-place-ahead-of-lesser-doubts",
        ),
    ],
)  # fmt: skip
def test_what_three_carries(
    earlier: list[DocResult], on: dt.date, living_text: str, tonight: list[DocResult], budget: int, held: list[str]
) -> None:
    bf = evening(earlier, on=on, living_text=living_text, tonight=tonight, budget=budget).briefing
    assert len(bf.to_verify) == len(held), [v.title for v in bf.to_verify]
    for v, words in zip(bf.to_verify, held, strict=True):
        assert words in v.title, (v.title, words)
        assert v.problem and v.suggestion  # a living question carried in its own words still says what to do


def test_each_item_left_behind_says_why() -> None:
    earlier = [_release(MID, note("引用的 arXiv 2613.01234 是哪篇", "高", "原文写 arXiv:2613.01234"))]
    composed = evening(earlier, on=TWO_AGO)
    why = {f.subject: f.detail for f in composed.findings if f.rule == "carry" and f.decision == "not carried"}
    assert len(why) == 2
    assert any("past the next evening only at 高 risk" in d for d in why.values())
    assert any("2613.01234, which cannot exist" in d for d in why.values())


# --- invariants that held before and must still hold -------------------------------------------------


def test_a_living_question_the_latest_briefing_settled_is_not_raised_again() -> None:
    """The list still holds it (that evening's E2 patch was not applied); the briefing written after
    it was raised left it out, so that evening settled or stopped it."""
    text = living("pgvector iterative scan 的 recall 改善幅度（10-13 起，低风险）")
    settled = briefing_of([_release()], dt.date(2026, 10, 14))  # written without it: it was settled there
    assert build_registry([living_doc(text), settled], "inference", DATE).open_items == ()


def test_prompts_list_only_what_a_briefing_carried() -> None:
    """A living question no briefing has carried yet is carried in 三 but not listed to the model as
    an earlier briefing's item (the prompts say they list those); it is, once a briefing carries it."""
    d = living_doc(living("SGLang HiCache 实测命中率（10-18 起，中风险）"))
    reg = build_registry([d], "inference", YESTERDAY)
    assert [o.kind for o in reg.open_items] == ["living"] and reg.briefed_items == ()
    again = build_registry([d, briefing_of([quiet()], YESTERDAY, d)], "inference", DATE)
    assert [(o.kind, o.item.title) for o in again.briefed_items] == [("living", "SGLang HiCache 实测命中率")]
