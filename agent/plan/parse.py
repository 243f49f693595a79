"""Markdown → Briefing: reads ours, other agents' and the seed, messy parts included.

What real briefings do that this tolerates: `#`/`**` decoration on block headers, fullwidth and
halfwidth colons and parentheses, 要点 flattened onto one line (`要点： - a - b 1. c`), numbered
steps written unindented under the bullet they belong to, optional lines left out, a footer of
several lines. What it refuses: a file without the seven blocks in order — the error names the
first block it could not find and the line where it stopped.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from pydantic import BaseModel, ValidationError

from agent.core.dates import MONTH_DAY, read_day
from agent.core.errors import ParseError, first_problem
from agent.core.labels import CIRCLED, ZH, Labels
from schemas.briefing import (
    ArxivRow,
    Briefing,
    Credibility,
    Increment,
    KeyPoint,
    NoIncrementNote,
    PriorityRow,
    SourceRef,
    SourceRow,
    StatusSummary,
    VerifyItem,
)

COLON = "[：:]"
_M = TypeVar("_M", bound=BaseModel)
_DECOR = re.compile(r"^[#>\s]*(?:\*\*)?\s*")  # heading and quote marks, then bold, before a line's text


class _Line(NamedTuple):
    no: int  # 1-based line number in the file
    raw: str
    text: str  # stripped once here, as every block reader reads it


_T = TypeVar("_T")


def parse(text: str, path: str = "", labels: Labels = ZH, *, lenient: bool = False) -> Briefing:
    """Read one briefing. `path` only decorates error messages.

    `lenient` is for other agents' briefings, which write their blocks loosely: a missing or
    out-of-order block is read as empty, and a block that does not parse is left empty rather
    than stopping the run. Our own baselines are read strictly: they carry the anchors."""
    topic, date, blocks = _blocks(text, path, labels, lenient=lenient)
    summary_lines, src, inc, ver, arx, noinc, prio = blocks

    def part(read: Callable[[], _T], empty: _T) -> _T:
        try:
            return read()
        except (ParseError, ValueError):
            if not lenient:
                raise
            return empty

    increments = part(lambda: _increments(inc, path, labels), [])
    intro, notes = part(lambda: _no_increment(noinc), ("", []))
    priorities, footer = part(lambda: _priorities(prio), ([], ""))
    return Briefing(
        topic=topic,
        date=date,
        summary=part(
            lambda: _summary(summary_lines, len(increments), labels),
            StatusSummary(increment_count=0, count_note="", window=""),
        ),
        sources=part(lambda: [_source_row(c) for c in _table_rows(src)], []),
        increments=increments,
        to_verify=part(lambda: _verify(ver, path, labels), []),
        arxiv_rows=part(lambda: [_arxiv_row(c, date, labels) for c in _table_rows(arx)], []),
        no_increment_intro=intro,
        no_increment=notes,
        priorities=priorities,
        footer=footer,
    )


def _blocks(text: str, path: str, labels: Labels, *, lenient: bool) -> tuple[str, dt.date, list[list[_Line]]]:
    """The title's topic and date, and the lines of each of the seven blocks."""
    lines = [_Line(i, raw, raw.strip()) for i, raw in enumerate(text.splitlines(), 1)]
    body = [ln for ln in lines if ln.text and not _is_none_marker(ln.text)]
    if not body:
        raise ParseError("the file is empty", block="title", line_no=1, line="", path=path)
    topic, date = _title(body[0], path, labels)
    split = _loose_blocks if lenient else _split_blocks
    return topic, date, split(body[1:], path, labels, after=body[0])


_NONE = re.compile(r"^[-*•\s]*[（(]?\s*(无|暂无|none|n/?a)\s*[）)]?[。.]?\s*$", re.I)


def _is_none_marker(text: str) -> bool:
    """An empty block as agents write it: 无, （无）, - 无, 暂无, none, N/A."""
    return bool(_NONE.match(text))


def _loose_blocks(lines: list[_Line], path: str, labels: Labels, after: _Line) -> list[list[_Line]]:
    """Blocks by their headers wherever they stand; a missing block is empty, a repeated one is
    read once."""
    names = _block_names(labels)
    starts: dict[int, int] = {}
    for idx, pos in _headers(lines, names):
        starts.setdefault(idx, pos)
    bounds = [*sorted(starts.values()), len(lines)]
    return [
        lines[at + 1 : next(b for b in bounds if b > at)] if (at := starts.get(i)) is not None else []
        for i in range(len(names))
    ]


# --- blocks ---------------------------------------------------------------------------------


def _block_names(labels: Labels) -> list[str]:
    return [
        labels.summary,
        labels.sources,
        labels.increments,
        labels.to_verify,
        labels.arxiv_table,
        labels.no_increment,
        labels.priorities,
    ]


def _undecorated(text: str) -> str:
    """`text` without Markdown decoration at its ends: `#`, `>` and bold before it, bold after it."""
    text = _DECOR.sub("", text, count=1).rstrip()
    return text[:-2].rstrip() if text.endswith("**") else text


def _headers(lines: list[_Line], names: list[str]) -> Iterator[tuple[int, int]]:
    """(block index, position) of each header line, in order."""
    for pos, ln in enumerate(lines):
        if (idx := _header_of(ln, names)) is not None:
            yield idx, pos


def _header_of(line: _Line, names: list[str]) -> int | None:
    """Which block header a line is: '一、…' by its numeral, 状态摘要 by its name."""
    t = _undecorated(line.text)
    for i, name in enumerate(names):
        numeral, sep, _ = name.partition("、")
        if (sep and t.startswith(numeral + sep)) or (not sep and t.rstrip("：:") == name):
            return i
    return None


def _split_blocks(lines: list[_Line], path: str, labels: Labels, after: _Line) -> list[list[_Line]]:
    names = _block_names(labels)
    found = list(_headers(lines, names))  # (block index, position in lines)
    for expected, name in enumerate(names):
        if expected < len(found) and found[expected][0] == expected:
            continue
        # The expected header is missing here: say so at the line where it should have been.
        if expected < len(found):
            at = lines[found[expected][1]]
            got = names[found[expected][0]]
            msg = f"expected block {name!r} but found {got!r}" + (
                " (out of order)" if found[expected][0] > expected and any(i == expected for i, _ in found) else ""
            )
        else:
            at = lines[found[-1][1]] if found else after
            msg = f"block {name!r} not found"
        raise _error(msg, name, at, path)
    if extra := found[len(names) :]:
        twice = names[extra[0][0]]
        raise _error(f"block {twice!r} appears twice", twice, lines[extra[0][1]], path)
    bounds = [pos for _, pos in found] + [len(lines)]
    return [lines[bounds[i] + 1 : bounds[i + 1]] for i in range(len(names))]


def _title(line: _Line, path: str, labels: Labels) -> tuple[str, dt.date]:
    t = _undecorated(line.text)
    m = re.match(rf"^(.+?)\s*[·•]\s*{re.escape(labels.title_kind)}\s*[(（](\d{{4}}-\d{{2}}-\d{{2}})[)）]", t)
    if not m:
        shape = f"'<topic>{labels.title_sep}{labels.title_kind}(YYYY-MM-DD)'"
        raise _error(f"the first line is not a briefing title ({shape})", "title", line, path)
    return m.group(1).strip(), dt.date.fromisoformat(m.group(2))


# --- 状态摘要 -----------------------------------------------------------------------------------


def _summary(lines: list[_Line], n_increments: int, L: Labels) -> StatusSummary:
    count, note, window, heads, new, cont = n_increments, "", "", [], [], "0"
    for ln in lines:
        t = _strip_bullet(ln.text)
        if m := re.match(rf"{L.count}\s*{COLON}\s*(\d+)\s*{L.count_unit}\s*(?:[（(](.*)[）)])?\s*$", t):
            count = int(m.group(1))
            inner = (m.group(2) or "").strip()
            if inner.endswith(L.window_suffix):
                head, _, win = inner.rpartition("；")
                note, window = head.strip(), win.removesuffix(L.window_suffix).strip()
            else:
                note = inner
        elif m := re.match(rf"{L.headlines}\s*{COLON}\s*(.*)$", t):
            heads = [h.strip() for h in re.split(f"[{CIRCLED}]", m.group(1)) if h.strip()]
        elif m := re.match(rf"{L.arxiv_tally}\s*{COLON}\s*(.*)$", t):
            rest = m.group(1)
            if n := re.search(rf"{L.arxiv_new}\s*\d+\s*{L.arxiv_new_unit}\s*[（(]([^）)]*)[）)]", rest):
                new = [x.strip() for x in re.split(r"\s*[/／、,，]\s*", n.group(1)) if x.strip()]
            if c := re.search(rf"{L.arxiv_continued}\s*(\S+?)\s*{L.arxiv_new_unit}", rest):
                cont = c.group(1)
    under = re.compile("|".join(map(re.escape, L.under_target_words)), re.I).search(note) is not None
    return StatusSummary(
        increment_count=count,
        count_note=note,
        under_target=under,
        window=window,
        headlines=heads,
        new_arxiv=new,
        continued_arxiv=cont,
    )


# --- tables -----------------------------------------------------------------------------------


def _table_rows(lines: list[_Line]) -> list[list[str]]:
    """Data rows of the first table in `lines` (header and separator dropped)."""
    rows = [_cells(ln.text) for ln in lines if ln.text.startswith("|")]
    return [r for r in rows[1:] if not all(_SEPARATOR.fullmatch(c) or c == "" for c in r)]


_SEPARATOR = re.compile(r":?-{2,}:?")


def _cells(row: str) -> list[str]:
    """Cells of a Markdown table row; `\\|` is a pipe inside a cell."""
    body = row.strip().removeprefix("|")
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [p.strip().replace("\\|", "|") for p in re.split(r"(?<!\\)\|", body)]


def _pad(cells: list[str], n: int) -> list[str]:
    return (cells + [""] * n)[:n] if len(cells) <= n else [*cells[: n - 1], " | ".join(cells[n - 1 :])]


def _source_row(cells: list[str]) -> SourceRow:
    d, f, r = _pad(cells, 3)
    key, held = _split_paren(f)
    return SourceRow(directory=d, key_file=key, held=held, relevance=r)


def _arxiv_row(cells: list[str], date: dt.date, L: Labels) -> ArxivRow:
    """A row of 四: ID, title, credibility, relation; a continued one ('9-21锚定') gets the day
    it was first anchored."""
    i, t, c, r = _pad(cells, 4)
    m = re.search(rf"({MONTH_DAY})\s*{re.escape(L.anchored_suffix)}", r)
    anchored = read_day(m[1], date) if m else None
    return ArxivRow(arxiv_id=i, title=t, credibility=c, relation=r, anchored_on=anchored)


_PAREN_TAIL = re.compile(r"([^（(]+?)\s*[（(](.*)[）)]")


def _split_paren(text: str) -> tuple[str, str]:
    """'file（what it held）' → ('file', 'what it held'); anything else stays whole."""
    m = _PAREN_TAIL.fullmatch(text.strip())
    if not m or _balanced(m.group(2)) is False:
        return text.strip(), ""
    return m.group(1).strip(), m.group(2).strip()


def _balanced(s: str) -> bool:
    depth = 0
    for ch in s:
        depth += ch in "（("
        depth -= ch in "）)"
        if depth < 0:
            return False
    return depth == 0


# --- 二、增量条目 --------------------------------------------------------------------------------

_FIELDS = ("source", "arxiv", "key_points", "credibility", "relation", "section")


@dataclass
class _Draft:
    """An increment while its lines are being read."""

    number: int
    title: str
    stars: int
    line: _Line
    points: list[_Tok] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)

    def build(self, L: Labels) -> Increment:
        f = self.fields
        relation = f.get("relation", "")
        # a writer who names the anchor it adds to says 补充 or 锚定 (ours always says 补充)
        supplement = L.supplement_word in relation or L.anchored_suffix in relation
        level, reason = _split_paren(f.get("credibility", ""))
        return Increment(
            number=self.number,
            title=self.title,
            stars=min(self.stars, 5),
            sources=[_source_ref(s) for s in re.split(r"\s*[；;]\s*", f.get("source", "")) if s.strip()],
            arxiv_line=f.get("arxiv", ""),
            key_points=_nest(self.points),
            credibility=Credibility(level=level, reason=reason),
            relation=relation,
            relation_kind="supplement" if supplement else "new",
            suggested_section=f.get("section", ""),
        )


def _field(t: str, L: Labels) -> tuple[str, str] | None:
    """The field a '<label>：<value>' line opens (the first of `_FIELDS` whose label it starts
    with), and its value."""
    for f in _FIELDS:
        if m := re.match(rf"^{re.escape(getattr(L, f))}\s*{COLON}\s*(.*)$", t):
            return f, m.group(1)
    return None


def _increments(lines: list[_Line], path: str, L: Labels) -> list[Increment]:
    return [_checked(lambda d=d: d.build(L), d.line, L.increments, path) for d in _drafts(lines, path, L)]


def _drafts(lines: list[_Line], path: str, L: Labels) -> list[_Draft]:
    """The increments of 二 as read line by line, before any model is built from them.

    A heading's stars may stand anywhere in its closing brackets (`（补充，⭐⭐⭐⭐）`, as another
    writer puts it); a line that opens like a heading but has no stars there is an error naming
    it, never a key point of the increment above (tomorrow's anchors would lose it silently)."""
    opens = re.compile(rf"^{L.increment}\s*(\d+)\s*{COLON}")
    head = re.compile(rf"^{L.increment}\s*(\d+)\s*{COLON}\s*(.*?)\s*[（(][^（）()]*?([⭐★]+)[^（）()]*[）)]\s*$")
    drafts: list[_Draft] = []
    current = ""  # the field the last label opened; continuation lines belong to it
    for ln in lines:
        t = _undecorated(ln.text)
        if m := head.match(t):
            drafts.append(_Draft(int(m.group(1)), m.group(2), len(m.group(3)), ln))
            current = ""
            continue
        if opens.match(t):
            want = f"'{L.increment} N：…（{L.star * 4}）'"
            raise _error(
                f"an {L.increment} heading with no stars in its closing brackets (write {want})", L.increments, ln, path
            )
        if not drafts:
            raise _error(f"text before the first '{L.increment} N：…（{L.star}…）' line", L.increments, ln, path)
        draft = drafts[-1]
        if opened := _field(t, L):
            current, value = opened
            if current == "key_points":
                draft.points.extend(_flattened(value))
            else:
                draft.fields[current] = value.strip()
        elif current == "key_points":
            draft.points.append(_point_token(ln.raw))
        elif current:
            draft.fields[current] = f"{draft.fields[current]} {ln.text}".strip()
        else:
            raise _error("line outside any field of an increment", L.increments, ln, path)
    return drafts


def _error(msg: str, block: str, at: _Line, path: str) -> ParseError:
    """What a block reader raises: the message, the block, and the line it stopped at."""
    return ParseError(msg, block=block, line_no=at.no, line=at.raw, path=path)


def _checked(build: Callable[[], _M], line: _Line, block: str, path: str) -> _M:
    """Build a model from a block's line; a value the model refuses (增量 0, an empty title) is
    the writer's mistake, so it is reported like any other: with the block and the line."""
    try:
        return build()
    except ValidationError as e:
        raise _error(first_problem(e), block, line, path) from e


def _source_ref(text: str) -> SourceRef:
    """'inbox/jay/x.md §条目 1' → ('inbox/jay/x.md', '§条目 1'); a link stays whole."""
    ref, sep, section = text.strip().partition(" §")
    return SourceRef(ref=ref.strip(), section=f"§{section.strip()}" if sep else "")


class _Tok(NamedTuple):
    indent: int  # -1: unknown (came from a flattened line)
    numbered: bool
    text: str


_NUMBERED = re.compile(r"^(\d{1,2})[.)、]\s+(.*)$")
_BULLETED = re.compile(r"^[-*•]\s+(.*)$")


def _point_token(raw: str) -> _Tok:
    indent = len(raw) - len(raw.lstrip(" \t"))
    t = raw.strip()
    if m := _NUMBERED.match(t):
        return _Tok(indent, True, m.group(2).strip())
    if m := _BULLETED.match(t):
        return _Tok(indent, False, m.group(1).strip())
    return _Tok(indent, False, t)


def _flattened(text: str) -> list[_Tok]:
    """'- a - b 1. c 2. d - e' (the seed's one-line 要点) → tokens without indentation."""
    text = text.strip()
    if not text:
        return []
    parts = re.split(r"(?:^|\s+)(-|\d{1,2}\.)\s+", text)
    toks: list[_Tok] = []
    if parts[0].strip():
        toks.append(_Tok(0, False, parts[0].strip()))
    for marker, body in zip(parts[1::2], parts[2::2], strict=False):
        toks.append(_Tok(0, marker != "-", body.strip()))
    return toks


# Deeper points are kept as siblings at this depth: no briefing nests so far, and a file indented a
# thousand levels would overflow every recursive walk of the tree (RecursionError) after parsing.
MAX_POINT_DEPTH = 10


def _nest(tokens: list[_Tok]) -> list[KeyPoint]:
    """Build the tree: indentation when the writer gave it; otherwise a numbered step belongs to
    the bullet above it (the seed's habit). Unindented bullets stay siblings: a flattened line
    does not say where a sub-list ends, and a sibling loses nothing. Nothing nests deeper than
    `MAX_POINT_DEPTH`."""
    roots: list[KeyPoint] = []
    stack: list[tuple[int, KeyPoint]] = []  # (indent, node) of the open ancestors
    for tok in tokens:
        indent = max(tok.indent, 0)
        if indent == 0 and tok.numbered and roots:
            indent = 1
        while stack and (stack[-1][0] >= indent or len(stack) >= MAX_POINT_DEPTH):
            stack.pop()
        node = KeyPoint(text=tok.text, numbered=tok.numbered and bool(stack))
        (stack[-1][1].children if stack else roots).append(node)
        stack.append((indent, node))
    return roots


# --- 三、待核实 -----------------------------------------------------------------------------------


def _verify(lines: list[_Line], path: str, L: Labels) -> list[VerifyItem]:
    head = re.compile(rf"^{re.escape(L.verify_item)}\s*([{CIRCLED}]|\d+)\s*{COLON}\s*(.*)$")
    items: list[tuple[_Line, dict[str, str | int]]] = []
    last = "problem"  # the field a continuation line continues
    for ln in lines:
        t = _undecorated(ln.text)
        if m := head.match(t):
            items.append((ln, _verify_head(m, L)))
            last = "problem"
            continue
        if not items:
            if _is_none_marker(t):
                continue
            raise _error(f"expected '{L.verify_item} ①：…'", L.to_verify, ln, path)
        body = _strip_bullet(t)
        cur = items[-1][1]
        if m := re.match(rf"^{L.problem}\s*{COLON}\s*(.*)$", body):
            cur["problem"], last = m.group(1).strip(), "problem"
        elif m := re.match(rf"^{L.suggestion}\s*{COLON}\s*(.*)$", body):
            cur["suggestion"], last = m.group(1).strip(), "suggestion"
        else:
            cur[last] = f"{cur[last]} {body}".strip()
    return [_checked(lambda it=it: VerifyItem(**it), ln, L.to_verify, path) for ln, it in items]


def _verify_head(m: re.Match[str], L: Labels) -> dict[str, str | int]:
    """A to-verify item as its head line opens it: number, title, and the risk and the evening it
    was carried from, when its closing parenthesis names them ('（中风险，延续自 9-20）')."""
    tail = re.compile(
        rf"[（(]\s*(?:([^\s（()），,]+?){L.risk_suffix})?\s*(?:[，,]?\s*{L.carried}\s*([^）)]+?))?\s*[）)]\s*$"
    )
    title, risk, carried = m.group(2).strip(), "", ""
    if (r := tail.search(title)) and (r.group(1) or r.group(2)):
        title, risk, carried = title[: r.start()].strip(), r.group(1) or "", (r.group(2) or "").strip()
    number = L.uncircle(m.group(1)) or int(m.group(1))
    return {
        "number": number,
        "title": title,
        "risk": risk,
        "carried_from": carried,
        "problem": "",
        "suggestion": "",
    }


# --- 五、六 ------------------------------------------------------------------------------------


def split_note(body: str) -> tuple[str, str, str]:
    """A 五 line's (source, separator, note): split at the first "：", else at the first ": "; no
    separator, a source without a note."""
    src, sep, note = body.partition("：")
    return (src, sep, note) if sep else body.partition(": ")


def _no_increment(lines: list[_Line]) -> tuple[str, list[NoIncrementNote]]:
    intro: list[str] = []
    notes: list[NoIncrementNote] = []
    for ln in lines:
        t = ln.text
        if re.match(r"^[-*•]\s+", t):
            body = _strip_bullet(t)
            src, sep, note = split_note(body)
            notes.append(
                NoIncrementNote(source=src.strip(), note=note.strip()) if sep else NoIncrementNote(source=body, note="")
            )
        elif notes:
            last = notes[-1]
            notes[-1] = last.model_copy(update={"note": f"{last.note} {t}".strip()})
        else:
            intro.append(t)
    return " ".join(intro), notes


def _priorities(lines: list[_Line]) -> tuple[list[PriorityRow], str]:
    table_end = max((i for i, ln in enumerate(lines) if ln.text.startswith("|")), default=-1)
    rows = [_pad(c, 3) for c in _table_rows(lines[: table_end + 1])]
    footer = "\n".join(ln.text for ln in lines[table_end + 1 :])
    return [PriorityRow(level=a, content=b, action=c) for a, b, c in rows], footer


def _strip_bullet(t: str) -> str:
    return _BULLET.sub("", t.strip())


_BULLET = re.compile(r"^[-*•]\s+")
