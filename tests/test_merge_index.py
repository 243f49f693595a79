"""`merge` indexes the claims it has seen instead of comparing every pair: the groups and the
findings must be exactly those of the pairwise definition (`_same_subject` against every member
of every earlier group), on claims drawn to collide — shared words, arXiv IDs, URLs, documents,
sections and anchors, empty and one-character titles."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.anchors import Anchor
from agent.rules import Candidate, Finding, Group, _same_subject, merge
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim

WORDS = ["SGLang", "vLLM", " v0.5", "前缀缓存", "投机解码", "：", "（修复）", "KV", "发布", "", "x", "—", " "]
PAPERS = ["2605.11093", "2605.11093v2", "2501.00001"]
URLS = ["https://github.com/x/y", "github.com/x/y/", "https://z.org"]
ANCHORS = [None, Anchor("subject", "SGLang", "SGLang", dt.date(2026, 9, 21), "living/inference.md")]


def pairwise_merge(cands: list[Candidate]) -> tuple[list[Group], list[Finding]]:
    """The definition: a claim joins the first group holding a claim of the same subject."""
    groups: list[list[Candidate]] = []
    findings: list[Finding] = []
    for c in cands:
        home = next((g for g in groups if any(_same_subject(c, o) for o in g)), None)
        if home is None:
            groups.append([c])
        else:
            home.append(c)
            detail = f"same subject as {home[0].claim.title!r} ({home[0].doc.path})"
            findings.append(Finding("merge", c.claim.title, c.doc.path, "merged", detail))
    return [Group(tuple(sorted(g, key=lambda c: (-c.claim.stars, c.order)))) for g in groups], findings


def _candidate(title: str, path: str, anchor: Anchor | None = None, **claim: object) -> Candidate:
    """A candidate from `path` whose claim is titled `title`; `claim` overrides its other fields."""
    fields: dict[str, object] = {
        "stars": 3,
        "key_points": [],
        "evidence": ["e"],
        "section_ref": "",
        "credibility": "高",
        "credibility_reason": "r",
        "relation": "new",
        "anchor": "",
        "relation_note": "n",
        "suggested_section": "§1.1 框架格局",
    }
    doc = SourceDoc(path=path, kind="report", agent="jay", in_window=True, read=True, text="")
    return Candidate(Claim.model_validate({**fields, **claim, "title": title}), doc, 0, "高", anchor=anchor)


@st.composite
def candidate(draw: st.DrawFn) -> Candidate:
    return _candidate(
        "".join(draw(st.lists(st.sampled_from(WORDS), max_size=5))),
        draw(st.sampled_from(["inbox/jay/a.md", "inbox/jay/b.md", "inbox/kai/c.md"])),
        draw(st.sampled_from(ANCHORS)),
        stars=draw(st.integers(1, 5)),
        section_ref=draw(st.sampled_from(["§条目 1", "§条目 1.2", "§条目 2", "§一.1", ""])),
        arxiv=[ArxivRef(arxiv_id=a, title="p") for a in draw(st.lists(st.sampled_from(PAPERS), max_size=2))],
        urls=draw(st.lists(st.sampled_from(URLS), max_size=2)),
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(candidate(), max_size=14))
def test_merge_equals_the_pairwise_definition(cands: list[Candidate]) -> None:
    cands = [Candidate(c.claim, c.doc, i, c.relevance, anchor=c.anchor) for i, c in enumerate(cands)]
    assert merge(cands) == pairwise_merge(cands)


@st.composite
def titled(draw: st.DrawFn) -> Candidate:
    """Claims that differ only by title, drawn from a few characters: most titles share their
    common bigrams with most others, and long postings are summed."""
    title = "".join(draw(st.lists(st.sampled_from(list("推理缓存解码ab ")), max_size=14)))
    return _candidate(title, f"inbox/jay/{draw(st.integers(0, 7))}.md")


@settings(max_examples=400, deadline=None)
@given(st.lists(titled(), min_size=2, max_size=40))
def test_merge_by_title_alone_equals_the_pairwise_definition(cands: list[Candidate]) -> None:
    cands = [Candidate(c.claim, c.doc, i, c.relevance) for i, c in enumerate(cands)]
    assert merge(cands) == pairwise_merge(cands)

