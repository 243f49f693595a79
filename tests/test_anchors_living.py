"""The living document is today's: on an earlier evening, what it says it learned that evening or
later is not yet known. A re-run of 2026-09-21 on the demo world reads a living document that
already holds that evening's increments (colibri, EPD, EOS Tokens…): they must not read as
"already covered"."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.plan.anchors import build_registry
from schemas.documents import SourceDoc

LIVING = """# inference 活文档
## §1.3 KV Cache
- **LMCache**（arXiv 2510.09665）：生产级 KV Cache 缓存层。（9-16 inference e1prep）
- **Internet for the KV Cache**（arXiv 2608.01526v1）：KV Cache CDN 范式。（9-21 inference e1prep）
  - 数字补全：TTFT 降低 3.2×。（9-22 inference e1prep 补充）
- **PD disaggregation 基础**：prefill 与 decode 分到不同实例。
| 2510.09665 | LMCache | §1.3 | 9-16 |
| 2608.01526v1 | Internet for the KV Cache | §1.3 | 9-21 |
"""


def _registry(date: dt.date):  # type: ignore[no-untyped-def]
    living = SourceDoc(path="living/inference.md", kind="living", agent="", in_window=True, read=True, text=LIVING)
    return build_registry([living], "inference", date)


@pytest.mark.parametrize(
    ("date", "key", "known"),
    [
        pytest.param(dt.date(2026, 9, 22), "2608.01526", True, id="anchored-the-evening-before"),
        pytest.param(dt.date(2026, 9, 21), "2608.01526", False, id="anchored-by-this-evening"),
        pytest.param(dt.date(2026, 9, 20), "2608.01526", False, id="anchored-after-this-evening"),
        pytest.param(dt.date(2026, 9, 21), "2510.09665", True, id="older-anchor-stays"),
    ],
)
def test_living_entries_dated_on_or_after_the_evening_are_not_anchors(date: dt.date, key: str, known: bool) -> None:
    reg = _registry(date)
    assert (reg.arxiv(key) is not None) is known  # neither from its line nor from the index table


def test_a_later_supplement_line_does_not_leak_into_an_earlier_anchor() -> None:
    anchor = _registry(dt.date(2026, 9, 22)).arxiv("2608.01526")
    assert anchor is not None and anchor.first_date == dt.date(2026, 9, 21)
    assert "3.2×" not in anchor.text


def test_undated_living_entries_stay_anchors() -> None:
    assert _registry(dt.date(2026, 9, 10)).subject("PD disaggregation 基础") is not None


@pytest.mark.parametrize(
    ("line", "date", "first"),
    [
        pytest.param(
            "- **Albireo**：x。（12-30 inference e1prep）",
            dt.date(2027, 1, 2),
            dt.date(2026, 12, 30),
            id="across-january",
        ),
        pytest.param(
            "- **Albireo**：x。（9-18 inference e1prep）", dt.date(2026, 9, 22), dt.date(2026, 9, 18), id="same-year"
        ),
        pytest.param(
            "- **Albireo**：x。（3-15 inference e1prep）",
            dt.date(2026, 9, 22),
            dt.date(2026, 3, 15),
            id="half-a-year-back",
        ),
        pytest.param(
            "- **Albireo**：x。（10-24 inference e1prep）",
            dt.date(2026, 9, 22),
            dt.date(2025, 10, 24),
            id="past-the-lead",
        ),
        pytest.param("- **Albireo**：x。（13-1 inference e1prep）", dt.date(2026, 9, 22), None, id="no-such-day"),
    ],
)
def test_a_short_date_is_the_latest_such_day_up_to_a_month_ahead(
    line: str, date: dt.date, first: dt.date | None
) -> None:
    """A line dated with no day of the calendar ('13-1') is undated: it stays an anchor."""
    living = SourceDoc(path="living/x.md", kind="living", agent="", in_window=True, read=True, text=line)
    anchor = build_registry([living], "inference", date).subject("Albireo")
    assert anchor is not None and anchor.first_date == first


@pytest.mark.parametrize(
    ("parent", "nested", "subject"),
    [
        pytest.param(
            "- **vLLM v0.23.0**（10-21）：去 --swap-space",
            "v0.23.1（11-04）：热修",
            "vLLM v0.23.1（11-04）",
            id="a-version",
        ),
        pytest.param(
            "- **Agent Framework**（10-20）：GA",
            "1.1（2026-11-12）：新增 A2A",
            "Agent Framework 1.1（2026-11-12）",
            id="a-number",
        ),
        pytest.param("- **MCP 规范**（10-19）：草案", "v2：正式版", "MCP 规范 v2", id="a-bare-major"),
        pytest.param(
            "- **SGLang v0.5.19 发布**（9-20）：RadixArk",
            "SGLang 发布权归属：官方声明",
            "SGLang 发布权归属",
            id="a-named-line-stays",
        ),
    ],
)
def test_a_nested_line_is_anchored_under_its_parents_subject(parent: str, nested: str, subject: str) -> None:
    """A nested line named by its version alone is the parent's product at that version; one that
    names its own subject keeps it."""
    text = f"# x\n\n{parent}\n  - {nested}\n"
    doc = SourceDoc(path="living/inference.md", kind="living", agent="", in_window=False, read=True, text=text)
    subjects = [
        a.label for a in build_registry([doc], "inference", dt.date(2026, 12, 1)).anchors if a.kind == "subject"
    ]
    assert subject in subjects, subjects


@pytest.mark.parametrize(
    ("text", "date", "held"),
    [
        pytest.param(
            "## 附 B：开放待核实\n\n- colibri GLM-5.2 支持范围和实测性能（9-21 起，低风险）",
            dt.date(2026, 9, 22),
            [("colibri GLM-5.2 支持范围和实测性能", "9-21", "低")],
            id="a-listed-question",
        ),
        pytest.param(
            "## 附：开放待核实\n- NVIDIA 收购 Hugging Face $12.93B 实际进展（9-21 起，中风险；影响生态判断）\n"
            "- **A2A v1.0** 签名校验（10-20）",
            dt.date(2026, 10, 21),
            [("NVIDIA 收购 Hugging Face $12.93B 实际进展", "9-21", "中"), ("A2A v1.0 签名校验", "10-20", "低")],
            id="a-remark-after-the-risk-and-an-unrated-one",
        ),
        pytest.param(
            "## 附 B：开放待核实\n- colibri 实测性能（9-22 起）\n- EPD 延迟（9-23 起）\n- LMCache 命中率（9-16 起）",
            dt.date(2026, 9, 22),
            [("LMCache 命中率", "9-16", "低")],
            id="not-those-raised-tonight-or-later-on-a-re-run",
        ),
    ],
)
def test_the_living_documents_open_questions_are_open_items(
    text: str, date: dt.date, held: list[tuple[str, str, str]]
) -> None:
    """Only the list under a heading naming 待核实: a mark on an anchor's line may be E2's copy of one
    evening's model notes, and is not read as the document's own question."""
    living = SourceDoc(path="living/x.md", kind="living", agent="", in_window=True, read=True, text=LIVING + text)
    reg = build_registry([living], "inference", date)
    assert [(o.item.title, o.origin, o.item.risk) for o in reg.open_items] == held
    assert all(o.kind == "living" and o.source == "living/x.md" for o in reg.open_items)


@pytest.mark.parametrize(
    ("line", "name"),
    [
        pytest.param(
            "- **Characterizing Failures in LLM Training Clusters**（arXiv 2606.22410）：故障统计。（9-15 e1prep）",
            "Characterizing Failures in LLM Training Clusters",
            id="bold-name-before-the-id",
        ),
        pytest.param(
            "| 2606.22410 | Training Cluster Failures | §1.1 | 9-15 |", "Training Cluster Failures", id="index-row"
        ),
        pytest.param(
            "- arXiv 2606.22410：StragglerScope 反推慢节点（9-15）", "StragglerScope 反推慢节点", id="name-after-the-id"
        ),
        pytest.param("- HookPoint (arXiv:2606.22410v1) — 3.6% overhead（9-15）", "HookPoint", id="english-brackets"),
        pytest.param("- [Foo Bar](https://arxiv.org/abs/2606.22410)（9-15）", "Foo Bar", id="a-link"),
        pytest.param("- 9-15：arXiv 2606.22410 StragglerScope：x", "StragglerScope", id="a-date-is-no-name"),
        pytest.param("- **Foo** — arXiv 2606.22410（9-15）", "Foo", id="a-dash-before-the-id"),
        pytest.param("| 2606.22410 | 高 | Title X | 9-15 |", "Title X", id="a-credibility-cell-is-no-name"),
        pytest.param(
            "- **A**（arXiv 2606.22411）与 **B Paper**（arXiv 2606.22410，续）（9-15）", "B Paper", id="the-second-id"
        ),
    ],
)
def test_a_paper_is_named_as_the_living_document_names_it(line: str, name: str) -> None:
    """四 and the prompts show the paper's name, not the line's first 80 characters with its markup."""
    living = SourceDoc(path="living/x.md", kind="living", agent="", in_window=True, read=True, text=f"# x\n{line}\n")
    anchor = build_registry([living], "inference", dt.date(2026, 9, 22)).arxiv("2606.22410")
    assert anchor is not None and anchor.label == name


def test_an_open_question_is_not_an_anchor() -> None:
    """The living document's 待核实 list is what is not known yet: an open item, never a subject the
    prompt lists as known or dedupe holds a claim against."""
    text = "# x\n## §1 引擎\n- **SGLang v0.6.0**：HiCache 默认开启。（10-20 e1prep）\n## 附：开放待核实\n"
    text += "- SGLang v0.6.0 HiCache 实测命中率（10-20 起，中风险）\n"
    living = SourceDoc(path="living/x.md", kind="living", agent="", in_window=True, read=True, text=text)
    reg = build_registry([living], "inference", dt.date(2026, 11, 16))
    assert [a.key for a in reg.anchors] == ["SGLang v0.6.0"]
    assert [o.item.title for o in reg.open_items] == ["SGLang v0.6.0 HiCache 实测命中率"]


@pytest.mark.parametrize(
    ("text", "anchors", "questions"),
    [
        pytest.param(
            "## 附：开放待核实\n### 高风险\n- Q1 的问题（10-20 起，高风险）\n"
            "## §2 调度\n- **A2**：x。（10-1 e1prep）\n",
            ["A2"],
            ["Q1 的问题"],
            id="a-sub-heading-stays-in-the-list",
        ),
        pytest.param(
            "## §1 引擎（含待核实）\n- **A1**：x。（10-1 e1prep）\n## 附：开放待核实\n- Q2 的问题（10-20 起）\n",
            ["A1"],
            ["Q2 的问题"],
            id="a-section-naming-the-mark-is-a-section",
        ),
    ],
)
def test_where_the_open_questions_list_is(text: str, anchors: list[str], questions: list[str]) -> None:
    living = SourceDoc(path="living/x.md", kind="living", agent="", in_window=True, read=True, text=f"# x\n{text}")
    reg = build_registry([living], "inference", dt.date(2026, 11, 16))
    assert [a.key for a in reg.anchors if a.kind == "subject"] == anchors
    assert [o.item.title for o in reg.open_items] == questions
