"""The forms a real model writes, normalised or matched by the rules.

Every claim here is a claim of the relayed answers (cassettes/world-relayed: a real model's blind
answers to the demo evening), with one field written in another form a model uses — the anchor
named as the prompt lists it, an ID with its `arXiv:` prefix, a URL without its scheme, an
anchored subject marked `new` — and the rules must decide exactly as they do on the answer as given.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.extract.llm.cassettes import CassetteIndex
from agent.extract.llm.reference import extraction_from_completion
from agent.pipeline import Evening, Settings, plan
from agent.plan.anchors import AnchorRegistry
from agent.rules.claims import DocResult
from agent.rules.dedupe import dedupe, match_anchor, resolve
from agent.rules.grounding import check_arxiv, ground
from agent.rules.merge import merge
from schemas.documents import SourceDoc
from schemas.extraction import Claim, FileExtraction, Resolution
from tests.paths import ROOT, WORLD, candidate
from tests.test_rules import COLIBRI as ITEM
from tests.test_rules import SETTLED

DATE = dt.date(2026, 9, 22)
RELAYED = ROOT / "cassettes" / "world-relayed"
FILTER = "inbox/jay/2026-09-22-inference-engineering-filter.md"
OBSERVE = "inbox/jay/2026-09-22-1450-jay-engineering-filter.md"


@pytest.fixture(scope="module")
def evening() -> Evening:
    return plan(Settings(workspace=WORLD, topic="inference", date=DATE, cassette_dir=RELAYED), for_writing=False)


@pytest.fixture(scope="module")
def answers() -> dict[str, FileExtraction]:
    index = CassetteIndex.load(Path(RELAYED))
    return {
        c.provenance.document: extraction_from_completion(c.exchange.response_body)
        for c in index.all()
        if not c.provenance.document.startswith("compose/")  # the folder's composing answer is no document's
    }


def _doc(p: Evening, path: str) -> SourceDoc:
    return next(d for d in p.docs if d.path == path)


def _sglang(answers: dict[str, FileExtraction]) -> Claim:
    claim = answers[FILTER].claims[0]
    assert claim.title.startswith("SGLang v0.5.19") and claim.anchor == "SGLang v0.5.19 发布"
    return claim


@pytest.mark.parametrize(
    ("anchor", "relation"),
    [
        ("SGLang v0.5.19 发布", "supplement"),  # as given
        ("SGLang v0.5.19 发布 · 9-20", "supplement"),  # as the prompt's anchor list writes it
        ("[subject] SGLang v0.5.19 发布 · 9-20", "supplement"),
        ("SGLang v0.5.19 发布（9-20）", "supplement"),
        ("SGLang v0.5.19 发布（9-20 锚定）", "supplement"),
        ("", "new"),  # an anchored subject marked new
    ],
)
def test_anchor_names_in_every_form_find_the_anchor(
    evening: Evening, answers: dict[str, FileExtraction], anchor: str, relation: str
) -> None:
    claim = _sglang(answers).model_copy(update={"anchor": anchor, "relation": relation, "urls": []})
    c = candidate(claim, _doc(evening, FILTER), 1, "高")
    found = match_anchor(c, evening.registry)
    assert found is not None and found.key == "SGLang v0.5.19 发布"
    kept, covered, _ = dedupe([c], evening.registry)
    assert [k.relation for k in kept] == ["supplement"] and covered == []


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/sgl-project/sglang/releases",
        "github.com/sgl-project/sglang/releases",
        "www.github.com/sgl-project/sglang/releases/",
    ],
)
def test_urls_with_or_without_scheme(evening: Evening, answers: dict[str, FileExtraction], url: str) -> None:
    claim = _sglang(answers).model_copy(update={"anchor": "", "relation": "new", "urls": [url]})
    a = candidate(claim, _doc(evening, FILTER), 1, "高")
    found = match_anchor(a, evening.registry)
    assert found is not None and found.kind == "url"
    other = answers[OBSERVE].claims[0].model_copy(update={"urls": ["https://github.com/sgl-project/sglang/releases"]})
    groups, _ = merge([a, candidate(other, _doc(evening, OBSERVE), 2, "高")])
    assert len(groups) == 1  # one subject across documents, however the link is written


@pytest.mark.parametrize("written", ["2605.11093v1", "arXiv:2605.11093v1", "arxiv: 2605.11093v1", "2605.11093"])
def test_arxiv_ids_as_models_write_them(evening: Evening, answers: dict[str, FileExtraction], written: str) -> None:
    hook = answers[OBSERVE].claims[0]
    assert hook.arxiv[0].arxiv_id == "2605.11093v1"
    claim = hook.model_copy(update={"arxiv": [hook.arxiv[0].model_copy(update={"arxiv_id": written})]})
    ex = answers[OBSERVE].model_copy(update={"claims": [claim]})
    cands, findings = ground([DocResult(_doc(evening, OBSERVE), ex)])
    assert len(cands) == 1, findings
    checked, _, findings = check_arxiv(cands, DATE)
    assert findings == [] and checked[0].arxiv_keys == {"2605.11093"}


@pytest.mark.parametrize(
    "named",
    [
        "colibri GLM-5.2 支持范围和实测性能",
        "colibri GLM-5.2 支持范围和实测性能（since 9-21）",  # as the prompt lists open items
        "colibri GLM-5.2 支持范围和实测性能（9-21 起，低风险）",
        "矛盾/待核实 ①：colibri GLM-5.2 支持范围和实测性能（低风险，延续自 9-21）",
    ],
)
def test_resolved_items_named_with_or_without_their_marks(named: str) -> None:
    d = SourceDoc(
        path="inbox/jay/x.md", kind="report", agent="jay", in_window=True, read=True, text=f"# x\n{SETTLED}。"
    )
    ex = FileExtraction(
        relevance="中", relevance_reason="r", held="h", resolved=[Resolution(item=named, how="h", evidence=SETTLED)]
    )
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(ITEM,), sections=())
    done, _ = resolve([DocResult(d, ex)], reg)
    assert [x.title for x in done] == [ITEM.item.title]


# Each document's call proposes its own new block. The first two sections are the relayed
# answers' own (HookPoint and the bug study, 1450 filter); the others are the same answers'
# claims with the section another call could have proposed.
@pytest.mark.parametrize(
    ("proposed", "expected"),
    [
        (
            ["§1.4 推理可观测性与可靠性（新增）", "§1.4 推理可观测性与可靠性（新增）"],
            ["§1.4 推理可观测性与可靠性（新增）", "§1.4 推理可观测性与可靠性（新增）"],
        ),
        (  # two blocks under one number: the weaker one is renumbered
            ["§1.4 推理可观测性与可靠性（新增）", "§1.4 推理 Kernel 与硬件实测（新块）"],
            ["§1.4 推理可观测性与可靠性（新增）", "§1.5 推理 Kernel 与硬件实测（新块）"],
        ),
        (  # one block under two numbers: one number
            ["§1.4 推理可观测性与可靠性（新增）", "§1.5 推理可观测性与可靠性"],
            ["§1.4 推理可观测性与可靠性（新增）", "§1.4 推理可观测性与可靠性"],
        ),
        (  # a living section keeps its number; a new block may not take it
            ["§1.2 KV Cache（引擎层压缩）", "§1.3 投机解码（新块）"],
            ["§1.3 KV Cache（引擎层压缩）", "§1.4 投机解码（新块）"],
        ),
    ],
)
def test_new_sections_proposed_by_different_documents_are_reconciled(
    evening: Evening, answers: dict[str, FileExtraction], proposed: list[str], expected: list[str]
) -> None:
    from agent.rules.claims import Group
    from agent.rules.select import reconcile_sections

    hook, bugs = answers[OBSERVE].claims[:2]
    assert hook.suggested_section == bugs.suggested_section == "§1.4 推理可观测性与可靠性（新增）"
    groups = [
        Group(
            (candidate(c.model_copy(update={"suggested_section": s, "stars": 4 - i}), _doc(evening, OBSERVE), i, "高"),)
        )
        for i, (c, s) in enumerate(zip((hook, bugs), proposed, strict=True))
    ]
    out, findings = reconcile_sections(groups, evening.registry.sections)
    assert [g.lead.claim.suggested_section for g in out] == expected
    assert len(findings) == sum(a != b for a, b in zip(proposed, expected, strict=True))
