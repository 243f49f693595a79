"""六's levels as an editor sets them: what a reader running the thing must act on first, the
secondary anchors last, and each subject on one row (agent.rules.priority, agent.rules.layout)."""

from __future__ import annotations

import pytest

from agent.plan.anchors import AnchorRegistry, OpenItem
from agent.rules.claims import DocResult
from agent.rules.compose import Composed, Limits, compose
from agent.rules.priority import urgent_word
from agent.write.trace import run_record
from schemas.briefing import VerifyItem
from schemas.extraction import FileExtraction, Resolution
from tests.test_editor import DATE, claim, doc, written


@pytest.mark.parametrize(
    ("title", "word"),
    [
        ("vLLM v0.23.0 移除 --swap-space（无别名）", "移除"),
        ("SGLang v0.5.19 破坏性 flag 改名", "破坏性"),
        ("Qdrant v1.16 — 配置改名与内置 BM25", "改名"),
        ("MCP Python SDK 会话劫持 CVE-2026-41207", "劫持"),
        ("GPU 驱动本地提权漏洞：影响容器逃逸场景", "提权"),
        ("TGI 归档时间线：存量服务已无上游修复", "归档"),
        ("PyTorch 2.9 起放弃对 CUDA 12.8 的支持", "放弃对 CUDA 12.8 的支持"),
        ("Lablup 504-GPU 集群排障复盘：IB link flap", "排障"),
        ("Qdrant 旧参数名被静默忽略", "静默"),
        ("pgvector 0.9.0 — iterative_scan 默认开启", "默认开启"),
        ("Elasticsearch 9.3 — BBQ 成为 dense_vector 默认索引", "成为 dense_vector 默认"),
        ("TGI→vLLM/SGLang 迁移三坑与 flag 映射", "迁移三坑"),
        ("Mooncake v1.0：Mooncake Store 转 GA", "v1.0"),
        ("Microsoft Agent Framework 1.0 GA", "1.0"),
        ("Triton 3.2 deprecates the legacy launcher", "deprecat"),
        ("Ray 2.50 removes the old autoscaler flags", "removes"),
        ("Redis 8 vulnerability lets a client read other keys", "vulnerab"),
        ("Chunked prefill is now the default in LMDeploy", "now the default"),
        # what happened to a thing, not something a reader must act on
        ("ThinkEvict：只淘汰 thinking 段 KV，占用降 4.3×", ""),
        ("Llumnix：请求跨实例迁移降低尾延迟 30%", ""),
        ("MemGate：写入门控默认关闭时的召回", ""),
        ("TensorRT-LLM v1.4.0：NVFP4 KV cache 转正", ""),
        ("SpecServe 开源 v0.1.0，H200 goodput 1.9×", ""),
        ("vLLM 0.10.0 的调度器重写", ""),
        ("MCP 规范 2026-11-24 版进入 RC", ""),
        # the same words, said of something else
        ("SGLang v0.5.21：无破坏性变更，新增 EAGLE-3 支持", ""),
        ("温度 1.0 下投机解码接受率仅降 3%", ""),
        ("DeepSeek-V4 解码吞吐 1.0× 持平", ""),
        ("Mooncake v1.0-rc1 发布，Store GA 推迟到 11 月", ""),
        ("vLLM 成为主流云厂商默认推理引擎", ""),
        ("弹性扩缩：节点上下线时 KV 迁移零丢失", ""),
        ("Chunked prefill is not enabled by default", ""),
        # the same news, in other words
        ("TensorRT-LLM v1.5 将 gpt_attention_plugin 参数更名为 attn_backend", "更名"),
        ("Ollama 0.9.3 本地 API 未鉴权（GHSA-7x2q-9f3m-x2x1）", "GHSA-"),
        ("vLLM 不再维护 Python 3.9 wheels", "不再维护"),
        ("LMDeploy 0.8 gpu_memory_utilization 默认值由 0.9 调为 0.8", "默认值由 0.9 调为"),
        ("PyTorch drops support for CUDA 11.8", "drops support"),
    ],
)
def test_what_makes_a_change_urgent(title: str, word: str) -> None:
    assert urgent_word(title) == word


def _levels(c: Composed) -> list[tuple[str, str]]:
    return [(row.level, row.content) for row in c.briefing.priorities]


def _brief(*results: DocResult, open_items: tuple[OpenItem, ...] = ()) -> Composed:
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=open_items, sections=())
    return compose(results, reg, [], topic="inference", date=DATE, window="w", limits=Limits())


def test_an_urgent_increment_comes_first_and_a_secondary_anchor_last() -> None:
    """二 keeps the documents' order; 六 puts the breaking change first and the 3★ paper at 🟢 低."""
    plain = claim("ThinkEvict 只淘汰 thinking 段 KV", "KV 占用降 4.3×")
    urgent = claim("vLLM v0.23.0 移除 --swap-space", "`--swap-space` 移除，无别名")
    paper = claim("AFD-Serve 异构 Attention-FFN 分离", "每美元吞吐 +27%", stars=3)
    answered = written(doc("inbox/jay/2026-10-21-a.md"), plain, urgent, paper)
    c = _brief(answered)
    assert [inc.title for inc in c.briefing.increments] == [plain.title, urgent.title]
    assert _levels(c) == [("🔴 最高", urgent.title), ("🟡 中", plain.title), ("🟢 低", paper.title)]
    assert c.secondary_rows == (2,)  # the run record's trace names the row the paper is on
    (why,) = [f for f in c.findings if f.rule == "priority"]
    assert why.subject == urgent.title and "'移除'" in why.detail and why.ref is not None and why.ref.index == 1
    record = run_record(c, [answered], [answered.doc], prompt="p", model="m")
    # the paper was demoted; a level removes nothing, so the page's last block does not list it
    assert [record.findings[r.finding].rule for r in record.trace.removed] == ["select"]


def test_when_nothing_tonight_is_urgent_the_first_increment_leads() -> None:
    a = claim("ThinkEvict 只淘汰 thinking 段 KV", "KV 占用降 4.3×")
    b = claim("HookPoint 推理可观测性", "overhead 3.6%")
    c = _brief(written(doc("inbox/jay/2026-10-21-a.md"), a, b))
    assert _levels(c) == [("🔴 最高", a.title), ("🟡 中", b.title)]
    (why,) = [f for f in c.findings if f.rule == "priority"]
    assert why.subject == a.title and "nothing tonight is urgent" in why.detail


@pytest.mark.parametrize(
    ("arxiv", "level"),
    [
        pytest.param(("2610.15630",), "🟡 中", id="a-paper-names-what-it-studies"),
        pytest.param((), "🔴 最高", id="an-incident-report-is-urgent"),
        # a release naming the paper it implements links its release page: the release's story
        pytest.param(("2610.15630", "github.com/x/y/releases/tag/v1.2"), "🔴 最高", id="a-release-citing-a-paper"),
    ],
)
def test_a_papers_title_is_not_read_for_urgency(arxiv: tuple[str, ...], level: str) -> None:
    """故障 or 漏洞 in a paper's title is its subject; the same word in a report says something happened."""
    lead = claim("HookPoint 推理可观测性", "overhead 3.6%")
    ids, links = tuple(a for a in arxiv if "/" not in a), tuple(a for a in arxiv if "/" in a)
    points = ("单节点故障后 48 秒恢复训练", *(f"发布页 {u}" for u in links))  # a link a document names
    studied = claim("ResumeKit：16K GPU 作业单节点故障 48 秒恢复", *points, arxiv=ids, urls=links)
    c = _brief(written(doc("inbox/jay/2026-10-21-a.md"), lead, studied))
    assert dict((t, lv) for lv, t in _levels(c))[studied.title] == level


QUESTION = OpenItem(
    VerifyItem(number=1, title="Qdrant v1.16 旧参数名 memmap_threshold 的行为", risk="中", problem="p", suggestion="s"),
    origin="10-14",
    source="inbox/tom/2026-10-14-retrieval-e1prep.md",
)
ANSWER = "Qdrant v1.16.0 对旧参数名 memmap_threshold 静默忽略，v1.16.1 起报错"


def _settled(how: str, *claims_of_the_document: object) -> Composed:
    lead = claim("SPLADE-v4 学习型稀疏检索", "BEIR 55.1")
    d = doc("inbox/jay/2026-10-15-a.md", text=f"# 报告\n{ANSWER}。")
    answered = written(d, lead, *claims_of_the_document)  # type: ignore[arg-type]
    assert answered.extraction is not None
    resolved = [Resolution(item=QUESTION.item.title, how=how, evidence=ANSWER)]
    ex = FileExtraction.model_validate(answered.extraction.model_dump() | {"resolved": resolved})
    return _brief(DocResult(answered.doc, ex), open_items=(QUESTION,))


@pytest.mark.parametrize(
    ("how", "level"),
    [
        ("v1.16.0 静默忽略旧参数名，v1.16.1 起报错", "🔴 最高"),  # the answer is a breaking behaviour
        ("发布说明已写明参数行为", "🟢 低"),  # a mark to drop, nothing to act on
    ],
)
def test_a_settled_question_on_its_own_row_is_low_unless_its_answer_is_urgent(how: str, level: str) -> None:
    paper = claim("AFD-Serve 异构 Attention-FFN 分离", "每美元吞吐 +27%", stars=3)
    c = _settled(how, paper)
    (row,) = [r for r in c.briefing.priorities if "今晚已核实" in r.content]
    assert row.content.startswith(QUESTION.item.title) and row.level == level
    assert row.action == "更新对应锚点，去掉待核实标注"
    (at,) = c.secondary_rows  # still the paper's row once the rows are ordered by level
    assert c.briefing.priorities[at].content == paper.title


def test_a_row_saying_an_urgent_answer_leads() -> None:
    """The answer is a breaking behaviour: the secondary anchor that settles it says so, at 最高."""
    paper = claim("Qdrant v1.16 旧参数名 memmap_threshold 的实际行为", ANSWER, stars=3)
    c = _settled("v1.16.0 静默忽略旧参数名，v1.16.1 起报错", paper)
    assert [r.level for r in c.briefing.priorities] == ["🔴 最高", "🟡 中"]
    assert c.briefing.priorities[0].content.startswith(paper.title) and c.secondary_rows == (0,)


def test_a_question_a_secondary_anchor_settles_is_said_on_its_row() -> None:
    """One subject, one row: the 3★ claim about the question carries the settled note."""
    paper = claim("Qdrant v1.16 旧参数名 memmap_threshold 的实际行为", ANSWER, stars=3)
    c = _settled("发布说明已写明参数行为", paper)
    rows = [r for r in c.briefing.priorities if "memmap_threshold" in r.content]
    assert [(r.level, r.content) for r in rows] == [("🟢 低", f"{paper.title}（10-14 待核实，今晚已核实）")]
    assert rows[0].action.endswith("，去掉待核实标注")
    assert c.secondary_rows == (1,)
