"""The registry's subject index gives exactly what a scan over every subject gives.

`subject` runs for every claim of the evening against every subject of months of history, so it
counts shared bigrams from postings; these tests hold it to the plain scan, on the demo's history
and on a generated one of 30 evenings. What a prompt lists stays bounded however long the history.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.text import bigram_counts, similarity
from agent.plan.anchors import LISTED_ANCHORS, Anchor, AnchorRegistry, bare_name, build_registry
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


def _dice(a: tuple[Counter[str], int], b: tuple[Counter[str], int]) -> float:
    """`similarity` of two texts from their `bigram_counts`."""
    return 2 * sum((a[0] & b[0]).values()) / (a[1] + b[1]) if a[1] + b[1] else 1.0


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
        subjects = [(bigram_counts(bare_name(a.key)), a) for a in reg.anchors if a.kind == "subject"]
        for title in titles:
            grams = bigram_counts(bare_name(title))
            score, best = max(((_dice(grams, g), a) for g, a in subjects), default=(0.0, None), key=lambda p: p[0])
            for threshold in (0.45, 0.5, 0.6):  # 0 takes the scan itself (drawn titles below test it)
                expected = best if score >= threshold else None
                assert reg.subject(title, threshold) == expected, (title, threshold)


def test_relevant_anchors_are_bounded(registries: list[tuple[AnchorRegistry, list[str]]]) -> None:
    listed = [max(len(reg.relevant_to(text)) for text in texts) for reg, texts in registries]
    assert listed[0] < LISTED_ANCHORS == listed[1]  # the demo's history lists all it has; a long one is cut


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


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        ("见 https://github.com/x/y，和 arxiv.org/abs/2605.11093", ["2605.11093", "github.com/x/y"]),
        ("http://www.github.com/x/y/ 的说明", ["github.com/x/y"]),  # scheme, www and a trailing slash do not matter
        ("github.com/x/yz 与 2605.11094", []),  # another repository, another paper
        ("vLLM 推理引擎的调度", ["vLLM 推理引擎"]),  # a subject: every token of it in the text
    ],
)
def test_relevant_anchors_by_id_url_and_subject(text: str, listed: list[str]) -> None:
    anchors = (
        Anchor("arxiv", "2605.11093", "p", DATE, "p"),
        Anchor("subject", "vLLM 推理引擎", "s", DATE, "p"),
        Anchor("url", "github.com/x/y", "u", DATE, "p"),
    )
    reg = AnchorRegistry("inference", DATE, anchors, (), ())
    assert [a.key for a in reg.relevant_to(text)] == listed


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        # the next release of an anchored product: the one before it is what the answer names
        ("| NCCL | 2.29.3 | 修复 IB SHARP hang |", ["NCCL 2.29.1"]),
        ("Kueue v0.15.0：TAS 转 GA；kueue.x-k8s.io/podset-required-topology 注解转正", ["Kueue v0.14"]),
        # a name is a word of the text, never a part of one ('ga' of 'gang', 'dra' of 'hydra')
        ("gang scheduling with hydra configs", []),
        ("DRA 已 GA", ["DRA GA"]),
        # Chinese has no word boundaries: its tokens are looked for anywhere
        ("本周的集群排障复盘汇总", ["集群排障复盘"]),
    ],
)
def test_relevant_subjects_are_named_by_words_not_versions(text: str, listed: list[str]) -> None:
    reg = registry_of(["NCCL 2.29.1", "Kueue v0.14", "DRA GA", "集群排障复盘"])
    assert [a.key for a in reg.relevant_to(text)] == listed


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        ("| NCCL | 2.29.3 | 修复 hang |", ["NCCL 2.29.1"]),  # of the releases it does not name, the newest
        ("NCCL 2.29.0 的回顾", ["NCCL 2.29.0", "NCCL 2.29.1"]),  # the one it names first
    ],
)
def test_a_products_earlier_releases_are_listed_once(text: str, listed: list[str]) -> None:
    """A long history holds every release of a product: the prompt lists the one a text names and the
    newest other, not all of them."""
    anchors = tuple(Anchor("subject", k, k, DATE - dt.timedelta(days=n), "p") for n, k in enumerate(RELEASES))
    reg = AnchorRegistry("inference", DATE, anchors, (), ())
    assert [a.key for a in reg.relevant_to(text)] == listed


RELEASES = ["NCCL 2.29.1", "NCCL 2.28.9", "NCCL 2.29.0"]  # newest first


@pytest.mark.parametrize(
    ("text", "listed"),
    [
        ("Kueue 0.14 adds X", ["Kueue v0.14", "Kueue v0.15"]),  # a version written without its 'v' is named
        ("C++ 运行时 improved", ["C++ 运行时"]),  # a name may end in '+'
    ],
)
def test_a_named_version_and_a_name_ending_in_a_mark_are_found(text: str, listed: list[str]) -> None:
    reg = registry_of(["Kueue v0.15", "Kueue v0.14", "C++ 运行时"])
    assert [a.key for a in reg.relevant_to(text)] == listed


def test_the_release_before_tonights_is_the_highest_not_the_last_anchored() -> None:
    """A hotfix of an older line (v0.23.1) anchored after the newer release (v0.24.0): tonight's
    v0.24.1 follows v0.24.0."""
    anchors = (
        Anchor("subject", "vLLM v0.24.0", "vLLM v0.24.0", DATE - dt.timedelta(days=3), "p"),
        Anchor("subject", "vLLM v0.23.1", "vLLM v0.23.1", DATE - dt.timedelta(days=1), "p"),
    )
    reg = AnchorRegistry("inference", DATE, anchors, (), ())
    assert [a.key for a in reg.relevant_to("vLLM v0.24.1 修复 FP8 KV")] == ["vLLM v0.24.0"]
