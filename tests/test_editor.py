"""What an editor does to an evening with overlap (issue 21), on small hand-built evenings.

Each row is a few documents and the claims a model could have read from them; the assertions
are what an editor reading the briefing would check: one increment per release, each fact once,
a disputed figure raised in 三 rather than printed, sources the document itself names, and each
key point linked to its own claim's quotes.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

import pytest

from agent.plan.anchors import Anchor, AnchorRegistry, OpenItem
from agent.rules.claims import Candidate, DocResult, Finding, Group
from agent.rules.compose import Composed, Limits, compose
from agent.rules.edit import edit
from agent.rules.merge import merge
from agent.runlog import claim_fate
from agent.write.trace import run_record
from schemas.briefing import Increment, KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction, SkippedItem, VerifyNote
from tests.paths import candidate

DATE = dt.date(2026, 10, 21)

# --- builders -----------------------------------------------------------------------------------------


def doc(path: str, text: str = "", kind: str = "report") -> SourceDoc:
    return SourceDoc(path=path, kind=kind, agent=path.split("/")[1], in_window=True, read=True, text=text)


def kp(text: str, *children: KeyPoint | str) -> KeyPoint:
    return KeyPoint(text=text, children=[c if isinstance(c, KeyPoint) else KeyPoint(text=c) for c in children])


def claim(
    title: str,
    *points: KeyPoint | str,
    evidence: Sequence[str] = (),
    ref: str = "§一.1",
    stars: int = 4,
    urls: Sequence[str] = (),
    arxiv: Sequence[str] = (),
    notes: Sequence[VerifyNote] = (),
    cred: str = "高",
    reason: str = "官方发布说明",
) -> Claim:
    kps = [p if isinstance(p, KeyPoint) else KeyPoint(text=p) for p in points]
    return Claim(
        title=title,
        stars=stars,
        key_points=kps,
        evidence=list(evidence) or [p.text for p in kps],
        section_ref=ref,
        arxiv=[ArxivRef(arxiv_id=a, title="paper") for a in arxiv],
        urls=list(urls),
        credibility=cred,  # type: ignore[arg-type]
        credibility_reason=reason,
        relation="new",
        relation_note="新主题",
        suggested_section="§1.1 框架格局",
        to_verify=list(notes),
    )


def note(title: str, risk: str = "中", problem: str = "原文未给出测试配置") -> VerifyNote:
    return VerifyNote(title=title, risk=risk, problem=problem, suggestion="读原文核对")  # type: ignore[arg-type]


def result(d: SourceDoc, *claims: Claim, skipped: Sequence[SkippedItem] = ()) -> DocResult:
    ex = FileExtraction(relevance="高", relevance_reason="r", held="h", claims=list(claims), skipped=list(skipped))
    return DocResult(d, ex)


def written(d: SourceDoc, *claims: Claim) -> DocResult:
    """A document whose text writes every point and quote of its claims, so grounding keeps them."""
    lines = [c.title for c in claims]
    lines += [q for c in claims for q in c.evidence]
    lines += [p.text for c in claims for k in c.key_points for p in k.walk()]
    lines += [a.arxiv_id for c in claims for a in c.arxiv]
    text = d.text + "\n" + "\n".join(f"- {x}" for x in lines)
    return result(d.model_copy(update={"text": text}), *claims)


def registry(*open_items: OpenItem) -> AnchorRegistry:
    return AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=open_items, sections=())


def brief(*results: DocResult, open_items: Sequence[OpenItem] = (), max_to_verify: int = 6) -> Composed:
    limits = Limits(max_to_verify=max_to_verify)
    reg = registry(*open_items)
    return compose(results, reg, [], topic="inference", date=DATE, window="w", limits=limits)


def texts(inc: Increment) -> list[str]:
    return [p.text for p in inc.all_points()]


def cands(*pairs: tuple[Claim, SourceDoc]) -> list[Candidate]:
    return [candidate(c, d, i, "高") for i, (c, d) in enumerate(pairs, 1)]


A, B, C = doc("inbox/jay/a.md"), doc("inbox/kai/b.md"), doc("inbox/lin/c.md")

# --- one increment per release ------------------------------------------------------------------------

PIN_EVIDENCE = "vLLM v0.23.0 新增 KV Pin API，固定热点前缀"
PIN_URL = "https://github.com/vllm-project/vllm/releases/tag/v0.23.0"


@pytest.mark.parametrize(
    ("pairs", "groups"),
    [
        pytest.param(
            [
                (claim("vLLM v0.23.0 移除 --enable-chunked-prefill", "移除 flag"), A),
                (claim("vLLM 0.23 发布：KV Connector API v2", "KV Connector API v2"), B),
            ],
            1,
            id="one-release-two-documents",
        ),
        pytest.param(
            [
                (claim("vLLM v0.23.0 移除 --enable-chunked-prefill", "移除 flag", ref="§一.1"), A),
                (claim("vLLM v0.23.0 KV Connector API v2", "新接口", ref="§二.3"), A),
            ],
            1,
            id="one-release-two-sections-of-one-document",
        ),
        pytest.param(
            [
                (claim("TensorRT-LLM v1.6.0 新增 FP4 GEMM", "FP4 GEMM", ref="§发布表 第 3 行"), A),
                (claim("TensorRT-LLM 1.6 修复 MoE 路由", "修复 MoE 路由", ref="§发布表 第 4 行"), A),
            ],
            1,
            id="one-release-two-table-rows",
        ),
        pytest.param(
            [
                (claim("vLLM v0.23.0 发布：推测解码改进", "推测解码"), A),
                (claim("vLLM v0.22.1 发布：推测解码改进", "推测解码"), B),
            ],
            2,
            id="two-versions-of-one-product",
        ),
        pytest.param(
            [
                (claim("MCP Python SDK 会话劫持漏洞", "CVE-2026-41234 允许会话劫持"), A),
                (claim("mcp-python 安全更新", "修复 CVE-2026-41234"), B),
            ],
            1,
            id="one-cve-two-documents",
        ),
        pytest.param(
            [
                (claim("LMCache 0.4 发布：KV 卸载到 SSD", "KV 卸载"), A),
                (claim("LMDeploy 0.4 发布：KV 卸载到 SSD", "KV 卸载"), B),
            ],
            2,
            id="two-products-like-titles-same-version",
        ),
        pytest.param(
            [
                (claim("FlashInfer 注意力 kernel 提速", "kernel 提速"), A),
                (claim("FlashAttention 注意力 kernel 提速", "kernel 提速"), B),
            ],
            2,
            id="two-products-like-titles-no-version",
        ),
        pytest.param(
            [
                (claim("PreemptServe 抢占式调度", "抢占"), A),
                (claim("PreemptServe：抢占式调度论文", "抢占"), B),
            ],
            1,
            id="one-subject-like-titles-two-documents",
        ),
        pytest.param(
            [
                (claim("Agent Framework 1.0 正式发布", "正式 GA"), A),
                (claim("Microsoft Agent Framework 1.0 GA", "GA"), B),
            ],
            1,
            id="product-named-with-and-without-vendor",
        ),
        pytest.param(
            [
                (claim("openai-agents 0.16.0：SandboxTool 与出网白名单", "出网白名单"), A),
                (claim("OpenAI Agents SDK 0.16.0：SandboxTool 转正", "SandboxTool 转正"), B),
            ],
            1,
            id="product-named-by-its-package",
        ),
        pytest.param(
            [
                (claim("OpenAI Agents SDK 1.2.0 发布", "新增 guardrail"), A),
                (claim("OpenAI Python SDK 1.2.0 发布", "新增 guardrail"), B),
            ],
            2,
            id="two-sdks-of-one-vendor-same-version",
        ),
        pytest.param(
            [
                (claim("vLLM v0.12.0 发布", "多模态输出"), A),
                (claim("vLLM-Omni v0.12.0 发布", "多模态输出"), B),
            ],
            2,
            id="a-product-named-after-another",
        ),
        pytest.param(
            [
                (claim("vLLM v0.23.0 移除 --enable-chunked-prefill", "移除 flag"), A),
                (claim("vLLM KV Pin API", "固定热点前缀", evidence=[PIN_EVIDENCE]), B),
            ],
            1,
            id="versionless-title-evidence-names-version",
        ),
        pytest.param(
            [
                (claim("vLLM v0.23.0 移除 --enable-chunked-prefill", "移除 flag"), A),
                (claim("vLLM KV Pin API", "固定热点前缀", urls=[PIN_URL]), B),
            ],
            1,
            id="versionless-title-url-names-version",
        ),
        pytest.param(
            [
                (claim("vLLM v0.22.1 修复前缀缓存", "修复"), A),
                (claim("vLLM KV Pin API", "固定热点前缀", evidence=[PIN_EVIDENCE]), B),
            ],
            2,
            id="versionless-title-of-another-release",
        ),
    ],
)
def test_claims_about_one_release_are_one_increment(pairs: list[tuple[Claim, SourceDoc]], groups: int) -> None:
    got, findings = merge(cands(*pairs))
    assert len(got) == groups
    merged = [f for f in findings if f.decision == "merged"]
    assert len(merged) == len(pairs) - groups
    assert all(f.ref is not None and f.target for f in merged)


def test_a_release_reported_three_times_names_each_document_once_with_its_sections() -> None:
    b = brief(
        written(A, claim("vLLM v0.23.0 移除 --enable-chunked-prefill", "移除 --enable-chunked-prefill", ref="§一.1")),
        written(B, claim("vLLM 0.23 新增 KV Connector API v2", "KV Connector API v2", ref="§3")),
        written(C, claim("vLLM v0.23.0 KV Pin API", "KV Pin API 固定热点前缀", ref="§条目 2")),
    ).briefing
    (inc,) = b.increments
    files = [s.ref for s in inc.sources if s.ref.startswith("inbox/")]
    assert files == ["inbox/jay/a.md", "inbox/kai/b.md", "inbox/lin/c.md"]
    assert [s.section for s in inc.sources if s.ref.startswith("inbox/")] == ["§一.1", "§3", "§条目 2"]


# --- each fact once -----------------------------------------------------------------------------------


def edited(*pairs: tuple[Claim, SourceDoc]) -> tuple[Group, list[Finding]]:
    groups, _ = merge(cands(*pairs))
    assert len(groups) == 1, "the row's claims must be one subject"
    (g,), findings = edit(groups)
    return g, findings


TITLE = "vLLM v0.23.0 发布"
SUBJECT = "PreemptServe 抢占式调度"


PIN = "v0.23.0 新增 KV Pin API（#41234）"


@pytest.mark.parametrize(
    ("points", "kept"),
    [
        pytest.param(
            [("移除 --enable-chunked-prefill 参数", A), ("移除 --enable-chunked-prefill 参数", B)],
            ["移除 --enable-chunked-prefill 参数"],
            id="the-same-words-twice",
        ),
        pytest.param(
            [("移除 --enable-chunked-prefill 参数，无别名", A), ("移除 --enable-chunked-prefill 参数", B)],
            ["移除 --enable-chunked-prefill 参数，无别名"],
            id="a-part-of-a-kept-point-word-for-word",
        ),
        pytest.param(
            [("移除 --enable-chunked-prefill 参数", A), ("移除 --enable-chunked-prefill 参数，无别名", B)],
            ["移除 --enable-chunked-prefill 参数，无别名"],
            id="a-later-point-writing-a-kept-one-whole-takes-its-place",
        ),
        pytest.param(
            [("TTFT 降低 40%，显存降低 20%", A), ("长上下文场景下 TTFT 降低 40%", B)],
            ["TTFT 降低 40%，显存降低 20%"],
            id="every-fact-stated-before-of-the-same-measure",
        ),
        pytest.param(
            [("KV 缓存命中率 40%", A), ("长上下文场景下 TTFT 降低 40%", B)],
            ["KV 缓存命中率 40%", "长上下文场景下 TTFT 降低 40%"],
            id="one-figure-of-another-measure-stays",
        ),
        pytest.param(
            [("LongBench 准确率 71.4%", A), ("门控过滤无关记忆，记忆库缩小 58%，准确率 71.4%", B)],
            ["LongBench 准确率 71.4%", "门控过滤无关记忆，记忆库缩小 58%，准确率 71.4%"],
            id="a-point-adding-a-fact-stays-whole-no-clause-cut",
        ),
        pytest.param(
            [("支持 Blackwell 架构", A), ("Blackwell 架构已支持", B)],
            ["支持 Blackwell 架构", "Blackwell 架构已支持"],
            id="a-paraphrase-is-the-editors-call",
        ),
        pytest.param(
            [
                ("v0.23.0 移除 `--swap-space`，无废弃别名", A),
                ("破坏性变更：移除 `--swap-space`，改用 `--kv-offload-gb`", B),
            ],
            ["v0.23.0 移除 `--swap-space`，无废弃别名", "破坏性变更：移除 `--swap-space`，改用 `--kv-offload-gb`"],
            id="a-summary-adding-a-flag-stays-whole",
        ),
    ],
)
def test_the_floor_keeps_points_whole_and_drops_only_what_is_written_before(
    points: list[tuple[str, SourceDoc]], kept: list[str]
) -> None:
    g, findings = edited(*((claim(TITLE, text, stars=5 - n), d) for n, (text, d) in enumerate(points)))
    assert [p.point.text for p in g.points] == kept
    dropped = [f for f in findings if f.decision == "point folded"]
    assert len(dropped) == len(points) - len(kept)
    assert all(f.ref is not None for f in dropped)


def test_a_point_dropped_for_a_word_for_word_repeat_names_the_point_kept() -> None:
    _, findings = edited((claim(TITLE, PIN, stars=5), A), (claim(TITLE, PIN), B))
    (fold,) = [f for f in findings if f.decision == "point folded"]
    assert fold.ref is not None and fold.ref.doc == B.path and fold.target == f"{A.path}#1"


def test_the_floor_keeps_at_most_eight_points_and_names_the_rest() -> None:
    many = [f"新增 --flag-{n} 参数" for n in range(11)]
    g, findings = edited((claim(TITLE, *many[:6], stars=5), A), (claim(TITLE, *many[6:]), B))
    assert [p.point.text for p in g.points] == many[:8]
    left = [f for f in findings if f.decision == "left out"]
    assert [f.subject for f in left] == many[8:] and all("beyond 8" in f.detail for f in left)


def test_points_are_weighed_against_the_title_printed() -> None:
    """The lead's title states a disputed figure, so another member's titles the increment."""
    lead = claim(
        "SGLang 0.5.3 默认开启 overlap 调度，TTFT 降低 2.1×",
        "v0.5.3 新增 EAGLE-3 投机解码（#9001），H100 上 TTFT 降低 2.1×",
    )
    other = claim("SGLang 0.5.3 发布", "v0.5.3 TTFT 降低 1.6×（#9001）", "SGLang 0.5.3 默认开启 overlap")
    g, _ = edited((lead, A), (other, B))
    assert g.title == "SGLang 0.5.3 发布"
    assert [p.point.text for p in g.points] == ["SGLang 0.5.3 默认开启 overlap"]


def test_a_work_queue_task_alone_keeps_its_points() -> None:
    queue = doc("work-queue/2026-10-21-2200.md", kind="queue")
    g, _ = edited((claim(TITLE, "跟进 v0.23.0 升级影响", stars=4), queue))
    assert [p.point.text for p in g.points] == ["跟进 v0.23.0 升级影响"]


def test_a_work_queue_task_adds_no_points_to_a_reported_subject() -> None:
    queue = doc("work-queue/2026-10-21-2200.md", kind="queue")
    task = claim(TITLE, "跟进 v0.23.0 升级影响", stars=3)
    g, findings = edited((claim(TITLE, "移除 --enable-chunked-prefill"), A), (task, queue))
    assert [p.point.text for p in g.points] == ["移除 --enable-chunked-prefill"]
    assert any(f.doc == queue.path and f.decision == "point folded" for f in findings)


def test_one_credibility_reason_per_increment() -> None:
    a = claim(TITLE, "移除 --enable-chunked-prefill", cred="中", reason="二手摘要。；转述自社区帖")
    b = claim(TITLE, "新增 KV Connector API v2", cred="高", reason="官方 release notes；附 PR 链接")
    (inc,) = brief(written(A, a), written(B, b)).briefing.increments
    assert inc.credibility.level == "高"
    assert inc.credibility.reason == "官方 release notes"


# --- disputed figures ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a_point", "b_point", "values"),
    [
        pytest.param("TTFT 降低 2.1×", "TTFT 降低 1.6×", ("2.1", "1.6"), id="ttft"),
        pytest.param("CVSS 8.8，远程可利用", "CVSS 评分 7.1", ("8.8", "7.1"), id="cvss"),
        pytest.param("吞吐 +13%", "吞吐提升 31%", ("13", "31"), id="throughput"),
        pytest.param("吞吐 +13 %", "吞吐量提升 31 %", ("13", "31"), id="throughput-spaced-and-worded-apart"),
        pytest.param("TTFT 降低 2.1×", "TTFT 降低了 1.6 倍", ("2.1", "1.6"), id="times-written-as-bei"),
        pytest.param("CVSS 8.8", "CVSS v3.1 评分 7.1", ("8.8", "7.1"), id="cvss-with-version"),
        pytest.param("P99 延迟 120 ms", "P99 延迟 95 ms", ("120", "95"), id="latency-ms"),
        pytest.param(
            "TTFT 降低 2.1×",
            "首 token 延迟（TTFT）降低 1.6×",
            ("2.1", "1.6"),
            id="measure-named-in-parentheses",
        ),
        pytest.param("TTFT 降低 2.1×", "cuts TTFT by 1.6×", ("2.1", "1.6"), id="english-ttft"),
        pytest.param("throughput +13%", "throughput up 31%", ("13", "31"), id="english-throughput"),
    ],
)
def test_a_disputed_figure_is_raised_in_three_not_printed(a_point: str, b_point: str, values: tuple[str, str]) -> None:
    a = claim(SUBJECT, a_point, "支持 vLLM 插件")
    b = claim(SUBJECT, b_point, stars=5)
    composed = brief(written(A, a), written(B, b))
    bf = composed.briefing
    (inc,) = bf.increments
    for v in values:
        assert not any(_states(t, v) for t in [inc.title, *texts(inc)]), (v, texts(inc))
    assert "支持 vLLM 插件" in texts(inc)
    items = [v for v in bf.to_verify if all(x in f"{v.title} {v.problem}" for x in values)]
    assert len(items) == 1
    (item,) = items
    assert A.path in item.problem and B.path in item.problem
    pointer = [t for t in texts(inc) if "两份来源说法不一" in t]
    assert pointer == [pointer[0]] and pointer[0].endswith(f"（见待核实 {_circled(item.number)}）")


def _states(text: str, value: str) -> bool:
    return re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])", text) is not None


def _circled(n: int) -> str:
    return "①②③④⑤⑥⑦⑧⑨⑩"[n - 1]


@pytest.mark.parametrize(
    ("results", "figures"),
    [
        pytest.param([(A, ["吞吐提升 13%"]), (B, ["吞吐 +13%"])], ["13%"], id="same-value-in-both"),
        pytest.param([(A, ["吞吐提升 13%"]), (B, ["P99 延迟降低 31%"])], ["13%", "31%"], id="different-measures"),
        pytest.param(
            [(A, ["短上下文吞吐提升 13%", "长上下文吞吐提升 31%"]), (B, ["支持 vLLM 插件"])],
            ["13%", "31%"],
            id="one-document-two-values",
        ),
    ],
)
def test_no_dispute_without_two_documents_disagreeing(
    results: list[tuple[SourceDoc, list[str]]], figures: list[str]
) -> None:
    bf = brief(*(written(d, claim(SUBJECT, *pts)) for d, pts in results)).briefing
    (inc,) = bf.increments
    for f in figures:
        assert sum(f in t for t in texts(inc)) == 1, (f, texts(inc))
    assert not any("两份来源说法不一" in t for t in texts(inc))
    assert not bf.to_verify


def test_a_point_stating_a_disputed_figure_is_withheld_whole() -> None:
    """The floor cuts no clause from a sentence: the point goes, and 三 says why."""
    a = claim(SUBJECT, "TTFT 降低 2.1×，吞吐提升 1.7×", "支持 vLLM 插件")
    b = claim(SUBJECT, "TTFT 降低 1.6×")
    bf = brief(written(A, a), written(B, b)).briefing
    (inc,) = bf.increments
    assert "支持 vLLM 插件" in texts(inc) and not any("1.7×" in t for t in texts(inc))
    assert not any(_states(t, "2.1") or _states(t, "1.6") for t in texts(inc))
    assert len(bf.to_verify) == 1


def test_a_title_stating_a_disputed_figure_is_not_the_increments_title() -> None:
    a = claim("PreemptServe：TTFT 降低 2.1×", "TTFT 降低 2.1×", "吞吐提升 1.7×")
    b = claim("PreemptServe：TTFT 降低 1.6×", "TTFT 降低 1.6×")
    bf = brief(written(A, a), written(B, b)).briefing
    (inc,) = bf.increments
    for told in [inc.title, *bf.summary.headlines, *texts(inc)]:
        assert not _states(told, "2.1") and not _states(told, "1.6"), told
    assert inc.title.startswith("PreemptServe")


def test_a_cve_two_documents_score_differently_is_one_increment_and_one_question() -> None:
    a = claim("MCP Python SDK 会话劫持漏洞", "CVE-2026-41234，CVSS 8.8")
    b = claim("mcp-python 安全更新", "修复 CVE-2026-41234（CVSS 7.1）")
    bf = brief(written(A, a), written(B, b)).briefing
    (inc,) = bf.increments
    assert not any(_states(t, "8.8") or _states(t, "7.1") for t in texts(inc))
    (item,) = bf.to_verify
    assert "8.8" in item.title and "7.1" in item.title and len(item.title) <= 40


def test_three_documents_three_values_none_is_stated() -> None:
    results = [written(d, claim(SUBJECT, f"TTFT 降低 {v}×")) for d, v in ((A, "2.1"), (B, "1.6"), (C, "1.9"))]
    bf = brief(*results).briefing
    (inc,) = bf.increments
    assert not any(_states(t, v) for t in texts(inc) for v in ("2.1", "1.6", "1.9")), texts(inc)
    (item,) = bf.to_verify
    assert all(d.path in item.problem for d in (A, B, C))


def test_a_dispute_past_the_budget_is_still_withheld() -> None:
    a = claim(SUBJECT, "TTFT 降低 2.1×", "吞吐提升 13%", "支持 vLLM 插件")
    b = claim(SUBJECT, "TTFT 降低 1.6×", "吞吐提升 31%")
    bf = brief(written(A, a), written(B, b), max_to_verify=1).briefing
    (inc,) = bf.increments
    assert not any(_states(t, v) for t in texts(inc) for v in ("2.1", "1.6", "13", "31"))
    pointers = [t for t in texts(inc) if "两份来源说法不一" in t]
    assert len(pointers) == 2 and len(bf.to_verify) == 1
    assert sum(t.endswith(f"（见待核实 {_circled(bf.to_verify[0].number)}）") for t in pointers) == 1


def test_both_disputed_figures_are_highlighted_in_their_documents() -> None:
    results = [
        written(A, claim(SUBJECT, "TTFT 降低 2.1×", "支持 vLLM 插件")),
        written(B, claim(SUBJECT, "TTFT 降低 1.6×")),
    ]
    composed = brief(*results)
    rec = run_record(composed, results, [r.doc for r in results], prompt="p", model="m")
    spans = {s.id: s for s in rec.spans}
    (it,) = rec.trace.increments
    (conflict,) = it.conflicts
    assert conflict.verify == composed.briefing.to_verify[0].number
    got = {(side.doc, spans[sid].quote, spans[sid].role) for side in conflict.sides for sid in side.spans}
    assert got == {(A.path, "2.1×", "figure"), (B.path, "1.6×", "figure")}


# --- sources the document names -----------------------------------------------------------------------

WRITTEN_URL = "https://blog.vllm.ai/2026/10/21/v0.23.html"


@pytest.mark.parametrize(
    ("url", "in_text", "stays"),
    [
        pytest.param(WRITTEN_URL, True, True, id="link-the-document-writes"),
        pytest.param(WRITTEN_URL + "/", True, True, id="trailing-slash"),
        pytest.param("https://vllm.ai/blog/kv-pin", False, False, id="link-the-document-does-not-write"),
        pytest.param("file:///etc/passwd", True, False, id="file-url-even-when-written"),
        pytest.param("../../etc/passwd", True, False, id="relative-path-even-when-written"),
        pytest.param("/etc/passwd", True, False, id="absolute-path-even-when-written"),
        pytest.param("Spheron Blog", False, True, id="plain-source-name"),
        pytest.param("github.com/vllm-project/vllm/releases", True, True, id="link-without-scheme"),
        pytest.param("javascript:alert(1)", True, False, id="script-url"),
        pytest.param(
            "etc/passwd",
            True,
            False,
            id="relative-path-without-dots",
        ),
    ],
)
def test_a_source_line_names_only_what_the_document_names(url: str, in_text: bool, stays: bool) -> None:
    d = doc("inbox/ivy/newsletter.md", f"见 {url.rstrip('/')} 。" if in_text else "newsletter")
    composed = brief(written(d, claim(TITLE, "移除 --enable-chunked-prefill", urls=[url])))
    (inc,) = composed.briefing.increments
    refs = [s.ref for s in inc.sources]
    assert (url in refs or url.rstrip("/") in refs) is stays
    assert not any("etc/passwd" in r for r in refs)
    dropped = [f for f in composed.findings if f.decision == "url dropped"]
    assert bool(dropped) is (not stays)
    if dropped:
        assert dropped[0].ref is not None and dropped[0].ref.doc == d.path


# --- decisions travel with the data (issue 20, item 2) ------------------------------------------------

TWO_CLAIMS = """# 推理工程过滤
## 一.1 LMCache 0.4
LMCache 0.4 发布，缓存命中率提升到 85%，多轮对话收益最大。
同一版本显存占用降低 30%，支持分层卸载到 CPU 与 SSD。
"""


def test_two_claims_of_one_section_merged_each_point_links_to_its_own_quotes() -> None:
    d = doc("inbox/jay/filter.md", TWO_CLAIMS)
    hit = claim("LMCache 0.4：缓存命中率", "缓存命中率提升到 85%", evidence=["缓存命中率提升到 85%，多轮对话收益最大"])
    mem = claim(
        "LMCache 0.4：显存与卸载",
        "显存占用降低 30%",
        "分层卸载到 CPU 与 SSD",
        evidence=["同一版本显存占用降低 30%", "支持分层卸载到 CPU 与 SSD"],
        stars=3,
    )
    results = [result(d, hit, mem)]
    composed = brief(*results)
    (inc,) = composed.briefing.increments
    rec = run_record(composed, results, [d], prompt="p", model="m")
    spans = {s.id: s.quote for s in rec.spans}
    (it,) = rec.trace.increments
    quotes_of = {p.path: [spans[s] for s in p.spans] for p in it.points}
    by_text = {t.text: quotes_of[path] for path, t in _paths(inc.key_points)}
    assert by_text["缓存命中率提升到 85%"] == ["缓存命中率提升到 85%，多轮对话收益最大"]
    assert by_text["显存占用降低 30%"] == ["同一版本显存占用降低 30%"]
    assert set(by_text["分层卸载到 CPU 与 SSD"]) <= set(mem.evidence)
    assert by_text["分层卸载到 CPU 与 SSD"]
    claim_of = {t.text: next(p.claim for p in it.points if p.path == path) for path, t in _paths(inc.key_points)}
    assert claim_of == {
        "缓存命中率提升到 85%": f"{d.path}#0",
        "显存占用降低 30%": f"{d.path}#1",
        "分层卸载到 CPU 与 SSD": f"{d.path}#1",
    }
    assert {c.ref for c in it.claims} == {f"{d.path}#0", f"{d.path}#1"}

    refs = {f.ref for f in rec.findings if f.ref}
    assert {f"{d.path}#0", f"{d.path}#1"} <= refs
    (merged,) = [f for f in rec.findings if f.decision == "merged"]
    assert (merged.ref, merged.target) == (f"{d.path}#1", f"{d.path}#0")
    reworded = [f.model_copy(update={"detail": "另一种说法"}) if f is merged else f for f in rec.findings]
    fate = claim_fate(reworded, merged.ref)  # followed by the merge's target, not its wording
    assert (fate.stage, fate.detail) == ("merged", f"into {hit.title!r} ({d.path}), which is increment")


def test_a_folded_point_in_the_run_record_names_its_claim_and_target() -> None:
    short = claim(TITLE, "移除 --enable-chunked-prefill 参数", stars=4)
    full = claim(TITLE, "移除 --enable-chunked-prefill 参数，改为默认开启，无别名", stars=5)
    results = [written(A, short), written(B, full)]
    composed = brief(*results)
    rec = run_record(composed, results, [r.doc for r in results], prompt="p", model="m")
    (fold,) = [f for f in rec.findings if f.decision == "point folded"]
    assert (fold.ref, fold.target) == (f"{A.path}#0", f"{B.path}#0")


def _paths(points: list[KeyPoint], prefix: str = "") -> list[tuple[str, KeyPoint]]:
    out = []
    for i, p in enumerate(points):
        out.append((f"{prefix}{i}", p))
        out.extend(_paths(p.children, f"{prefix}{i}."))
    return out


def test_a_supplements_point_its_anchor_already_says_is_dropped() -> None:
    """The floor prints a supplement's news, not yesterday's: a point whose every figure and flag its
    anchor states goes (a point naming something new, or stating no figure, stays)."""
    said = "- **SGLang v0.5.19 发布**（9-20）：吞吐提升 13%，`--enable-waterfill` 改名"
    anchor = Anchor("subject", "SGLang v0.5.19 发布", "SGLang v0.5.19 发布", DATE, "living/inference.md", text=said)
    points = ["吞吐 +13%", "新增 `--foo` 参数", "`--enable-waterfill` 改名，旧 flag 报错", "DeepSeek 专项优化"]
    cand = candidate(claim(TITLE, *points), A, 1, "高", relation="supplement", anchor=anchor)
    groups, _ = merge([cand])
    (g,), findings = edit(groups)
    assert [p.point.text for p in g.points] == ["新增 `--foo` 参数", "DeepSeek 专项优化"]
    assert sum("anchor already says" in f.detail for f in findings) == 2
