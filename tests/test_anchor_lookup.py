"""The registry's indexed lookups give exactly what a scan over every anchor gives.

`subject` and `relevant_to` run for every claim and every document of the evening against
every anchor of months of history, so they use indexes; these tests hold them to the plain
scans they replace, on the demo's history and on a generated one of 30 evenings.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.arxiv import find_ids
from agent.core.text import similarity
from agent.plan.anchors import _URL, Anchor, AnchorRegistry, _Finder, bare_name, build_registry, normalise_url
from agent.plan.ingest import scan, sources
from agent.plan.workspace import load_workspace
from benchmarks.evening import write_evening
from tests.paths import WORLD

DATE = dt.date(2026, 9, 22)


def subject_by_scan(reg: AnchorRegistry, title: str, threshold: float) -> Anchor | None:
    title = bare_name(title)
    scored = ((similarity(title, bare_name(a.key)), a) for a in reg.anchors if a.kind == "subject")
    best = max(scored, default=(0.0, None), key=lambda p: p[0])
    return best[1] if best[0] >= threshold else None


def relevant_by_scan(reg: AnchorRegistry, text: str, limit: int = 25) -> list[Anchor]:
    keys = {m.id.key for m in find_ids(text)}
    urls = {normalise_url(u) for u in _URL.findall(text)}
    hits = [a for a in reg.anchors if (a.kind == "arxiv" and a.key in keys) or (a.kind == "url" and a.key in urls)]

    def overlap(subject: str) -> float:
        toks = [t for t in re.findall(r"[A-Za-z][\w.+-]*|\d[\d.]*|[\u4e00-\u9fff]{2,}", subject) if len(t) > 1]
        return sum(t.lower() in text.lower() for t in toks) / len(toks) if toks else 0.0

    scored = [(overlap(a.key), a) for a in reg.anchors if a.kind == "subject"]
    hits += [a for score, a in sorted(scored, key=lambda p: -p[0]) if score > 0.5]
    seen: set[tuple[str, str]] = set()
    out = []
    for a in hits:
        if (a.kind, a.key) not in seen:
            seen.add((a.kind, a.key))
            out.append(a)
    return out[:limit]


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[AnchorRegistry, list[str]]]:
    out = []
    grown = write_evening(tmp_path_factory.mktemp("ws") / "grown", 12, history=30, living_anchors=400)
    for root in (WORLD, grown):
        docs = scan(load_workspace(Path(root)), "inference", DATE)
        out.append((build_registry(docs, "inference", DATE), [d.text for d in sources(docs)]))
    return out


def test_subject_lookup_is_the_full_scan(registries: list[tuple[AnchorRegistry, list[str]]]) -> None:
    for reg, texts in registries:
        titles = [a.key for a in reg.anchors if a.kind == "subject"][::7]
        titles += [line[:40] for text in texts for line in text.splitlines() if line.startswith("#")]
        titles += ["", "x", "完全无关的标题", "vLLM", "[subject] vLLM · 9-20", "待核实 ①：x"]
        for title in titles:
            for threshold in (0.45, 0.5, 0.6, 0.0):
                assert reg.subject(title, threshold) == subject_by_scan(reg, title, threshold), (title, threshold)


def test_relevant_anchors_are_the_full_scan_and_bounded(registries: list[tuple[AnchorRegistry, list[str]]]) -> None:
    for reg, texts in registries:
        for text in texts:
            listed = reg.relevant_to(text)
            assert listed == relevant_by_scan(reg, text)
            assert len(listed) <= 25


# Titles drawn from a few pieces, so that subjects repeat bigrams (within a title too: 'aaaa'),
# share most of them, or differ by a date, as months of generated history do.
PIECES = ["vLLM", "SGLang", " ", "分块", "预填充", "预填", "aa", "a", "·", "9-20", "第1条", "KV", "kv", "（", "）", "x"]
TITLE = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


def registry_of(subjects: list[str]) -> AnchorRegistry:
    anchors = tuple(Anchor("subject", s, s, DATE, "p") for s in subjects)
    return AnchorRegistry("inference", DATE, anchors, (), ())


@settings(max_examples=400, deadline=None)
@given(st.lists(TITLE, max_size=25), TITLE, st.sampled_from([0.0, 0.01, 0.3, 0.45, 0.5, 0.6, 0.9, 1.0, 1.5, 2.0]))
def test_subject_lookup_is_the_full_scan_on_drawn_titles(subjects: list[str], title: str, threshold: float) -> None:
    reg = registry_of(subjects)
    assert reg.subject(title, threshold) == subject_by_scan(reg, title, threshold)


# Texts and subjects from pieces whose tokens hide inside one another ('vllm' in 'xvllm-omni',
# '推理' in '推理引擎'), repeat within a subject, or change length when lowercased ('İ').
WORDS = ["vLLM", "xvllm-omni", "SGLang", "sglang", "推理", "推理引擎", "引擎", "kv", "KVBM", "0.5", "0.5.19", "İx"]
TEXT = st.lists(st.sampled_from([*WORDS, " ", "，", "a", "2605.11093"]), max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(TEXT, max_size=20), TEXT, st.integers(min_value=0, max_value=30))
def test_relevant_anchors_are_the_full_scan_on_drawn_texts(subjects: list[str], text: str, limit: int) -> None:
    reg = registry_of(subjects)
    assert reg.relevant_to(text, limit) == relevant_by_scan(reg, text, limit)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT.map(str.lower), max_size=30), TEXT.map(str.lower))
def test_both_ways_of_finding_words_find_every_word_present(words: list[str], text: str) -> None:
    """The trie pass (many words) and the test of each word (few) find the same words: those
    that occur in the text as substrings."""
    words = [w for w in words if w]
    present = {w for w in words if w in text}
    assert _Finder(words, test_each_up_to=0).present(text) == present
    assert _Finder(words, test_each_up_to=10_000).present(text) == present
