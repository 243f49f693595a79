"""`skim` is what the anchors would read of `parse`'s briefing, errors included.

The anchors registry reads every earlier briefing through `skim`; `Skim.of(parse(text))` is its
definition. Checked on every briefing of the repo, on generated history, and on briefings
hypothesis breaks line by line (lines dropped, repeated, moved, or replaced by pieces that
trip the readers: increment heads numbered 0, stray fields, nested and flattened key points,
sources with § references and links, table rows, empty-block markers).
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.errors import ParseError
from agent.plan.parse import Skim, parse, skim
from benchmarks.evening import DATE, SEED_GOLD, baseline
from tests.paths import ROOT

BRIEFINGS = sorted([*ROOT.glob("examples/**/*-e1prep.md"), *ROOT.glob("eval/cases/*/gold.md")])


def _plain(text: str) -> Skim | str:
    try:
        return Skim.of(parse(text, path="b.md"))
    except ParseError as e:
        return f"ParseError: {e}"


def _skimmed(text: str) -> Skim | str:
    try:
        return skim(text, path="b.md")
    except ParseError as e:
        return f"ParseError: {e}"


@pytest.mark.parametrize("path", BRIEFINGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_skim_of_each_briefing_in_the_repo_is_what_parse_reads(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert _skimmed(text) == _plain(text)


def test_skim_of_generated_history_is_what_parse_reads() -> None:
    template = parse(SEED_GOLD.read_text(encoding="utf-8"))
    rng = random.Random(7)
    for d in range(1, 6):
        text = baseline(template, rng, DATE - dt.timedelta(days=d))
        assert isinstance(_plain(text), Skim)
        assert _skimmed(text) == _plain(text)


SEED_LINES = SEED_GOLD.read_text(encoding="utf-8").splitlines()
PIECES = [
    "增量 0：零号（⭐⭐）",
    "增量 7：新的一条（⭐⭐⭐⭐⭐⭐）",
    "**增量 8：加粗（★★★）**",
    "来源：inbox/jay/a.md §条目 1；github.com/x/y；https://arxiv.org/abs/2605.11093 ；",
    "来源：",
    "arXiv 号：arXiv:2605.11093v2 Some paper",
    "要点：- a - b 1. c 2. d - e",
    "要点：",
    "- 顶层要点",
    "  - 缩进的子要点",
    "    1. 更深的编号步骤",
    "1. 未缩进的编号步骤",
    "续行的文字",
    "可信度：中高（理由（嵌套）",
    "可信度：高",
    "与活文档现有脉络的关系：9-21锚定的补充",
    "建议归入章节：§1.3 KV Cache",
    "矛盾/待核实 ⓪：零号（低风险）",
    "矛盾/待核实 ⑥：新的（中风险，延续自 9-20）",
    "- 问题：x",
    "- 建议：y",
    "| 2605.11093v1 | 标题 | 高 | 9-21锚定 |",
    "| 2605.11093 | 标题 \\| 带竖线 | 高 | 本次新增锚点 → §1.4 |",
    "| 9901.1234 | 旧 | 中 | 12-30锚定 |",
    "|---|---|---|---|",
    "（无）",
    "- 无",
    "",
    "四、可引用 arXiv 号列表",
    "二、增量条目",
]
EDIT = st.tuples(
    st.sampled_from(["drop", "repeat", "move", "insert", "replace"]),
    st.integers(0, len(SEED_LINES) - 1),
    st.integers(0, len(SEED_LINES) - 1),
    st.sampled_from(PIECES),
)


def _edited(edits: list[tuple[str, int, int, str]]) -> str:
    lines = list(SEED_LINES)
    for op, i, j, piece in edits:
        i, j = i % max(len(lines), 1), j % max(len(lines), 1)
        if not lines:
            lines = [piece]
        elif op == "drop":
            del lines[i]
        elif op == "repeat":
            lines.insert(j, lines[i])
        elif op == "move":
            lines.insert(j, lines.pop(i))
        elif op == "insert":
            lines.insert(i, piece)
        else:
            lines[i] = piece
    return "\n".join(lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(EDIT, max_size=6))
def test_skim_of_a_broken_briefing_is_what_parse_reads_or_raises(edits: list[tuple[str, int, int, str]]) -> None:
    text = _edited(edits)
    assert _skimmed(text) == _plain(text)
