"""Anchors and open items under ids: what a prompt lists, what an answer cites, what the rules read.

A prompt lists one subject a line under an id ('A7 · name · evenings · holds: facts') and the open
items under theirs ('Q2 · question · since 9-21'); an answer cites the ids, an id not listed is an
invalid answer (re-asked), and the id the answer cites is the anchor or item the rules then read.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re

import pytest
from pydantic import ValidationError

from agent.core.novelty import NOVELTY
from agent.core.settings import Settings
from agent.extract import ExtractionRequest
from agent.extract.llm.cassettes import CassetteIndex
from agent.extract.llm.reference import answer_from_completion
from agent.extract.prompting import SHARED, anchor_name, listed_in
from agent.pipeline import Evening, as_shared, plan, plan_topics
from agent.plan.anchors import Anchor, AnchorRegistry, OpenItem, same_subject
from agent.rules.claims import DocResult
from agent.rules.dedupe import dedupe, match_anchor, resolve
from schemas.briefing import VerifyItem
from schemas.extraction import FileExtraction, Resolution, SharedExtraction, TopicReading, cited_id
from tests.paths import ROOT, WORLD, candidate
from tests.test_rules import DATE, claim, doc

_LINE = re.compile(r"^- ([AQ]\d+) · (.+)$", re.M)


def _evening(topic: str = "inference") -> Evening:
    return plan(Settings(workspace=WORLD, topic=topic, date=dt.date(2026, 9, 22)), for_writing=False)


def _lines(request: ExtractionRequest, section: str = "") -> list[tuple[str, str]]:
    """The (id, rest) lines of a request's user message (after `section`'s heading, when given)."""
    text = request.messages[1]["content"]
    if section:
        text = text.split(f"#### {section}\n", 1)[1].split("\n####", 1)[0]
    return _LINE.findall(text)


def test_every_anchor_and_item_a_prompt_lists_has_an_id_that_round_trips_to_what_the_rules_read() -> None:
    ev = _evening()
    reg = ev.registry
    assert reg.briefed_items, "the demo evening has open items to list"
    for request in ev.requests:
        lines = _lines(request)
        ids = [i for i, _ in lines]
        assert len(ids) == len(set(ids)) and tuple(ids) == request.listed["inference"], request.doc_path
        for ident, rest in lines:
            if ident.startswith("A"):
                anchor = reg.by_id(ident)
                assert anchor is not None and reg.anchor_id(anchor) == ident
                named = [a.label for a in reg.told(anchor) if a.kind == "subject"]
                assert not named or rest.startswith(named[0]), (ident, rest)
            else:
                item = reg.item_by_id(ident)
                assert item is not None and rest.startswith(item.item.title)


def test_one_subject_is_one_line_with_the_evenings_that_told_it() -> None:
    ev = _evening()
    request = next(r for r in ev.requests if r.doc_path.endswith("1050-jay-engineering-filter.md"))
    names = [rest.split(" · ")[0] for i, rest in _lines(request) if i.startswith("A")]
    # the release was anchored twice on 9-20 under two titles, the decision framework twice: one line each
    assert sum("SGLang v0.5.19 发布" in n for n in names) == 1, names
    assert sum("决策框架" in n for n in names) == 1, names


def test_a_shared_prompt_lists_each_topics_ids_under_that_topic() -> None:
    topics = ["inference", "llm-infra", "risk"]
    s = as_shared(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22)))
    es = plan_topics(s, topics, for_writing=False)
    registries = {ev.settings.topic: ev.registry for ev in es.evenings}
    assert es.shared
    for request in es.shared:
        assert set(request.listed or {}) == set(request.topics)  # ids listed for the topics asked only
        for topic in request.topics:
            lines = _lines(request, topic)
            anchors = tuple(i for i, _ in lines)
            items = tuple(registries[topic].item_id(o) for o in registries[topic].briefed_items)
            assert anchors + items == request.listed[topic]
            assert all(registries[topic].by_id(i) is not None for i in anchors)


def test_a_request_is_read_back_for_what_each_id_it_lists_names() -> None:
    """`listed_in` reads from a request's text the ids it lists, each with its subject: the anchor's
    name as its line gives it, the item's title. Rekey reads a stored request so, to carry a cited id."""
    ev = _evening()
    reg = ev.registry
    for request in ev.requests:
        listing = listed_in(request.messages).get("")
        assert listing is not None and (*listing.anchors, *listing.items) == request.listed["inference"]
        for ident, name in listing.anchors.items():
            assert name == anchor_name(reg.told(reg.by_id(ident))), ident  # type: ignore[arg-type]
        assert [reg.item_by_id(i).item.title for i in listing.items] == list(listing.items.values())  # type: ignore[union-attr]
    s = as_shared(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22)))
    for request in plan_topics(s, ["inference", "llm-infra", "risk"], for_writing=False).shared:
        listed = listed_in(request.messages)
        for topic in request.topics:  # a topic's anchors from the user message, its items from the system message
            read = (*listed[topic].anchors, *listed[topic].items) if topic in listed else ()
            assert read == request.listed[topic], (request.doc_path, topic)


_ONE_TOPIC_USER = "\n".join(
    [
        "Evening: 2026-09-22 · topic: inference",
        "Anchors already known (id · subject · evenings · facts):",
        "- A3 · vLLM v0.23.0 发布 · arXiv 2609.12923 · 9-20, 9-21 · holds: 3.1×, h100",
        "- A7 · colibri · living",
        "- A8 · 不是一行锚点",
        "Open to-verify items from earlier briefings:",
        "- Q2 · colibri 支持范围 · since 9-21",
        "- Q3 · 没有日期的问题 · since ",  # a living document's question without a day
        "",
        '<document path="x.md">',
        "- A1 · 文档里的一行 · 9-20",
        "</document>",
    ]
)
_SHARED_SYSTEM = """### Topic "inference"
Open to-verify items from its earlier briefings:
- Q1 · colibri 支持范围 · since 9-21

### Topic "risk"
Open to-verify items from its earlier briefings:
(none)"""
_SHARED_USER = """Anchors already known, per topic:
#### inference
- A2 · SGLang v0.5.19 发布 · 9-20
#### risk
(none that match this document)

<document path="x.md">
#### inference
- A9 · 文档里的一行 · 9-20
</document>"""


@pytest.mark.parametrize(
    ("system", "user", "read"),
    [
        pytest.param(
            "",
            _ONE_TOPIC_USER,
            {
                "": (
                    {"A3": "vLLM v0.23.0 发布 · arXiv 2609.12923", "A7": "colibri"},
                    {"Q2": "colibri 支持范围", "Q3": "没有日期的问题"},
                )
            },
            id="one-topic",
        ),
        pytest.param(
            _SHARED_SYSTEM,
            _SHARED_USER,
            {"inference": ({"A2": "SGLang v0.5.19 发布"}, {"Q1": "colibri 支持范围"})},
            id="shared",
        ),
    ],
)
def test_listed_lines_are_read_per_topic_and_the_documents_own_lines_are_not(
    system: str, user: str, read: dict[str, tuple[dict[str, str], dict[str, str]]]
) -> None:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    assert {t: (x.anchors, x.items) for t, x in listed_in(messages).items()} == read


def _cited_ids(reading: FileExtraction | TopicReading) -> list[str]:
    return [i for i in map(cited_id, [*(c.anchor for c in reading.claims), *(r.item for r in reading.resolved)]) if i]


def test_every_id_a_committed_answer_cites_is_read_back_from_its_own_request() -> None:
    """What each committed answer's ids name is found in its stored request: rekey can carry every one."""
    cited = 0
    for folder in sorted(p for p in (ROOT / "cassettes").iterdir() if p.is_dir()):
        for c in CassetteIndex.load(folder).all():
            if c.provenance.document.startswith("compose/"):
                continue
            schema = SharedExtraction if c.provenance.prompt.startswith(f"{SHARED}@") else FileExtraction
            answer = answer_from_completion(c.exchange.response_body, schema)
            listed = listed_in(c.exchange.request_body["messages"])
            parts = answer.topics if isinstance(answer, SharedExtraction) else [answer]
            for part in parts:
                topic = part.topic if isinstance(part, TopicReading) else ""
                for ident in _cited_ids(part):
                    cited += 1
                    assert topic in listed and listed[topic].subject(ident), (c.path.name, topic, ident)
    assert cited, "the committed answers cite ids"


def _answer(anchor: str = "", item: str = "") -> dict[str, object]:
    c = claim(relation="supplement" if anchor else "new", anchor=anchor).model_dump()
    resolved = [{"item": item, "how": "h", "evidence": "e"}] if item else []
    return {"relevance": "高", "relevance_reason": "r", "held": "h", "claims": [c], "resolved": resolved}


def _part(topic: str, anchor: str) -> dict[str, object]:
    return {"topic": topic, **{k: v for k, v in _answer(anchor).items() if k != "held"}}


@pytest.mark.parametrize(
    ("anchor", "item", "valid"),
    [
        pytest.param("", "", True, id="cites-nothing"),
        pytest.param("A1", "", True, id="listed-anchor"),
        pytest.param("", "Q1", True, id="listed-item"),
        pytest.param("SGLang v0.5.19 发布", "", True, id="a-name-is-read-by-name"),
        pytest.param("A999", "", False, id="unlisted-anchor"),
        pytest.param("", "Q9", False, id="unlisted-item"),
    ],
)
def test_an_answer_citing_an_id_its_prompt_did_not_list_is_invalid(anchor: str, item: str, valid: bool) -> None:
    context = {"listed": {"inference": ["A1", "Q1"]}}
    if valid:
        FileExtraction.model_validate(_answer(anchor, item), context=context)
    else:
        with pytest.raises(ValidationError, match="not listed in the prompt"):
            FileExtraction.model_validate(_answer(anchor, item), context=context)


def test_a_shared_part_cites_only_its_own_topics_ids() -> None:
    context = {"topics": ["inference", "risk"], "listed": {"inference": ["A1"], "risk": ["A2"]}}
    parts = [_part("inference", "A1"), _part("risk", "A2")]
    SharedExtraction.model_validate({"held": "h", "topics": parts}, context=context)
    parts[1] = _part("risk", "A1")
    with pytest.raises(ValidationError, match="not listed"):
        SharedExtraction.model_validate({"held": "h", "topics": parts}, context=context)


def test_the_request_carries_what_its_answer_is_validated_against() -> None:
    request = _evening().requests[0]
    assert request.validation_context() == {"listed": {"inference": list(request.listed["inference"])}}


OLD = Anchor(
    "subject", "vLLM v0.23.0 发布", "vLLM v0.23.0 发布", dt.date(2026, 9, 20), "p", text="vLLM v0.23.0 发布 3.1×"
)
LATER = Anchor("subject", "SGLang 0.5 调度", "SGLang 0.5 调度", dt.date(2026, 9, 20), "p", text="SGLang 0.5 调度 40%")


def _registry(*anchors: Anchor, items: tuple[OpenItem, ...] = ()) -> AnchorRegistry:
    return AnchorRegistry(topic="inference", date=DATE, anchors=anchors, open_items=items, sections=())


def test_a_cited_id_is_the_anchor_dedupe_reads_whatever_the_title_says() -> None:
    reg = _registry(LATER, OLD)
    c = candidate(claim(title="某引擎调度更新", relation="supplement", anchor="A2"), doc(), 1, "高")
    assert match_anchor(c, reg) == OLD


def test_a_cited_item_id_is_the_open_item_resolved() -> None:
    item = OpenItem(VerifyItem(number=1, title="colibri 支持范围", risk="中", problem="", suggestion=""), "9-21", "p")
    settled = "仓库确认支持全部模型"
    d = doc(text=f"# 报告\n{settled}。")
    ex = FileExtraction(
        relevance="高", relevance_reason="r", held="h", resolved=[Resolution(item="Q1", how="h", evidence=settled)]
    )
    done, _ = resolve([DocResult(d, ex)], _registry(items=(item,)))
    assert [r.title for r in done] == ["colibri 支持范围"]


def test_a_new_version_of_an_anchored_product_is_new_not_a_supplement() -> None:
    c = claim(title="vLLM v0.24.0 发布", points=("DeepSeek-V4 throughput 提升 >10%",), anchor="A1")
    kept, covered, findings = dedupe([candidate(c, doc(), 1, "高")], _registry(OLD))
    assert [k.relation for k in kept] == ["new"] and not covered
    assert "a new version of" in findings[0].detail


def test_facts_told_of_a_subject_on_any_evening_count_as_known() -> None:
    # one release told on two evenings under two titles: a claim repeating the second evening's figure adds nothing
    first = dataclasses.replace(OLD, text="vLLM v0.23.0 发布", origins=frozenset({"a#1"}))
    second = Anchor(
        "subject",
        "vLLM v0.23.0 发布 — 调度重写",
        "x",
        dt.date(2026, 9, 21),
        "q",
        text="吞吐 3.1×",
        origins=frozenset({"b#1"}),
    )
    c = claim(
        title="vLLM v0.23.0 发布", points=("吞吐 3.1×",), evidence=("吞吐 3.1×",), relation="supplement", anchor="A1"
    )
    d = doc(text="# r\n吞吐 3.1×")
    kept, covered, _ = dedupe([candidate(c, d, 1, "高")], _registry(first, second))
    assert covered and not kept


def test_a_recap_of_a_release_is_covered_by_everything_told_of_it_that_evening() -> None:
    """An increment and a secondary anchor of one evening about one release, under two titles (the
    second as the E2 patch wrote it into the living document): a recap the next evening repeating
    facts of both adds nothing, and is covered (五), not a supplement re-reporting the release."""
    increment = Anchor(
        "subject",
        "SGLang v0.7.1：修复 #31522 会话 OOM",
        "x",
        dt.date(2026, 11, 18),
        "inbox/tom/2026-11-18-inference-e1prep.md",
        text="SGLang v0.7.1：修复 #31522 会话 OOM TP > 1 开会话 OOM",
        origins=frozenset({"inbox/tom/2026-11-18-inference-e1prep.md#2"}),
    )
    secondary = Anchor(
        "subject",
        "SGLang v0.7.1",
        "x",
        dt.date(2026, 11, 18),
        "living/inference.md",
        text="- SGLang v0.7.1：`--hicache-size` 按 GiB 解析，多分配约 7%。（11-18 inference e1prep）",
        origins=frozenset({"living/inference.md:40"}),
    )
    recap = "SGLang v0.7.1 fixes #31522 and makes --hicache-size allocate about 7% less"
    c = claim(
        title="SGLang v0.7.1 回顾",
        points=("修复 #31522，--hicache-size 少分配约 7%",),
        evidence=(recap,),
        relation="supplement",
        anchor="A1",
    )
    kept, covered, _ = dedupe([candidate(c, doc(text=f"# recap\n{recap}"), 1, "高")], _registry(increment, secondary))
    assert covered and not kept


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        pytest.param("SGLang v0.5.19 发布", "SGLang v0.5.19 发布 — RadixArk 成立后的首个版本", True, id="words-added"),
        pytest.param(
            "TGI 已死 / SGLang vs vLLM 2026 决策框架（Spheron Blog）",
            "SGLang vs vLLM 2026 决策框架 + TGI 已死",
            True,
            id="reordered",
        ),
        pytest.param("vLLM v0.23.0 发布", "vLLM v0.23.1 发布", False, id="another-version"),
        pytest.param("SGLang", "SGLang HiCache 实测命中率", False, id="a-bare-name-is-no-subject"),
        pytest.param("Mooncake Store 多级缓存", "LMCache 多级缓存", False, id="another-product"),
        # an increment, the living line written from it, the next evening's: one release named first
        pytest.param("vLLM v0.24.2", "vLLM v0.24.2：修 Blackwell FP8 KV 乱码", True, id="release-then-what-it-says"),
        pytest.param(
            "NVIDIA Dynamo 1.1：KV 感知路由 GA", "NVIDIA Dynamo 1.1：TTFT 定为 1.7×", True, id="one-release-two-sayings"
        ),
        pytest.param("SGLang v0.7 迁移指南", "SGLang v0.7 迁移指南：flag 换算、#31522", True, id="a-whole-name-first"),
        pytest.param("TensorRT-LLM v1.4.1 — NVFP4 修复", "TensorRT-LLM v1.4.1（11-15）", True, id="dash-and-date"),
        pytest.param("LangGraph 1.4.0：durability 改 async", "LangGraph 1.4.1", False, id="next-release"),
        pytest.param("vLLM：KV Pin API", "vLLM：FP8 KV 验证", False, id="a-product-is-no-subject"),
    ],
)
def test_same_subject(a: str, b: str, same: bool) -> None:
    assert same_subject(a, b) is same


def test_both_prompts_quote_the_one_novelty_rule() -> None:
    ev = _evening()
    assert NOVELTY in ev.requests[0].messages[0]["content"]
    s = as_shared(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22)))
    shared = plan_topics(s, ["inference", "risk"], for_writing=False).shared
    assert NOVELTY in shared[0].messages[0]["content"]
