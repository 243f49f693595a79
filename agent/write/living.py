"""The living document as the E2 patch reads it: its headings, its blocks and its own line style.

A living document is written by people: its habits (bullet, bold subject, colon, the provenance
tail "（9-21 inference e1prep）", how a supplement is marked, whether a heading is followed by an
empty line, its line ends) are learnt from the lines it has, by majority, so that what the patch
adds reads like what was there. A habit the document never shows keeps the seed's.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass

from agent.core.dates import month_day
from agent.core.errors import PredigestError
from agent.core.labels import ZH

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
SECTION_REF = re.compile(r"^\s*§\s*(\d+(?:\.\d+)*)\s*(.*)$", re.S)
BULLET = re.compile(r"^(\s*)([-*])\s+")
FULL_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:\s+\d{1,2}:\d{2})?")  # a clock time goes with its date
SHORT_DATE = re.compile(r"(?<![\d-])(\d{1,2})-(\d{1,2})(?![\d-])")
TAIL = re.compile(r"[（(]\s*(\d{1,2})-(\d{1,2})\s*([^）)；;，,]*)[^）)]*[）)]\s*$")  # '（9-21 inference e1prep）'


class LivingDocError(PredigestError):
    """The living document cannot be patched as it is (not UTF-8, no § sections)."""


@dataclass(frozen=True)
class Style:
    bullet: str = "-"
    bold: bool = True
    colon: str = "："
    period: str = "。"
    tail: str = "e1prep"  # what follows the date in a provenance note: 'inference e1prep'
    sub_indent: str = "  "
    sub_suffix: str = ZH.supplement_word
    blank_after: frozenset[int] = frozenset({2})  # heading levels followed by an empty line
    newline: str = "\n"

    def top(self, md: str, subject: str, paren: str, text: str, note: str = "") -> str:
        """A top-level line of evening `md` ('9-22'): bullet, subject, its parentheses, text, provenance."""
        name = f"**{subject}**" if self.bold else subject
        paren = f"（{paren}）" if paren else ""
        body = f"{self.colon}{text.rstrip('。')}{self.period}" if text else self.period
        return f"{self.bullet} {name}{paren}{body}（{md} {self.tail}{note}）"

    def sub(self, md: str, subject: str, text: str) -> str:
        """A supplement's line under its anchor."""
        note = f"（{md} {self.tail} {self.sub_suffix}）"
        return f"{self.sub_indent}{self.bullet} {subject}{self.colon}{text.rstrip('。')}{self.period}{note}"


def learn_style(lines: list[str], topic: str) -> Style:
    """The majority of what the document does, line by line; a habit it never shows keeps the
    default (the seed's own style)."""
    tops, subs = [], []
    for ln in lines:
        if m := BULLET.match(ln):
            (subs if m[1] else tops).append((m, ln.rstrip("\r\n")))
    bullets = Counter(m[2] for m, _ in tops)
    body = [ln[m.end() :] for m, ln in tops]
    tails = Counter(t[3].strip() for _, ln in tops if (t := TAIL.search(ln)) and t[3].strip())
    base = tails.most_common(1)[0][0] if tails else f"{topic} e1prep"
    extra = Counter(
        t[3].strip()[len(base) :].strip()
        for _, ln in subs
        if (t := TAIL.search(ln)) and t[3].strip().startswith(base) and t[3].strip() != base
    )
    indents = Counter(m[1] for m, _ in subs)
    ends = [TAIL.sub("", b).rstrip().endswith("。") for b in body if TAIL.search(b)]
    heads = [(i, len(m[1])) for i, ln in enumerate(lines) if (m := HEADING.match(ln))]
    blank = Counter((lvl, i + 1 < len(lines) and not lines[i + 1].strip()) for i, lvl in heads)
    newlines = Counter(ln[len(ln.rstrip("\r\n")) :] for ln in lines if ln.endswith(("\n", "\r")))
    return Style(
        bullet=bullets.most_common(1)[0][0] if bullets else "-",
        bold=2 * sum(b.startswith("**") for b in body) >= len(body) if body else True,
        colon="：" if sum("：" in b for b in body) >= sum(":" in b for b in body) else ":",
        period="。" if 2 * sum(ends) >= len(ends) else "",
        tail=base,
        sub_indent=indents.most_common(1)[0][0] if indents else "  ",
        sub_suffix=extra.most_common(1)[0][0] if extra else ZH.supplement_word,
        blank_after=frozenset(lvl for lvl in {lv for _, lv in heads} if blank[(lvl, True)] >= blank[(lvl, False)]),
        newline=newlines.most_common(1)[0][0] if newlines else "\n",
    )


# --- the document as headings and blocks ----------------------------------------------------------


@dataclass(frozen=True)
class Heading:
    index: int
    level: int
    title: str

    @property
    def number(self) -> tuple[int, ...] | None:
        m = SECTION_REF.match(self.title)
        return tuple(int(x) for x in m[1].split(".")) if m else None


def headings(lines: list[str]) -> list[Heading]:
    return [Heading(i, len(m[1]), m[2]) for i, ln in enumerate(lines) if (m := HEADING.match(ln))]


def heading_of(lines: list[str], index: int, *, section: bool = False) -> Heading | None:
    """The nearest heading above line `index`; with `section`, the nearest § heading (the unit
    建议归入章节 names)."""
    above = (Heading(i, len(m[1]), m[2]) for i in reversed(range(index)) if (m := HEADING.match(lines[i])))
    return next((h for h in above if h.number or not section), None)


def block_end(lines: list[str], h: Heading) -> int:
    """Index after the last non-empty line of the heading's block, subsections included."""
    below = range(h.index + 1, len(lines))
    stop = next((i for i in below if (m := HEADING.match(lines[i])) and len(m[1]) <= h.level), len(lines))
    while stop > h.index + 1 and not lines[stop - 1].strip():
        stop -= 1
    return stop


def split_section(section: str) -> tuple[tuple[int, ...] | None, str]:
    """'§1.4 推理可观测性（新增）' -> ((1, 4), '推理可观测性'); a name without a number -> (None, name)."""
    m = SECTION_REF.match(section)
    rest = m[2] if m else section
    name = re.split(r"[（(]", rest.strip(), maxsplit=1)[0].strip()
    return (tuple(int(x) for x in m[1].split(".")) if m else None), name


def nearest(lines: list[str], subs: list[Heading], mine: set[str]) -> Heading:
    """The subsection sharing the most telling words with a line: a word every subsection has
    tells nothing, one only a single subsection has tells most, and words of its heading count
    twice; a long subsection shares more words by its length alone, so the sum is divided by the
    root of its size. With nothing shared, the last one: the end of the section."""
    blocks = [(h, words(h.title), words("".join(lines[h.index : block_end(lines, h)]))) for h in subs]
    df = Counter(w for _, _, ws in blocks for w in ws)

    def score(block: tuple[Heading, set[str], set[str]]) -> float:
        _, head, ws = block
        shared = sum(math.log((len(blocks) + 1) / df[w]) * (2 if w in head else 1) for w in mine & ws)
        return shared / math.sqrt(len(ws) or 1)

    best = max(blocks, key=score)
    return best[0] if score(best) > 0 else subs[-1]


def words(text: str) -> set[str]:
    """Latin words and CJK character pairs: enough to tell which subsection a line is about."""
    latin = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*", text) if len(w) > 1}
    cjk = {a + b for run in re.findall(r"[\u4e00-\u9fff]+", text) for a, b in itertools.pairwise(run)}
    return latin | cjk


SAME_SUBJECT = 0.8  # two top-level lines this alike in their subject are one subject (E2 amends, never doubles it)


def is_top_line(line: str) -> bool:
    """A top-level bullet: one subject of the document (the indented lines under it add to it)."""
    return bool(BULLET.match(line)) and line[:1] in "-*"


def line_subject(line: str) -> str:
    """What an existing line is about: its text before the colon, without bullet and bold."""
    t = BULLET.sub("", line.strip()).replace("**", "").lstrip("⚠️ ").strip()
    t = re.split(r"[：:]", t, maxsplit=1)[0]
    return re.split(r"[（(]", t, maxsplit=1)[0].strip()


def text_hash(text: str) -> str:
    """The hash the run record keeps: of the text as the run read it (see agent.plan.ingest), so
    an editor's save with other line ends or a byte-order mark is not taken for an edit."""
    read = text.replace("\r\n", "\n").replace("\r", "\n").removeprefix("\ufeff")
    return hashlib.sha256(read.encode("utf-8")).hexdigest()


def read_living(data: bytes, path: str) -> str:
    """The document's text with every byte kept (byte-order mark, line ends), or a one-line error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LivingDocError(
            f"{path} is not UTF-8 text ({e.reason} at byte {e.start}): it cannot be patched",
            hint="re-save it as UTF-8 and run `predigest patch` again",
        ) from e
    return check_sections(text, path)


def check_sections(text: str, path: str) -> str:
    """`text`, if it has a § heading to put lines under; else a one-line error."""
    if not any(h.number for h in headings(text.splitlines())):
        raise LivingDocError(
            f"{path} has no section headings (like '## §1.1 …'): there is nowhere to put a line",
            hint="give the living document its § sections, then run `predigest patch` again",
        )
    return text


def shift_dates(line: str, delta: dt.timedelta) -> str:
    """Every date of the line moved by `delta`: full dates lose their clock time (the patch does
    not know the hour E2 ran), short 'M-D' dates stay short."""

    def full(m: re.Match[str]) -> str:
        return (dt.date(int(m[1]), int(m[2]), int(m[3])) + delta).isoformat()

    out, pos = [], 0
    for m in FULL_DATE.finditer(line):
        out.append(_shift_short(line[pos : m.start()], delta))
        out.append(full(m))
        pos = m.end()
    out.append(_shift_short(line[pos:], delta))
    return "".join(out)


def _shift_short(text: str, delta: dt.timedelta) -> str:
    def short(m: re.Match[str]) -> str:
        try:
            d = dt.date(2000, int(m[1]), int(m[2])) + delta  # a leap year: 2-29 is a date
        except ValueError:
            return m[0]
        return month_day(d)

    return SHORT_DATE.sub(short, text)
