"""The E2 patch a briefing proposes: its typed increments written into the living document.

Block 六 is E2's to-do list; the run record already holds it in typed form (each increment's
section, key points, sources, arXiv ID, relation to its anchor), so the lines an editor would add
are derived from the record, never from the briefing's prose. Every line is written in the living
document's own style, learnt from the lines it already has (bullet, bold subject, colon, the
provenance tail "（9-21 inference e1prep）" and the supplement's "补充"), and every byte the
patch does not touch is kept: lines are handled with their own line ends.

Where a line goes: an increment under its suggested § section, in the subsection whose words it
shares most; a supplement under its anchor's line; a proposed section ("§1.4 …") is created in
number order; a secondary anchor as a short line; each new arXiv ID as a row of the document's
arXiv index. A to-verify item settled tonight loses its "待核实" mark, and the update line of the
header gets the date and "E2". Proposing against a document that already holds the patch
changes nothing, which is what makes applying twice harmless.
"""

from __future__ import annotations

import datetime as dt
import difflib
import itertools
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from agent.core.arxiv import find_ids, key_of
from agent.core.errors import PredigestError
from agent.core.labels import CIRCLED, ZH
from agent.core.text import facts, similarity
from agent.rules import subject_head
from schemas.briefing import Increment, KeyPoint
from schemas.run import RunRecord

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
_SECTION_REF = re.compile(r"^\s*§\s*(\d+(?:\.\d+)*)\s*(.*)$", re.S)
_BULLET = re.compile(r"^(\s*)([-*])\s+")
_TAIL = re.compile(r"[（(]\s*(\d{1,2})-(\d{1,2})\s*([^）)；;，,]*)[^）)]*[）)]\s*$")
_FULL_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:\s+\d{1,2}:\d{2})?")
_SHORT_DATE = re.compile(r"(?<![\d-])(\d{1,2})-(\d{1,2})(?![\d-])")
_VERIFY = ZH.to_verify_short  # '待核实': the mark the living document writes on an open question
_SAME_SUBJECT = 0.8  # two lines this alike in their subject are one subject
_SETTLED = 0.5  # a to-verify item and a marked clause this alike are one question
_SECTION_ALIKE = 0.6  # as the rules reconcile proposed sections with the living ones
Kind = Literal["increment", "supplement", "secondary", "index", "settled", "update"]


class LivingDocError(PredigestError):
    """The living document cannot be patched as it is (not UTF-8, no § sections)."""


@dataclass(frozen=True)
class Added:
    """A line the patch writes, and what in the record it comes from (an increment's number)."""

    line: str
    kind: Kind
    heading: str  # the heading it sits under
    increment: int | None = None


@dataclass
class Proposal:
    path: str
    old: str
    new: str
    added: list[Added] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        return unified_diff(self.old, self.new, self.path)


def unified_diff(old: str, new: str, path: str) -> str:
    """`git apply`-able: a last line without its line end says so, as diff(1) does."""
    a, b = _lines_for_diff(old), _lines_for_diff(new)
    return "".join(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}"))


def _lines_for_diff(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


# --- the living document's own style ------------------------------------------------------------------


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


def learn_style(lines: list[str], topic: str) -> Style:
    """The majority of what the document does, line by line; a habit it never shows keeps the
    default (the seed's own style)."""
    tops, subs = [], []
    for ln in lines:
        if m := _BULLET.match(ln):
            (subs if m[1] else tops).append((m, ln.rstrip("\r\n")))
    bullets = Counter(m[2] for m, _ in tops)
    body = [ln[m.end() :] for m, ln in tops]
    tails = Counter(t[3].strip() for _, ln in tops if (t := _TAIL.search(ln)) and t[3].strip())
    base = tails.most_common(1)[0][0] if tails else f"{topic} e1prep"
    extra = Counter(
        t[3].strip()[len(base) :].strip()
        for _, ln in subs
        if (t := _TAIL.search(ln)) and t[3].strip().startswith(base) and t[3].strip() != base
    )
    indents = Counter(m[1] for m, _ in subs)
    ends = [_TAIL.sub("", b).rstrip().endswith("。") for b in body if _TAIL.search(b)]
    heads = [(i, len(m[1])) for i, ln in enumerate(lines) if (m := _HEADING.match(ln))]
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
        m = _SECTION_REF.match(self.title)
        return tuple(int(x) for x in m[1].split(".")) if m else None


def headings(lines: list[str]) -> list[Heading]:
    return [Heading(i, len(m[1]), m[2]) for i, ln in enumerate(lines) if (m := _HEADING.match(ln))]


def heading_of(lines: list[str], index: int) -> Heading | None:
    """The nearest heading above line `index`."""
    return next((h for h in reversed(headings(lines)) if h.index < index), None)


def section_of(lines: list[str], index: int) -> Heading | None:
    """The nearest § heading above line `index` (the unit 建议归入章节 names)."""
    return next((h for h in reversed(headings(lines)) if h.index < index and h.number), None)


def _end(lines: list[str], h: Heading, *, nested: bool) -> int:
    """Index after the last non-empty line of the heading's block: up to the next heading (of
    any level, or with `nested` of its level or above)."""
    stop = next(
        (x.index for x in headings(lines) if x.index > h.index and (not nested or x.level <= h.level)),
        len(lines),
    )
    while stop > h.index + 1 and not lines[stop - 1].strip():
        stop -= 1
    return stop


def split_section(section: str) -> tuple[tuple[int, ...] | None, str]:
    """'§1.4 推理可观测性（新增）' -> ((1, 4), '推理可观测性'); a name without a number -> (None, name)."""
    m = _SECTION_REF.match(section)
    rest = m[2] if m else section
    name = re.split(r"[（(]", rest.strip(), maxsplit=1)[0].strip()
    return (tuple(int(x) for x in m[1].split(".")) if m else None), name


def _nearest(lines: list[str], subs: list[Heading], mine: set[str]) -> Heading:
    """The subsection sharing the most telling words with a line: a word every subsection has
    tells nothing, one only a single subsection has tells most, and words of its heading count
    twice; a long subsection shares more words by its length alone, so the sum is divided by the
    root of its size. With nothing shared, the last one: the end of the section."""
    blocks = [(h, _words(h.title), _words("".join(lines[h.index : _end(lines, h, nested=True)]))) for h in subs]
    df = Counter(w for _, _, words in blocks for w in words)

    def score(block: tuple[Heading, set[str], set[str]]) -> float:
        _, head, words = block
        shared = sum(math.log((len(blocks) + 1) / df[w]) * (2 if w in head else 1) for w in mine & words)
        return shared / math.sqrt(len(words) or 1)

    best = max(blocks, key=score)
    return best[0] if score(best) > 0 else subs[-1]


def _words(text: str) -> set[str]:
    latin = {w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*", text) if len(w) > 1}
    cjk = {a + b for run in re.findall(r"[\u4e00-\u9fff]+", text) for a, b in itertools.pairwise(run)}
    return latin | cjk


# --- the editor's lines, from the record -----------------------------------------------------------


def _md(d: dt.date) -> str:
    return f"{d.month}-{d.day}"


def _point_text(p: KeyPoint) -> str:
    """A point on one line: numbered steps as ①②③, sub-bullets after a colon."""
    own = p.text.strip().rstrip("。；;")
    if not p.children:
        return own
    kids = [_point_text(c) for c in p.children]
    if all(c.numbered for c in p.children):
        kids = [f"{ZH.circled(i)}{k}" for i, k in enumerate(kids, 1)]
    sep = "；" if any("；" in k for k in kids) or kids[0][:1] in CIRCLED else "、"
    return f"{own.rstrip('：:')}：{sep.join(kids)}"


def key_facts(points: list[KeyPoint], wanted: set[str] | None = None) -> str:
    """What the increment says, point by point; for a supplement (`wanted`: the facts it adds to
    its anchor) only the points stating one of those, or all when none does."""
    keep = [p for p in points if not wanted or set().union(*(facts(q.text) for q in p.walk())) & wanted]
    return "；".join(_point_text(p) for p in keep or points)


def subject_of(inc: Increment) -> str:
    """A paper is named by its title, as the living document names papers; anything else by the
    head of the increment's title."""
    ids = find_ids(inc.arxiv_line)
    if ids and (title := inc.arxiv_line[ids[0].end :].strip()):
        return title
    return subject_head(inc.title) or inc.title


def line_subject(line: str) -> str:
    """What an existing line is about: its text before the colon, without bullet and bold."""
    t = _BULLET.sub("", line.strip()).replace("**", "").lstrip("⚠️ ").strip()
    t = re.split(r"[：:]", t, maxsplit=1)[0]
    return re.split(r"[（(]", t, maxsplit=1)[0].strip()


@dataclass(frozen=True)
class Style2Line:
    """Formats the editor's lines in the document's style for one evening."""

    style: Style
    date: dt.date

    def top(self, subject: str, paren: str, text: str, note: str = "") -> str:
        s = self.style
        name = f"**{subject}**" if s.bold else subject
        paren = f"（{paren}）" if paren else ""
        body = f"{s.colon}{text.rstrip('。')}{s.period}" if text else s.period
        return f"{s.bullet} {name}{paren}{body}（{_md(self.date)} {s.tail}{note}）"

    def sub(self, subject: str, text: str) -> str:
        s = self.style
        note = f"（{_md(self.date)} {s.tail} {s.sub_suffix}）"
        return f"{s.sub_indent}{s.bullet} {subject}{s.colon}{text.rstrip('。')}{s.period}{note}"


def _externals(inc: Increment) -> str:
    """The sources a reader can follow outside the workspace (links, blogs), as the living
    document names them in parentheses after the subject."""
    return "；".join(s.ref for s in inc.sources if "/" not in s.ref or "." in s.ref.split("/", 1)[0])


def _verify_note(record: RunRecord, number: int) -> str:
    items = {v.number: v for v in record.briefing.to_verify}
    trace = next((t for t in record.trace.increments if t.number == number), None)
    titles = [items[n].title for n in (trace.verify if trace else []) if n in items]
    return "".join(f"；{t}" + ("" if _VERIFY in t else _VERIFY) for t in titles)


# --- the proposal ---------------------------------------------------------------------------------


def read_living(data: bytes, path: str) -> str:
    """The document's text with every byte kept (byte-order mark, line ends), or a one-line error."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LivingDocError(
            f"{path} is not UTF-8 text ({e.reason} at byte {e.start}): it cannot be patched",
            hint="re-save it as UTF-8 and run `predigest patch` again",
        ) from e
    if not any(h.number for h in headings(text.splitlines())):
        raise LivingDocError(
            f"{path} has no section headings (like '## §1.1 框架格局'): there is nowhere to put a line",
            hint="give the living document its § sections, then run `predigest patch` again",
        )
    return text


def propose(record: RunRecord, living: str, path: str) -> Proposal:
    """The living document as E2 would leave it after tonight's briefing. Pure: the same record
    and text give the same proposal, and a text that already holds it gives no change."""
    read_living(living.encode("utf-8"), path)  # the same checks for a caller holding text
    ed = _Editor(living, record, path)
    for inc in record.briefing.increments:
        ed.increment(inc)
    ed.secondary()
    ed.index_rows()
    ed.settle()
    ed.update_line()
    return Proposal(path, living, "".join(ed.lines), ed.added, ed.findings)


class _Editor:
    """One pass of E2 over the document's lines (each with its own line end)."""

    def __init__(self, text: str, record: RunRecord, path: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self.record = record
        self.path = path
        b = record.briefing
        self.style = learn_style(self.lines, b.topic)
        self.fmt = Style2Line(self.style, b.date)
        self.md = _md(b.date)
        self.added: list[Added] = []
        self.findings: list[str] = []
        self.placed: dict[str, str] = {}  # arXiv key -> the § heading its line went under

    # -- inserting --------------------------------------------------------------------------

    def _put(self, at: int, text: str, kind: Kind, number: int | None = None, *, replace: bool = False) -> None:
        nl = self.style.newline
        if replace:
            old = self.lines[at]
            self.lines[at] = text + old[len(old.rstrip("\r\n")) :]
        else:
            if at > 0 and not self.lines[at - 1].endswith(("\n", "\r")):
                self.lines[at - 1] += nl
            self.lines.insert(at, text + nl)
        h = heading_of(self.lines, at)
        self.added.append(Added(text, kind, h.title if h else "", number))

    def _tops(self) -> list[tuple[int, str]]:
        return [(i, ln.rstrip("\r\n")) for i, ln in enumerate(self.lines) if _BULLET.match(ln) and ln[:1] in "-*"]

    def _dated_tonight(self, line: str) -> bool:
        t = _TAIL.search(line)
        return bool(t) and f"{t[1]}-{t[2]}" == self.md

    def _same(self, subject: str, key: str | None) -> tuple[int, str] | None:
        """The top-level line already about this subject (by arXiv ID, else by its subject)."""
        for i, ln in self._tops():
            if key and key in {m.id.key for m in find_ids(ln)}:
                return i, ln
        best = max(self._tops(), key=lambda p: similarity(line_subject(p[1]), subject), default=None)
        if best and similarity(line_subject(best[1]), subject) >= _SAME_SUBJECT:
            return best
        return None

    # -- increments ---------------------------------------------------------------------------

    def increment(self, inc: Increment) -> None:
        trace = next((t for t in self.record.trace.increments if t.number == inc.number), None)
        sup = trace.supplement if trace else None
        if sup is not None or inc.relation_kind == "supplement":
            names = [inc.title, subject_head(inc.title), *([sup.anchor, subject_head(sup.anchor)] if sup else [])]
            anchor = self._anchor(names)
            if anchor is not None:
                text = key_facts(inc.key_points, set(sup.adds) if sup else None)
                self._under(anchor, subject_head(inc.title) or inc.title, text, "supplement", inc.number)
                return
            self.findings.append(
                f"增量 {inc.number}: its anchor ({sup.anchor if sup else inc.title}) has no line in {self.path}; "
                "written as a new line"
            )
        ids = find_ids(inc.arxiv_line)
        note = _verify_note(self.record, inc.number)
        paren = f"arXiv {ids[0].id.display}" if ids else _externals(inc)
        line = self.fmt.top(subject_of(inc), paren, key_facts(inc.key_points), note)
        where = (inc.suggested_section, inc.relation)
        self._top(line, subject_of(inc), ids[0].id.key if ids else None, where, "increment", inc.number)

    def _top(
        self, line: str, subject: str, key: str | None, where: tuple[str, str], kind: Kind, number: int | None
    ) -> None:
        """A top-level line under `where` (the suggested section, and words telling its
        subsection), unless the document already has a line of that subject."""
        if any(ln.strip() == line.strip() for ln in self.lines):
            self.findings.append(f"{subject}: the line is already in {self.path}; not added again")
            return
        same = self._same(subject, key)
        if same is not None and self._dated_tonight(same[1]):
            self._put(same[0], line, kind, number, replace=True)
            return
        if same is not None:
            self.findings.append(f"{subject}: already anchored in {self.path} (line {same[0] + 1}); written under it")
            text = line.split(self.style.colon, 1)[-1] if self.style.colon in line else line
            self._under(same[0], subject, _TAIL.sub("", text).rstrip("。"), kind, number)
            return
        at = self._target(where[0], f"{line} {where[1]}")
        self._put(at, line, kind, number)
        h = section_of(self.lines, at)
        if key and h:
            self.placed[key] = h.title

    def _anchor(self, names: list[str]) -> int | None:
        scored = [(max(similarity(line_subject(ln), n) for n in names if n), i) for i, ln in self._tops()]
        best = max(scored, default=(0.0, -1))
        return best[1] if best[0] >= 0.5 else None

    def _under(self, anchor: int, subject: str, text: str, kind: Kind, number: int | None) -> None:
        """A line under the anchor's block (its indented lines); tonight's line of the same
        subject there is amended, never doubled."""
        line = self.fmt.sub(subject, text)
        j = anchor + 1
        while j < len(self.lines) and self.lines[j].strip() and self.lines[j][:1] in " \t":
            here = self.lines[j].rstrip("\r\n")
            if here.strip() == line.strip():
                return
            if self._dated_tonight(here) and similarity(line_subject(here), subject) >= _SAME_SUBJECT:
                self._put(j, line, kind, number, replace=True)
                return
            j += 1
        self._put(j, line, kind, number)

    def _target(self, suggested: str, text: str) -> int:
        """Where a new line of `suggested` goes: the end of the subsection sharing most words
        with it, in the § section of that name; a section the document lacks is created."""
        num, name = split_section(suggested)
        secs = [h for h in headings(self.lines) if h.number]
        match = max(secs, key=lambda h: similarity(split_section(h.title)[1], name), default=None)
        if match is None or not name or similarity(split_section(match.title)[1], name) < _SECTION_ALIKE:
            return self._new_section(num, name, secs)
        end = _end(self.lines, match, nested=True)
        subs = [h for h in headings(self.lines) if match.index < h.index < end]
        if not subs:
            return end
        return _end(self.lines, _nearest(self.lines, subs, _words(f"{text} {suggested}")), nested=True)

    def _new_section(self, num: tuple[int, ...] | None, name: str, secs: list[Heading]) -> int:
        if num is None or not name:
            last = secs[-1]
            self.findings.append(
                f"no section of {self.path} is near {name or 'an unnamed section'!r}: the line goes at the end of "
                f"{last.title}"
            )
            return _end(self.lines, last, nested=True)
        level = secs[0].level
        title = f"§{'.'.join(map(str, num))} {name}"
        head = "#" * level + " " + title
        gap = [""] if level in self.style.blank_after else []
        before = [h for h in secs if h.level == level and h.number and h.number < num]
        nl = self.style.newline
        if before:
            at = _end(self.lines, before[-1], nested=True)
            block = ["", head, *gap]
            where = f"after {before[-1].title}"
        else:
            at = secs[0].index
            block = [head, *gap, ""]
            where = f"before {secs[0].title}"
        if at > 0 and not self.lines[at - 1].endswith(("\n", "\r")):
            self.lines[at - 1] += nl
        self.lines[at:at] = [b + nl for b in block]
        self.findings.append(f"{title} is not a section of {self.path}: created {where}")
        return at + (len(block) if before else 1 + len(gap))

    # -- secondary anchors and the arXiv index ------------------------------------------------

    def secondary(self) -> None:
        """3★ papers (四/六): a short line each, under the section 六 writes them into."""
        b = self.record.briefing
        rows = {key_of(r.arxiv_id): r for r in b.arxiv_rows if r.anchored_on is None}
        subjects = dict.fromkeys(
            f.subject for f in self.record.findings if f.rule == "select" and f.decision == "secondary anchor"
        )
        for subject in subjects:
            row = next((p for p in b.priorities[len(b.increments) :] if p.content.endswith(subject)), None)
            if row is None:
                continue
            section = row.action.removeprefix(ZH.write_into.format(section=""))
            ids = find_ids(row.content)
            paper = rows.get(ids[0].id.key) if ids else None
            name, _, gist = (paper.title if paper else subject_head(subject)).partition(" · ")
            paren = f"arXiv {ids[0].id.display}" if ids else ""
            gist = gist or _paren(subject)
            line = self.fmt.top(name.strip(), paren, gist, "，次要锚点")
            self._top(line, name.strip(), ids[0].id.key if ids else None, (section, subject), "secondary", None)

    def index_rows(self) -> None:
        """Each new arXiv ID of 四 as a row of the document's arXiv table, in its columns."""
        table = self._arxiv_table()
        if table is None:
            return
        header, last = table
        cols = [c.strip() for c in self.lines[header].strip().strip("|").split("|")]
        have = {m.id.key for ln in self.lines[header : last + 1] for m in find_ids(ln)}
        have |= {c.strip()[:10] for ln in self.lines[header + 2 : last + 1] for c in ln.split("|")[1:2]}
        at = last + 1
        for r in self.record.briefing.arxiv_rows:
            key = key_of(r.arxiv_id) or r.arxiv_id
            if r.anchored_on is not None or key in have or not r.relation.startswith(ZH.arxiv_new_relation):
                continue
            section = self.placed.get(key) or r.relation.split("→", 1)[-1]
            number = _SECTION_REF.match(section.strip())
            cells = [self._cell(c, r.arxiv_id, r.title, f"§{number[1]}" if number else "") for c in cols]
            self._put(at, "| " + " | ".join(cells) + " |", "index")
            have.add(key)
            at += 1

    def _arxiv_table(self) -> tuple[int, int] | None:
        """(header line, last row) of the first table whose header names arXiv."""
        for i, ln in enumerate(self.lines):
            below = self.lines[i + 1].strip() if i + 1 < len(self.lines) else ""
            if ln.startswith("|") and "arxiv" in ln.lower() and below and set(below) <= set("|-: "):
                j = i + 1
                while j + 1 < len(self.lines) and self.lines[j + 1].startswith("|"):
                    j += 1
                return i, j
        return None

    def _cell(self, column: str, arxiv_id: str, title: str, section: str) -> str:
        low = column.lower()
        if "arxiv" in low:
            return arxiv_id
        if "§" in column or "章节" in column or "section" in low:
            return section
        if "锚定" in column or "日期" in column or "date" in low:
            return self.md
        if any(w in column for w in ("简称", "标题", "名称", "论文")) or "title" in low:
            return subject_head(title.split(" · ", 1)[0]) or title
        return ""

    # -- to-verify marks and the update line ---------------------------------------------------

    def settle(self) -> None:
        """An item settled tonight: its line in an open-items list goes, its mark on a line
        becomes '<date> 已核实'."""
        titles = [f.subject for f in self.record.findings if f.rule == "resolve" and f.decision == "resolved"]
        for title in dict.fromkeys(titles):
            self._settle(title)

    def _settle(self, title: str) -> None:
        for i, ln in enumerate(self.lines):
            h = heading_of(self.lines, i)
            listed = h is not None and _VERIFY in h.title and _BULLET.match(ln)
            if listed and h and similarity(_TAIL.sub("", line_subject(ln)), title) >= _SETTLED:
                del self.lines[i]
                self.added.append(Added(ln.rstrip("\r\n"), "settled", h.title))
                return
        for i, ln in enumerate(self.lines):
            if _VERIFY not in ln:
                continue
            for clause in re.split(r"[；;，,（(）)]", ln):
                if _VERIFY not in clause:
                    continue
                what = clause.replace(_VERIFY, "").strip() or line_subject(ln)
                if similarity(what, title) >= _SETTLED:
                    done = clause.replace(_VERIFY, f" {self.md} 已核实" if clause.strip() != _VERIFY else "")
                    done = done if done.strip() else f"{self.md} 已核实"
                    self._put(i, ln.rstrip("\r\n").replace(clause, done.replace("  ", " "), 1), "settled", replace=True)
                    return
        self.findings.append(f"settled tonight: {title}; no line of {self.path} marks it {_VERIFY}")

    def update_line(self) -> None:
        """The header's update line: its dates moved to tonight's (a later one is left), 'E2' said."""
        first = next((h.index for h in headings(self.lines) if h.level > 1), len(self.lines))
        date = self.record.briefing.date
        for i in range(first):
            ln = self.lines[i].rstrip("\r\n")
            m = _FULL_DATE.search(ln)
            if not (m and ("最后更新" in ln or "更新" in ln)):
                continue
            was = dt.date(int(m[1]), int(m[2]), int(m[3]))
            if was > date or (was == date and "E2" in ln):
                return
            new = _shift(ln, date - was)
            if "E2" not in new:
                new = new.replace(date.isoformat(), f"{date.isoformat()}（E2）", 1)
            self._put(i, new, "update", replace=True)
            return
        title = next((i for i, ln in enumerate(self.lines[:first]) if ln.startswith("# ")), -1)
        at = title + 1
        while at < first and self.lines[at].startswith(">"):
            at += 1
        self._put(at, f"> 最后更新：{date.isoformat()}（E2，依据 {self.md} {self.style.tail}）", "update")


def _paren(title: str) -> str:
    """What a title says in its closing parentheses: 'X（边缘 KV 持久化）' -> '边缘 KV 持久化'."""
    m = re.search(r"[（(]([^（()）]*)[）)]\s*$", title)
    return m[1].strip() if m else ""


def _shift(line: str, delta: dt.timedelta) -> str:
    """Every date of the line moved by `delta`: full dates lose their clock time (the patch does
    not know the hour E2 ran), short 'M-D' dates stay short."""

    def full(m: re.Match[str]) -> str:
        return (dt.date(int(m[1]), int(m[2]), int(m[3])) + delta).isoformat()

    out, pos = [], 0
    for m in _FULL_DATE.finditer(line):
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
        return f"{d.month}-{d.day}"

    return _SHORT_DATE.sub(short, text)
