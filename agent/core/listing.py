"""The inspection commands' tables (`inbox`, `anchors`), laid out as plain text.

The cells are plain text in known columns, so they need no rich Table: only East Asian width
and folding to the terminal's width, so that every cell stays whole and readable at any width
(a path or a Chinese label is folded, never cut).

Printed to a pipe, a row stays on one line (nothing to fold to), so `grep` and `cut` see whole
rows; `COLUMNS` sets a width anyway, as it does for rich.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from collections.abc import Sequence

GAP = "  "
LEAST = 4  # a column is never folded narrower than this (or than its widest cell, if smaller)
_BREAK_AFTER = re.compile(r"(?<=[ /])")  # words and path segments: where a folded cell may break
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a newline or tab inside a cell would break the grid


def width(s: str) -> int:
    """Terminal cells: East Asian wide and fullwidth characters take two, combining marks none."""
    return sum(_char_width(c) for c in s)


def _char_width(c: str) -> int:
    if unicodedata.combining(c) or unicodedata.category(c) == "Cf":
        return 0
    return 2 if unicodedata.east_asian_width(c) in "WF" else 1


def fold(s: str, limit: int) -> list[str]:
    """`s` in lines of at most `limit` cells, broken after a space or a slash where one is near
    and anywhere in a word longer than a line. Spaces at a line's start or end are dropped; no
    other character is. A character wider than `limit` gets a line of its own."""
    if width(s) <= limit:
        return [s]
    lines: list[str] = []
    line, used = "", 0
    for piece in _BREAK_AFTER.split(s):
        if used + width(piece.rstrip(" ")) > limit:
            lines.append(line)
            line, used = "", 0
        if not line:
            piece = piece.lstrip(" ")
        if width(piece.rstrip(" ")) <= limit:
            line, used = line + piece, used + width(piece)
            continue
        for c in piece:  # a word longer than a line
            if used + _char_width(c) > limit:
                lines.append(line)
                line, used = "", 0
            if line or c != " ":
                line, used = line + c, used + _char_width(c)
    lines.append(line)
    return [kept for kept in (line.rstrip(" ") for line in lines) if kept] or [""]


def column_widths(natural: Sequence[int], room: int | None) -> list[int]:
    """Each column's width: its widest cell while the row fits in `room`; otherwise the widest
    columns are narrowed to a common cap, the largest that fits, so that narrow columns
    (a mark, a date) are never folded for the sake of a long one. When even `LEAST` per
    column does not fit, the row is wider than `room` and the terminal wraps it."""
    if room is None or sum(natural) <= room:
        return list(natural)
    # the largest cap that fits: narrowest first, each column that fits in an even share of the
    # room left keeps its width; the first that does not sets the cap at that share
    cap, spent, ordered = 0, 0, sorted(natural)
    for i, n in enumerate(ordered):
        share = (room - spent) // (len(ordered) - i)
        if n > share:
            cap = share
            break
        spent += n
    floors = [min(n, LEAST) for n in natural]
    return [max(f, min(n, cap)) for n, f in zip(natural, floors, strict=True)]  # a cap below LEAST: the floors


def render(title: str, headers: Sequence[str], rows: Sequence[Sequence[str]], room: int | None) -> str:
    """The table as lines: the title, the headers, a rule, then each row, its cells folded to
    their column's width and padded so that the next column starts where its header does."""
    cells = [[_CONTROL.sub(" ", c) for c in row] for row in rows]
    natural = [max(width(c) for c in column) for column in zip(headers, *cells, strict=True)]
    widths = column_widths(natural, None if room is None else room - len(GAP) * (len(headers) - 1))
    lines = [title, *_row(headers, widths), GAP.join("─" * w for w in widths)]
    for row in cells:
        lines.extend(_row(row, widths))
    return "\n".join(lines) + "\n"


def _row(row: Sequence[str], widths: Sequence[int]) -> list[str]:
    folded = [fold(c, w) for c, w in zip(row, widths, strict=True)]
    return [
        GAP.join(p + " " * (w - width(p)) for p, w in zip(parts, widths, strict=True)).rstrip()
        for parts in zip(*(f + [""] * (max(map(len, folded)) - len(f)) for f in folded), strict=True)
    ]


def room() -> int | None:
    """The width to fold to: `COLUMNS` if set, else the terminal's; none for a pipe or a file."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    except (OSError, ValueError, AttributeError):  # stdout replaced by an object without a descriptor
        return None
