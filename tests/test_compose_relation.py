"""A supplement's relation line always says what it supplements, whatever the model wrote.

Found on the 2026-09-21 evening: a reference answer wrote "9-20 锚点只有摘要；本条补上…", which
names the anchor's date without saying 补充, and the briefing presented an anchored paper as new.
"""

from __future__ import annotations

import datetime as dt

import pytest

from agent.plan.anchors import Anchor, AnchorRegistry
from agent.plan.parse import parse
from agent.rules.claims import DocResult
from agent.rules.compose import Composed, Limits, compose
from agent.write.render import render
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, FileExtraction

DATE = dt.date(2026, 9, 21)
TEXT = "DeepSeek-V4.1-Flash（arXiv 2609.19969）：128K 上下文下每 token KV 占用降至 V4 的约 0.42×"
FLASH = Anchor(
    "arxiv", "2609.19969", "DeepSeek-V4.1-Flash", dt.date(2026, 9, 20), "inbox/tom/x.md", text="DeepSeek-V4.1-Flash"
)


def _composed(note: str) -> Composed:
    claim = Claim(
        title="DeepSeek-V4.1-Flash 压缩数字",
        stars=4,
        key_points=[KeyPoint(text="每 token KV 占用降至 V4 的约 0.42×")],
        evidence=["每 token KV 占用降至 V4 的约 0.42×"],
        section_ref="§2",
        arxiv=[ArxivRef(arxiv_id="2609.19969", title="DeepSeek-V4.1-Flash")],
        credibility="高",
        credibility_reason="arXiv",
        relation="supplement",
        anchor="arXiv 2609.19969",
        relation_note=note,
        suggested_section="§1.3 KV Cache",
    )
    doc = SourceDoc(path="inbox/jay/a.md", kind="report", agent="jay", in_window=True, read=True, text=TEXT)
    ex = FileExtraction(relevance="高", relevance_reason="r", held="h", claims=[claim])
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(FLASH,), open_items=(), sections=())
    return compose([DocResult(doc, ex)], reg, [], topic="inference", date=DATE, window="w", limits=Limits())


def _relation(note: str) -> str:
    return _composed(note).briefing.increments[0].relation


@pytest.mark.parametrize(
    ("note", "appended"),
    [
        pytest.param("补上 KV 占用数字", True, id="neither-date-nor-word"),
        pytest.param("9-20 锚点只有摘要；本条补上 KV 占用 0.42×", True, id="date-without-supplement"),
        pytest.param("对已有锚点的补充：KV 占用数字", True, id="supplement-without-date"),
        pytest.param("对 9-20 锚定的补充：KV 占用数字", False, id="says-both"),
    ],
)
def test_a_supplement_says_what_it_supplements(note: str, appended: bool) -> None:
    relation = _relation(note)
    assert relation.startswith(note)
    assert ("（补充 9-20 inference 锚定：DeepSeek-V4.1-Flash）" in relation) is appended
    assert "补充" in relation and "9-20" in relation


@pytest.mark.parametrize("note", ["补上 KV 占用数字", "对 9-20 锚定的补充：KV 占用数字"])
def test_the_relation_is_a_fact_that_survives_the_page(note: str) -> None:
    """The chain's decision travels as a field, and reading the briefing back gives the same
    field: nothing downstream has to find 补充 or 锚定 in the prose."""
    composed = _composed(note)
    (group,) = composed.outcome.supplements
    assert group.lead.anchor == FLASH
    b = composed.briefing
    assert [i.relation_kind for i in b.increments] == ["supplement"]
    again = parse(render(b))
    assert [i.relation_kind for i in again.increments] == ["supplement"]
    assert again.arxiv_rows == b.arxiv_rows
    assert [(r.arxiv_id, r.anchored_on) for r in b.arxiv_rows] == [("2609.19969", dt.date(2026, 9, 20))]
