"""Each rule on small tables of cases: what it keeps, what it drops, and the reason it gives."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.core.text import locate
from agent.plan.anchors import Anchor, AnchorRegistry, OpenItem
from agent.rules.claims import DocResult, Group
from agent.rules.dedupe import dedupe, resolve
from agent.rules.edit import number_conflicts
from agent.rules.grounding import check_arxiv, ground
from agent.rules.merge import merge
from agent.rules.select import select
from schemas.briefing import KeyPoint, VerifyItem
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction, Resolution
from tests.paths import candidate

DATE = dt.date(2026, 9, 22)
DOC_TEXT = """# 工程过滤报告
## 条目 1：SGLang v0.5.19
- 两处 flag rename：`--enable-deepep-waterfill` → `--enable-waterfill`
- DeepSeek-V4 throughput 提升 >10%
## 条目 2：HookPoint
论文 arXiv:2605.11093v1，平均 overhead 3.6%，PyTorch hooks 平均 46.9%。
"""


def doc(path: str = "inbox/jay/2026-09-22-a.md", text: str = DOC_TEXT) -> SourceDoc:
    return SourceDoc(path=path, kind="report", agent="jay", in_window=True, read=True, text=text)


def claim(
    title: str = "SGLang v0.5.19 flag rename",
    *,
    evidence: tuple[str, ...] = ("DeepSeek-V4 throughput 提升 >10%",),
    points: tuple[str, ...] = ("DeepSeek-V4 throughput 提升 >10%",),
    arxiv: tuple[str, ...] = (),
    stars: int = 4,
    relation: str = "new",
    anchor: str = "",
    section: str = "§1.1 框架格局",
    cred: str = "高",
    ref: str = "§条目 1",
) -> Claim:
    return Claim(
        title=title,
        stars=stars,
        key_points=[KeyPoint(text=p) for p in points],
        evidence=list(evidence),
        section_ref=ref,
        arxiv=[ArxivRef(arxiv_id=a, title="paper") for a in arxiv],
        urls=[],
        credibility=cred,
        credibility_reason="release notes",
        relation=relation,
        anchor=anchor,  # type: ignore[arg-type]
        relation_note="note",
        suggested_section=section,
    )


def result(*claims: Claim, d: SourceDoc | None = None) -> DocResult:
    return DocResult(d or doc(), FileExtraction(relevance="高", relevance_reason="r", held="h", claims=list(claims)))


@pytest.mark.parametrize(
    ("c", "kept", "reason"),
    [
        pytest.param(claim(), True, "", id="exact-quote"),
        pytest.param(claim(evidence=("DeepSeek-V4   throughput\n提升 >10%",)), True, "", id="whitespace-folded"),
        pytest.param(
            claim(evidence=("HookPoint 平均 overhead 1.2%",)), False, "quote not in the document", id="invented-quote"
        ),
        pytest.param(claim(evidence=()), False, "no evidence", id="no-evidence"),
        pytest.param(claim(arxiv=("2609.99999",)), False, "not in the document", id="arxiv-not-in-doc"),
        pytest.param(
            claim(arxiv=("arXiv:2605.11093v2",), evidence=("平均 overhead 3.6%",)), True, "", id="arxiv-other-version"
        ),
    ],
)
def test_grounding(c: Claim, kept: bool, reason: str) -> None:
    cands, findings = ground([result(c)])
    assert bool(cands) is kept
    if not kept:
        assert findings and reason in findings[0].detail and findings[0].decision == "dropped"


@pytest.mark.parametrize(
    ("evidence", "points", "kept", "decisions"),
    [
        pytest.param(
            ("DeepSeek-V4 throughput 提升 >10%", "HookPoint 平均 overhead 1.2%"),
            ("DeepSeek-V4 throughput 提升 >10%",),
            True,
            ["quote dropped"],
            id="one-bad-quote-dropped-alone",
        ),
        pytest.param(
            ("DeepSeek-V4 throughput 提升 >10%", "HookPoint 平均 overhead 1.2%"),
            ("DeepSeek-V4 throughput 提升 >10%", "延迟降低 37%"),
            False,
            ["dropped"],
            id="bad-quote-and-stray-figure-drop-the-claim",
        ),
        pytest.param(
            ("两处 flag rename……throughput 提升 >10%",),
            ("DeepSeek-V4 throughput 提升 >10%",),
            True,
            ["quote elided"],
            id="elided-quote-marked",
        ),
    ],
)
def test_grounding_quote_by_quote(
    evidence: tuple[str, ...], points: tuple[str, ...], kept: bool, decisions: list[str]
) -> None:
    cands, findings = ground([result(claim(evidence=evidence, points=points))])
    assert bool(cands) is kept
    assert [f.decision for f in findings if f.rule == "grounding"] == decisions
    if kept:
        assert all(locate(q, DOC_TEXT).found for q in cands[0].claim.evidence)


def test_grounding_drops_a_key_point_with_an_invented_figure() -> None:
    c = claim(points=("DeepSeek-V4 throughput 提升 >10%", "延迟降低 37%"))
    cands, findings = ground([result(c)])
    assert [p.text for p in cands[0].claim.key_points] == ["DeepSeek-V4 throughput 提升 >10%"]
    assert any("37%" in f.detail for f in findings)


@pytest.mark.parametrize(
    ("raw", "ok", "reason"),
    [
        pytest.param("2605.11093v1", True, "", id="valid"),
        pytest.param("2613.11093", False, "month", id="month-13"),
        pytest.param("2610.00001", False, "after", id="after-briefing-date"),
        pytest.param("1405.12345", False, "", id="five-digits-before-2015"),
    ],
)
def test_arxiv_check(raw: str, ok: bool, reason: str) -> None:
    c = candidate(claim(arxiv=(raw,)), doc(), 1, "高")
    out, rejected, findings = check_arxiv([c], DATE)
    assert [x for _, x in rejected] == ([] if ok else [raw])
    assert bool(out[0].claim.arxiv) is ok
    if not ok:
        assert findings and reason in findings[0].detail


def registry(*anchors: Anchor) -> AnchorRegistry:
    return AnchorRegistry(topic="inference", date=DATE, anchors=anchors, open_items=(), sections=("§1.1 框架格局",))


SGLANG = Anchor(
    "subject",
    "SGLang v0.5.19 发布",
    "SGLang v0.5.19 发布",
    dt.date(2026, 9, 20),
    "inbox/tom/2026-09-20-inference-e1prep.md",
    text="SGLang v0.5.19 发布 DeepSeek-V4 throughput 提升 >10%",
)
HOOK = Anchor("arxiv", "2605.11093", "HookPoint", dt.date(2026, 9, 18), "inbox/tom/x.md", text="HookPoint 3.6%")


@pytest.mark.parametrize(
    ("c", "anchors", "fate", "detail"),
    [
        pytest.param(claim(title="vLLM FP8 KV-Cache"), (SGLANG,), "new", "", id="no-anchor"),
        pytest.param(
            claim(title="SGLang v0.5.19 发布更新"), (SGLANG,), "covered", "no figure", id="same-subject-nothing-new"
        ),
        pytest.param(
            claim(
                title="SGLang v0.5.19 破坏性 flag rename", points=("--enable-deepep-waterfill → --enable-waterfill",)
            ),
            (SGLANG,),
            "supplement",
            "--enable-waterfill",
            id="same-subject-new-flag",
        ),
        pytest.param(
            claim(title="HookPoint", arxiv=("2605.11093v1",), points=("平均 overhead 3.6%",)),
            (HOOK,),
            "covered",
            "",
            id="same-arxiv-same-number",
        ),
        pytest.param(
            claim(title="HookPoint", arxiv=("2605.11093v1",), points=("PyTorch hooks 平均 46.9%",)),
            (HOOK,),
            "supplement",
            "46.9%",
            id="same-arxiv-new-number",
        ),
        pytest.param(
            claim(title="vLLM 0.21", relation="covered", anchor="vLLM 0.21 发布"),
            (SGLANG,),
            "new",
            "no anchor matches",
            id="model-says-covered-without-anchor",
        ),
        pytest.param(
            claim(
                title="SGLang v0.5.19 破坏性",
                relation="covered",
                anchor="SGLang v0.5.19 发布",
                points=("--enable-waterfill",),
            ),
            (SGLANG,),
            "covered",
            "model judged",
            id="model-says-covered",
        ),
    ],
)
def test_dedupe(c: Claim, anchors: tuple[Anchor, ...], fate: str, detail: str) -> None:
    kept, covered, findings = dedupe([candidate(c, doc(), 1, "高")], registry(*anchors))
    got = covered[0].relation if covered else kept[0].relation
    assert got == fate
    if detail:
        assert any(detail in f.detail for f in findings)


def _agents_sdk(name: str) -> Anchor:
    """A release anchored on 11-12, named as `name` ('OpenAI Agents SDK 0.15.2', 'openai-agents 0.15.2')."""
    said = f"{name}（11-12）：修复 `RedisSession` 在流式运行中重复写入最后一轮。"
    return Anchor("subject", name, name, dt.date(2026, 11, 12), "living/agents.md", text=said)


# The week demo's 11-17 (examples/week): the release watch names the package, the living document the product.
@pytest.mark.parametrize(
    ("title", "anchor", "cited", "fate", "detail"),
    [
        pytest.param(
            "openai-agents 0.16.0：SandboxTool 与出网白名单",
            "OpenAI Agents SDK 0.15.2",
            "A1",
            "new",
            "a new version of OpenAI Agents SDK 0.15.2",
            id="package-name-newer-version-of-product-anchor",
        ),
        pytest.param(
            "OpenAI Agents SDK 0.16.0：SandboxTool 转正",
            "openai-agents 0.15.2",
            "A1",
            "new",
            "a new version of openai-agents 0.15.2",
            id="product-name-newer-version-of-package-anchor",
        ),
        pytest.param(
            "openai-agents 0.15.2 修复 RedisSession",
            "OpenAI Agents SDK 0.15.2",
            "",
            "covered",
            "OpenAI Agents SDK 0.15.2",
            id="package-name-same-release-found-uncited",
        ),
        pytest.param(
            "OpenAI Python SDK 1.3.0：SandboxTool 与出网白名单",
            "OpenAI Agents SDK 0.15.2",
            "A1",
            "supplement",
            "adds",
            id="another-sdk-is-no-new-version",
        ),
    ],
)
def test_a_new_version_is_new_however_its_product_is_named(
    title: str, anchor: str, cited: str, fate: str, detail: str
) -> None:
    """`NOVELTY`'s "new": a newer release of the anchored product, whether a title names the
    package or the product, is new with the anchor as its predecessor, never a supplement of it."""
    points = (
        ("新增 `tool_output_guardrails`，要求 Python ≥ 3.10",)
        if fate != "covered"
        else ("修复 `RedisSession` 重复写入",)
    )
    c = claim(title=title, points=points, evidence=points, relation="supplement" if cited else "new", anchor=cited)
    kept, covered, findings = dedupe([candidate(c, doc(), 1, "高")], registry(_agents_sdk(anchor)))
    (got,) = [*kept, *covered]
    assert got.relation == fate
    assert [f.decision for f in findings] == [fate if fate != "covered" else "already covered"]
    assert detail in findings[0].detail


def test_merge_same_arxiv_across_documents_and_not_across_sections_of_one() -> None:
    a = candidate(claim(title="HookPoint 可观测性", arxiv=("2605.11093v1",)), doc("inbox/jay/a.md"), 1, "高")
    b = candidate(claim(title="模型内部观测", arxiv=("2605.11093",)), doc("inbox/jay/b.md"), 2, "高")
    c = candidate(claim(title="HookPoint 可观测性 v2", ref="§条目 4"), doc("inbox/jay/a.md"), 3, "高")
    groups, findings = merge([a, b, c])
    assert [len(g.members) for g in groups] == [2, 1]
    assert findings[0].decision == "merged"


TGI = Anchor("subject", "TGI 已死", "TGI 已死", dt.date(2026, 9, 21), "inbox/tom/2026-09-21-inference-e1prep.md")


# The two SGLang claims are the relayed answer for inbox/jay/2026-09-22-inference-engineering-filter.md
# (cassettes/world-relayed): the model split the v0.5.19 release from its DSV4 / CUDA Graph features.
@pytest.mark.parametrize(
    ("second", "anchors", "one"),
    [
        pytest.param(
            ("SGLang v0.5.19：DSV4 优化、CUDA Graph 与修复", "§条目 1.2–1.4；§条目 3"),
            (SGLANG, SGLANG),
            True,
            id="release-and-feature-same-anchor",
        ),
        pytest.param(
            ("TGI 迁移：DSV4 优化、CUDA Graph 与修复", "§条目 1.2–1.4；§条目 3"),
            (SGLANG, TGI),
            False,
            id="different-anchors",
        ),
        pytest.param(
            ("SGLang v0.5.19：DSV4 优化、CUDA Graph 与修复", "§条目 3"),
            (SGLANG, SGLANG),
            True,
            id="one-release-other-section",
        ),
        pytest.param(("端侧推理：DSV4 优化", "§条目 3"), (None, None), False, id="other-section-other-subject"),
        pytest.param(
            ("SGLang v0.5.20：DSV4 优化", "§条目 1.2"), (SGLANG, SGLANG), False, id="next-release-same-section"
        ),
        pytest.param(("SGLang v0.5.19：DSV4 优化", "§条目 1.2"), (None, None), True, id="unanchored-like-subject"),
        pytest.param(("端侧多 agent：Q4 KV Cache 持久化", "§条目 1.4"), (None, None), False, id="unanchored-unlike"),
    ],
)
def test_one_release_split_into_two_claims_is_one_increment(
    second: tuple[str, str], anchors: tuple[Anchor | None, Anchor | None], one: bool
) -> None:
    d = doc("inbox/jay/2026-09-22-inference-engineering-filter.md")
    a = candidate(
        claim(title="SGLang v0.5.19 破坏性 flag 改名（无别名）", ref="§条目 1.1；§条目 1.5"),
        d,
        1,
        "高",
        anchor=anchors[0],
    )
    b = candidate(claim(title=second[0], ref=second[1], stars=3), d, 2, "高", anchor=anchors[1])
    groups, _ = merge([a, b])
    assert len(groups) == (1 if one else 2)
    if one:
        assert groups[0].lead is a and [c.claim.section_ref for c in groups[0].members] == [
            "§条目 1.1；§条目 1.5",
            second[1],
        ]


def _group(title: str, stars: int, order: int, section: str = "§1.1 x", cred: str = "高") -> Group:
    return Group(
        (
            candidate(
                claim(title=title, stars=stars, section=section, cred=cred), doc(f"inbox/jay/{order}.md"), order, "高"
            ),
        )
    )


@pytest.mark.parametrize(
    ("stars", "n_inc", "n_sec"),
    [
        pytest.param([4] * 10, 8, 2, id="over-eight-become-secondary"),
        pytest.param([4, 4, 3, 2], 2, 1, id="under-three-not-padded"),
        pytest.param([5, 4, 4, 1], 3, 0, id="noise-dropped"),
        pytest.param([4] * 3 + [3] * 12, 3, 8, id="a-long-tail-of-secondaries-is-cut-at-eight"),
        pytest.param([4] * 12 + [3] * 2, 8, 6, id="past-the-limit-increments-first"),
    ],
)
def test_select(stars: list[int], n_inc: int, n_sec: int) -> None:
    groups = [_group(f"t{i}", s, i) for i, s in enumerate(stars)]
    sel = select(groups, min_stars=4, secondary_min_stars=3, max_increments=8, max_secondary=8)
    assert (len(sel.increments), len(sel.secondary)) == (n_inc, n_sec)
    assert len(sel.findings) == len(stars)
    cut = [f for f in sel.findings if "secondary anchors" in f.detail]
    assert len(cut) == len(stars) - n_inc - n_sec - sum(s < 3 for s in stars)  # the rest is noise
    assert all(g.stars >= 3 for g in sel.secondary)


def test_select_orders_by_section_then_rank() -> None:
    groups = [
        _group("kv", 5, 1, "§1.3 KV Cache"),
        _group("fw", 4, 2, "§1.1 框架格局"),
        _group("obs", 4, 3, "§1.4 新区块"),
    ]
    sel = select(groups, min_stars=4, secondary_min_stars=3, max_increments=8)
    assert [g.lead.claim.title for g in sel.increments] == ["fw", "kv", "obs"]


def test_select_prefers_credibility_at_equal_stars() -> None:
    groups = [_group(f"low{i}", 4, i, cred="低") for i in range(8)] + [_group("high", 4, 99, cred="高")]
    sel = select(groups, min_stars=4, secondary_min_stars=3, max_increments=8)
    assert "high" in [g.lead.claim.title for g in sel.increments]


def test_number_conflicts_between_documents() -> None:
    a = candidate(claim(points=("SGLang ~16,200 tok/s",)), doc("inbox/jay/a.md"), 1, "高")
    b = candidate(claim(points=("SGLang 15,800 tok/s",)), doc("inbox/jay/b.md"), 2, "高")
    same = candidate(claim(points=("SGLang ~16,200 tok/s",)), doc("inbox/jay/c.md"), 3, "高")
    (conflict,) = number_conflicts(Group((a, b)), "SGLang")
    sides = [(s.doc, s.values) for s in conflict.sides]
    assert (conflict.measure, conflict.unit) == ("SGLang", "tok/s")
    assert sides == [("inbox/jay/a.md", ("16200",)), ("inbox/jay/b.md", ("15800",))]
    assert number_conflicts(Group((a, same)), "SGLang") == []


COLIBRI = OpenItem(
    VerifyItem(
        number=4,
        title="colibri GLM-5.2 支持范围和实测性能",
        risk="低",
        carried_from="9-21",
        problem="p",
        suggestion="s",
    ),
    origin="9-21",
    source="inbox/tom/2026-09-21-inference-e1prep.md",
)
SETTLED = "colibri 仓库 README 已列出 GLM-5.2 完整支持矩阵"


@pytest.mark.parametrize(
    ("res", "kind", "fate"),
    [
        pytest.param(
            Resolution(item="colibri GLM-5.2 支持范围和实测性能", how="h", evidence=SETTLED),
            "report",
            "resolved",
            id="quoted-and-open",
        ),
        pytest.param(
            Resolution(item="colibri GLM-5.2 支持范围", how="h", evidence=SETTLED),
            "report",
            "resolved",
            id="title-slightly-reworded",
        ),
        pytest.param(
            Resolution(item="colibri GLM-5.2 支持范围和实测性能", how="h", evidence="仓库确认支持全部模型"),
            "report",
            "not resolved",
            id="quote-not-in-document",
        ),
        pytest.param(
            Resolution(item="vLLM 0.21 发布日期", how="h", evidence=SETTLED), "report", "ignored", id="not-an-open-item"
        ),
        pytest.param(
            Resolution(item="colibri GLM-5.2 支持范围和实测性能", how="h", evidence=SETTLED),
            "adjacent",
            None,
            id="adjacent-briefings-do-not-resolve",
        ),
    ],
)
def test_resolve(res: Resolution, kind: str, fate: str | None) -> None:
    d = doc(text=f"# 报告\n{SETTLED}，实测 1.06 tok/s。").model_copy(update={"kind": kind})
    ex = FileExtraction(relevance="高", relevance_reason="r", held="h", resolved=[res])
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(COLIBRI,), sections=())
    done, findings = resolve([DocResult(d, ex)], reg)
    assert [f.decision for f in findings] == ([fate] if fate else [])
    assert bool(done) is (fate == "resolved")


def test_a_resolved_item_leaves_section_three_and_is_said_in_five() -> None:
    from agent.rules.compose import Limits, compose

    d = doc(text=f"# 报告\n{SETTLED}。")
    ex = FileExtraction(
        relevance="中",
        relevance_reason="r",
        held="h",
        resolved=[Resolution(item=COLIBRI.item.title, how="支持矩阵已公开", evidence=SETTLED)],
    )
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(COLIBRI,), sections=())
    b = compose([DocResult(d, ex)], reg, [], topic="inference", date=DATE, window="w", limits=Limits()).briefing
    assert b.to_verify == []
    assert any("已核实：colibri GLM-5.2 支持范围和实测性能（支持矩阵已公开）" in n.note for n in b.no_increment)
    # the living document still marks its anchor 待核实: a row of 六 asks E2 to take the mark off
    (row,) = b.priorities
    assert row.content == f"colibri GLM-5.2 支持范围和实测性能（{COLIBRI.origin} 待核实，今晚已核实）"
    assert row.action == "更新对应锚点，去掉待核实标注"


def test_a_question_settled_by_an_increment_is_said_on_its_row_of_six() -> None:
    """The document that settles the question is a source of an increment about it: one row of 六
    for the subject, its action taking the mark off too, not a second row."""
    from agent.rules.compose import Limits, compose

    said = "colibri GLM-5.2 支持矩阵公布，实测 1.06 tok/s"
    d = doc(text=f"# 报告\n{SETTLED}。\n{said}。")
    ex = FileExtraction(
        relevance="高",
        relevance_reason="r",
        held="h",
        claims=[claim("colibri GLM-5.2 支持范围与实测性能公布", evidence=(said,), points=(said,))],
        resolved=[Resolution(item=COLIBRI.item.title, how="支持矩阵已公开", evidence=SETTLED)],
    )
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(COLIBRI,), sections=())
    b = compose([DocResult(d, ex)], reg, [], topic="inference", date=DATE, window="w", limits=Limits()).briefing
    (row,) = b.priorities
    assert row.content == f"{b.increments[0].title}（{COLIBRI.origin} 待核实，今晚已核实）"
    assert row.action == "写入 §1.1 框架格局，去掉待核实标注"


# The model labels are the relayed answers' (cassettes/world-relayed): a real model said 中 for four
# mixed reports that carry on-topic claims, 邻接 for a card with nothing on-topic, 中 for the risk
# briefing of the same evening.
@pytest.mark.parametrize(
    ("path", "kind", "model", "on_topic", "strong", "label"),
    [
        ("inbox/jay/2026-09-22-database-backend-cloudnative-inference.md", "report", "中", 3, 3, "高"),
        ("inbox/jay/2026-09-22-1505-jay-five-category-evening-briefing.md", "report", "中", 1, 1, "高"),
        ("inbox/jay/2026-09-22-inference-engineering-filter.md", "report", "高", 4, 4, "高"),
        ("inbox/jay/2026-09-22-x.md", "report", "中", 0, 0, "中"),  # nothing grounded: the model's word stands
        ("inbox/jay/2026-09-22-y.md", "report", "中", 1, 0, "中"),  # one 2–3★ side mention raises nothing
        ("inbox/jay/2026-09-22-y.md", "report", "邻接", 2, 0, "高"),  # two side mentions are the topic's
        ("inbox/flyp/2026-09-22-risk-e1prep.md", "adjacent", "中", 2, 2, "邻接"),
        ("paper_cards/2026-09-22/1432-2609-19499.md", "paper_card", "邻接", 0, 0, "参考"),
        ("paper_cards/2026-09-22/1432-2609-19499.md", "paper_card", "中", 1, 1, "中"),
        ("work-queue/2026-09-22-2200.md", "queue", "参考", 0, 0, "参考"),
    ],
)
def test_relevance_is_derived_from_what_a_source_carried(
    path: str, kind: str, model: str, on_topic: int, strong: int, label: str
) -> None:
    from agent.rules.select import relevance

    d = SourceDoc(path=path, kind=kind, agent="jay", in_window=True, read=True, text="x")
    got, finding = relevance(d, FileExtraction(relevance=model, relevance_reason="r", held="h"), on_topic, strong)
    assert got == label
    assert (finding is not None) is (label != model)
    if finding is not None:
        assert finding.decision == "relabelled" and finding.detail.startswith(label)
        assert f"the model said {model}" in finding.detail
