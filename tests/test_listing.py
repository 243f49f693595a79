"""The inspection commands' tables (agent.core.listing): every cell whole and in its column at any
width, a row on one line where nothing asks to fold, and East Asian width counted as a terminal
shows it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.listing import GAP, LEAST, column_widths, fold, render, width
from tests.paths import WORLD, predigest

DAY = ["--topic", "inference", "--date", "2026-09-22"]
PIECES = [
    *("inbox/", "tom/", "2026-09-22-1050-jay-engineering-filter.md", "a", "vLLM", " ", "  ", "§1.2", "x" * 30),
    *("推理", "吞吐", "调度", "，", "—", "・", "ＧＰＵ", "长" * 12),  # wide
    *("é", "e\u0301", "\u200d", "✓", "·"),  # a combining mark, a zero-width joiner, narrow symbols
]
cell = st.lists(st.sampled_from(PIECES), max_size=8).map("".join)


@pytest.mark.parametrize(
    ("text", "cells"),
    [("", 0), ("vLLM 0.5.19", 11), ("推理调度", 8), ("ＧＰＵ", 6), ("e\u0301", 1), ("a\u200db", 2), ("✓ · …", 5)],
    ids=["empty", "ascii", "cjk", "fullwidth", "combining", "zero-width-joiner", "narrow-symbols"],
)
def test_width_counts_cells_as_a_terminal_shows_them(text: str, cells: int) -> None:
    assert width(text) == cells


@pytest.mark.parametrize(
    ("natural", "room", "widths"),
    [
        ([1, 8, 40, 30], None, [1, 8, 40, 30]),  # a pipe: nothing to fold to
        ([1, 8, 40, 30], 79, [1, 8, 40, 30]),  # it fits
        ([1, 8, 40, 30], 59, [1, 8, 25, 25]),  # exactly: the widest columns share what is left, the narrow keep theirs
        ([1, 8, 40, 30], 49, [1, 8, 20, 20]),
        ([1, 8, 40, 30], 10, [1, LEAST, LEAST, LEAST]),  # too narrow even for the floors: the terminal wraps
    ],
    ids=["pipe", "fits", "narrowed", "narrower", "floors"],
)
def test_column_widths(natural: list[int], room: int | None, widths: list[int]) -> None:
    assert column_widths(natural, room) == widths


@settings(max_examples=300, deadline=None)
@given(cell, st.integers(2, 40))
def test_fold_keeps_every_character_but_the_spaces_it_breaks_at(text: str, limit: int) -> None:
    lines = fold(text, limit)
    assert "".join(lines).replace(" ", "") == text.replace(" ", "")
    assert all(width(line) <= limit for line in lines)
    assert len(lines) == 1 or all(line.strip() for line in lines)


def _columns(line: str, widths: list[int]) -> list[str]:
    """A rendered line cut back into its cells by the columns' widths in terminal cells."""
    cells, at = [], 0
    for w in widths:
        taken, used = "", 0
        while at < len(line) and used + width(line[at]) <= w:
            taken, used = taken + line[at], used + width(line[at])
            at += 1
        while at < len(line) and width(line[at]) == 0:  # a combining mark stays with its base
            taken += line[at]
            at += 1
        cells.append(taken.rstrip(" "))
        at += len(GAP)
    return cells


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(cell, min_size=3, max_size=3), min_size=1, max_size=6), st.integers(24, 100))
def test_a_table_folded_to_any_width_holds_each_cell_whole_in_its_column(rows: list[list[str]], room: int) -> None:
    headers = ["kind", "source", "label"]
    lines = render("title", headers, rows, room).splitlines()
    natural = [max(width(c) for c in column) for column in zip(headers, *rows, strict=True)]
    widths = column_widths(natural, room - 2 * len(GAP))
    assert lines[0] == "title" and lines[2] == GAP.join("─" * w for w in widths)
    assert all(width(line) <= room for line in lines)
    body = [_columns(line, widths) for line in lines[3:]]
    heights = [max(len(fold(c, w)) for c, w in zip(row, widths, strict=True)) for row in rows]
    assert len(body) == sum(heights)
    for row, height in zip(rows, heights, strict=True):
        block, body = body[:height], body[height:]
        for i, text in enumerate(row):
            assert "".join(line[i] for line in block).replace(" ", "") == text.replace(" ", "")


def test_a_cell_with_a_newline_or_tab_keeps_the_grid() -> None:
    lines = render("t", ["a", "b"], [["one\ntwo", "x\ty"]], None).splitlines()
    assert lines[3:] == ["one two  x y"]


@pytest.mark.parametrize("command", ["inbox", "anchors"])
def test_piped_a_row_is_one_line_and_at_a_terminal_width_it_folds(command: str) -> None:
    """Piped (no COLUMNS), each row holds its whole path, for grep; at 60 columns nothing is wider."""
    piped = predigest(command, str(WORLD), *DAY, env={"COLUMNS": ""})
    narrow = predigest(command, str(WORLD), *DAY, env={"COLUMNS": "60"})
    assert piped.returncode == 0 == narrow.returncode, piped.stderr + narrow.stderr
    source = "inbox/tom/2026-09-20-inference-e1prep.md"
    assert any(source in line and line.split()[0] in {"✓", "arxiv"} for line in piped.stdout.splitlines())
    table = narrow.stdout.split("\nliving sections:")[0].splitlines()
    assert max(map(width, table)) <= 60 < max(map(width, piped.stdout.splitlines()))
    assert source not in narrow.stdout
