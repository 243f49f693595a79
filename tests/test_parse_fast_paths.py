"""The parser's faster paths read every line as the plain readers they replaced did.

The plain versions are kept here as the definitions; hypothesis draws lines from the pieces the
fast paths take shortcuts on (labels and their look-alikes, both colons, pipes escaped or not).
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.labels import ZH
from agent.parse import _FIELDS, COLON, _cells, _field_labels


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
