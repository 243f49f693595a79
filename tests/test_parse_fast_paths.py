"""The parser's faster paths read every line as the plain readers they replaced did.

The plain versions are kept here as the definitions; hypothesis draws lines from the pieces the
fast paths take shortcuts on (labels and their look-alikes, both colons, pipes escaped or not).
"""

from __future__ import annotations

import datetime as dt
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.labels import ZH
from agent.plan.parse import _FIELDS, COLON, _block_names, _cells, _field_labels, _header_start, nearest_day


def field_plain(t: str) -> tuple[str, str] | None:
    """The first field whose own label regex matches, and its value (one regex per label)."""
    for f in _FIELDS:
        if m := re.match(rf"^{re.escape(getattr(ZH, f))}\s*{COLON}\s*(.*)$", t):
            return f, m.group(1)
    return None


def field_fast(t: str) -> tuple[str, str] | None:
    m = _field_labels(ZH).match(t)
    return None if m is None else (_FIELDS[m.lastindex - 1], m.group(m.lastindex))  # type: ignore[operator]


def cells_plain(row: str) -> list[str]:
    body = row.strip().removeprefix("|")
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [p.strip().replace("\\|", "|") for p in re.split(r"(?<!\\)\|", body)]


LABELS = [getattr(ZH, f) for f in _FIELDS] + ["arXiv", "与活文档", "来", "要"]
LINE_PIECES = [*LABELS, "：", ":", " ", "\u3000", "\n", "x", "- a", "1. b", "（高）", "§1.1", "\t"]
ROW_PIECES = ["|", "\\|", "\\", " ", "a", "---", ":--:", "推理", "\t", "\\\\|"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(LINE_PIECES), max_size=10).map("".join))
def test_one_regex_for_all_field_labels_is_the_first_label_that_matches(line: str) -> None:
    assert field_fast(line) == field_plain(line)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(ROW_PIECES) | st.text(max_size=2), max_size=14).map("".join))
def test_cells_split_on_plain_pipes_are_the_regex_split(row: str) -> None:
    assert _cells(row) == cells_plain(row)


def header_start_plain(raw: str) -> bool:
    """Whether `raw` starts like a block header: the leading characters `_DECOR` may strip
    peeled off until none is left, then a block's numeral or name."""
    while (rest := raw.lstrip("#>* \t").lstrip()) != raw:
        raw = rest
    names = _block_names(ZH)
    return raw.startswith(tuple(n.partition("、")[0] + "、" if "、" in n else n for n in names))


HEADER_PIECES = ["#", ">", "*", " ", "\t", "\u3000", "\xa0", "\x1c", "\x85", "\u2028", "-", "**", "一、", "二", "、",
                 "六、", "七、", "状态摘要", "状态", "增量", "x"]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(HEADER_PIECES) | st.text(max_size=2), max_size=8).map("".join))
def test_one_regex_tells_a_header_start_as_peeling_the_decoration_did(raw: str) -> None:
    assert bool(_header_start(tuple(_block_names(ZH))).match(raw)) == header_start_plain(raw)


def nearest_day_plain(ref: dt.date, month: int, day: int) -> dt.date | None:
    days: list[dt.date] = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        try:
            days.append(dt.date(year, month, day))
        except ValueError:
            continue
    return min(days, key=lambda d: abs(d - ref)) if days else None


@settings(max_examples=1000, deadline=None)
@given(st.dates(dt.date(2, 1, 1), dt.date(9998, 12, 31)), st.integers(0, 13), st.integers(0, 32))
def test_nearest_day_is_the_nearest_of_three_years(ref: dt.date, month: int, day: int) -> None:
    assert nearest_day(ref, month, day) == nearest_day_plain(ref, month, day)


@given(st.sampled_from([dt.date(2026, 1, 2), dt.date(2026, 7, 1), dt.date(2026, 7, 3), dt.date(2024, 8, 31)]))
def test_nearest_day_at_half_a_year_either_way(ref: dt.date) -> None:
    for offset in range(170, 200):
        for d in (ref + dt.timedelta(days=offset), ref - dt.timedelta(days=offset)):
            assert nearest_day(ref, d.month, d.day) == nearest_day_plain(ref, d.month, d.day)
