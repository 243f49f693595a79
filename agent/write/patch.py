"""The E2 patch a briefing proposes: its typed increments written into the living document.

The lines are derived from the run record (section, key points, sources, arXiv ID, relation to
the anchor), never from the briefing's prose, in the document's own style (agent.write.living);
every byte the patch does not touch is kept, line ends included.

Where a line goes: an increment under its suggested § section, in the subsection whose words it
shares most; a supplement under its anchor's line; a proposed section is created in number
order; a secondary anchor as a short line; each new arXiv ID as a row of the arXiv index. A
to-verify item settled tonight loses its "待核实" mark, and the header's update line gets the
date and "E2". A document that already holds the patch gets no change: applying twice is harmless.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from agent.core.arxiv import find_ids, key_of
from agent.core.dates import month_day
from agent.core.labels import CIRCLED, ZH, ZH_LIVING
from agent.core.names import one_product, product_name
from agent.core.text import bigram_counts, dice, similarity, subject_head
from agent.rules.grounding import point_facts
from agent.write.living import (
    BULLET,
    FULL_DATE,
    SAME_SUBJECT,
    SECTION_REF,
    TAIL,
    Heading,
    block_end,
    check_sections,
    heading_of,
    headings,
    is_top_line,
    learn_style,
    line_subject,
    nearest,
    shift_dates,
    split_section,
    words,
)
from schemas.briefing import Increment, KeyPoint
from schemas.run import IncrementTrace, PatchLine, RunRecord

_VERIFY = ZH_LIVING.verify_mark
_SETTLED = 0.5  # a to-verify item and a marked clause this alike are one question
_SECTION_ALIKE = 0.6  # as the rules reconcile proposed sections with the living ones
Kind = Literal["increment", "supplement", "secondary", "index", "settled", "update"]


@dataclass(frozen=True)
class Change:
    """A line the patch writes (or, for a settled item in a list of open ones, takes out), and
    what in the record it comes from: the page can link an added line to its increment."""

    line: str
    kind: Kind
    heading: str  # the heading it sits under
    increment: int | None = None


@dataclass(frozen=True)
class _Entry:
    """A top-level line to write: what it is about, what it says, and where it belongs."""

    subject: str
    paren: str  # the arXiv ID or the outside sources, in parentheses after the subject
    text: str
    note: str  # after the provenance date: to-verify marks, '次要锚点'
    key: str | None  # its arXiv key, the surest sign of one subject
    section: str  # the suggested section
    context: str  # words telling its subsection
    kind: Kind
    number: int | None = None


@dataclass
class Proposal:
    path: str
    old: str
    new: str
    changes: list[Change] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.old != self.new

    def diff(self) -> str:
        """`git apply`-able: a last line without its line end says so, as diff(1) does."""
        a, b = _lines_for_diff(self.old), _lines_for_diff(self.new)
        return "".join(difflib.unified_diff(a, b, f"a/{self.path}", f"b/{self.path}"))

    def diff_lines(self) -> list[PatchLine]:
        """The diff as the page shows it: without the two file headers (the page names the
        document), each added line with the increment it writes."""
        numbers: dict[str, int] = {}
        for c in self.changes:
            if c.increment is not None:
                numbers.setdefault(c.line, c.increment)
        out = []
        for ln in self.diff().splitlines()[2:]:
            number = numbers.get(ln[1:]) if ln.startswith("+") else None
            out.append(PatchLine(text=ln, increment=number))
        return out


def _lines_for_diff(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith(("\n", "\r")):
        lines[-1] += "\n\\ No newline at end of file\n"
    return lines


# --- the editor's lines, from the record -----------------------------------------------------------


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


# About what one of a living document's own lines holds (its anchor lines average some 220 bytes): the
# floor's line takes whole points, in the increment's order, up to this many characters.
LINE_CHARS = 240


def key_facts(points: list[KeyPoint], wanted: set[str] | None = None) -> str:
    """What the increment says, whole point by whole point, as long as a living document's line is
    (`LINE_CHARS`; the first point always); for a supplement (`wanted`: the facts it adds to its
    anchor) only the points stating one of those, or all when none does. The editor's line, when
    there is one, is written instead."""
    keep = [p for p in points if not wanted or point_facts(p) & wanted] or points
    texts = [_point_text(p) for p in keep]
    line = texts[0]
    for t in texts[1:]:
        if len(line) + 1 + len(t) > LINE_CHARS:
            break
        line += "；" + t
    return line


def subject_of(inc: Increment) -> str:
    """A paper is named by its title, as the living document names papers; anything else by the
    head of the increment's title."""
    ids = find_ids(inc.arxiv_line)
    if ids and (title := inc.arxiv_line[ids[0].end :].strip()):
        return title
    return subject_head(inc.title) or inc.title


def _externals(inc: Increment) -> str:
    """The sources a reader can follow outside the workspace (links, blogs), as the living
    document names them in parentheses after the subject."""
    return "；".join(s.ref for s in inc.sources if "/" not in s.ref or "." in s.ref.split("/", 1)[0])


def _verify_note(record: RunRecord, trace: IncrementTrace | None) -> str:
    items = {v.number: v for v in record.briefing.to_verify}
    titles = [items[n].title for n in (trace.verify if trace else []) if n in items]
    return "".join(f"；{t}" + ("" if _VERIFY in t else _VERIFY) for t in titles)


# --- the proposal ---------------------------------------------------------------------------------


def propose(record: RunRecord, living: str, path: str) -> Proposal:
    """The living document as E2 would leave it after tonight's briefing. Pure: the same record
    and text give the same proposal, and a text that already holds it gives no change."""
    check_sections(living, path)
    ed = _Editor(living, record, path)
    for inc in record.briefing.increments:
        ed.increment(inc)
    ed.secondary()
    ed.index_rows()
    ed.settle()
    ed.update_line()
    return Proposal(path, living, "".join(ed.lines), ed.changes, ed.findings)


class _Editor:
    """One pass of E2 over the document's lines (each with its own line end)."""

    def __init__(self, text: str, record: RunRecord, path: str) -> None:
        self.lines = text.splitlines(keepends=True)
        self._grams: dict[str, tuple[Counter[str], int, set[str]]] = {}
        self.record = record
        self.path = path
        b = record.briefing
        self.style = learn_style(self.lines, b.topic)
        self.md = month_day(b.date)
        self.changes: list[Change] = []
        self.findings: list[str] = []
        self.placed: dict[str, str] = {}  # arXiv key -> the § heading its line went under

    # -- inserting --------------------------------------------------------------------------

    def _put(self, at: int, text: str, kind: Kind, number: int | None = None, *, replace: bool = False) -> None:
        if replace:
            old = self.lines[at]
            self.lines[at] = text + old[len(old.rstrip("\r\n")) :]
        else:
            self._insert(at, [text])
        h = heading_of(self.lines, at)
        self.changes.append(Change(text, kind, h.title if h else "", number))

    def _insert(self, at: int, texts: list[str]) -> None:
        """Lines at `at` with the document's line end; a last line without one gets it first."""
        if at > 0 and not self.lines[at - 1].endswith(("\n", "\r")):
            self.lines[at - 1] += self.style.newline
        self.lines[at:at] = [t + self.style.newline for t in texts]

    def _tops(self) -> list[tuple[int, str]]:
        return [(i, ln.rstrip("\r\n")) for i, ln in enumerate(self.lines) if is_top_line(ln)]

    def _dated_tonight(self, line: str) -> bool:
        t = TAIL.search(line)
        return bool(t) and f"{t[1]}-{t[2]}" == self.md

    def _same(self, subject: str, key: str | None) -> tuple[int, str] | None:
        """The top-level line already about this subject (by arXiv ID, else by its subject)."""
        tops = self._tops()
        for i, ln in tops:
            if key and key in self._line_grams(ln)[2]:
                return i, ln
        mine = bigram_counts(subject)
        scored = [(dice(mine, self._line_grams(ln)[:2]), i, ln) for i, ln in tops]
        score, i, ln = max(scored, key=lambda s: s[0], default=(0.0, -1, ""))
        return (i, ln) if scored and score >= SAME_SUBJECT else None

    def _product_line(self, subject: str) -> tuple[int, str] | None:
        """The top-level line of an earlier release of the product `subject` is a release of ('SGLang
        v0.5.20' finds '- **SGLang v0.5.19 发布**'): one product keeps one line, its releases under it."""
        mine = _RELEASE.match(subject)
        if mine is None:
            return None
        product = product_name(mine[1])  # 'openai-agents 0.16.0' finds '- **OpenAI Agents SDK 0.15.0**' too
        for i, ln in self._tops():
            theirs = _RELEASE.match(line_subject(ln))
            if theirs is not None and one_product(product_name(theirs[1]), product):
                return i, theirs[1]
        return None

    def _line_grams(self, line: str) -> tuple[Counter[str], int, set[str]]:
        """A line's subject as `similarity` reads it, and the arXiv keys it names: read once per
        line of this proposal, which asks them of every line for every subject it places."""
        if line not in self._grams:
            self._grams[line] = (*bigram_counts(line_subject(line)), {m.id.key for m in find_ids(line)})
        return self._grams[line]

    # -- increments ---------------------------------------------------------------------------

    def increment(self, inc: Increment) -> None:
        trace = next((t for t in self.record.trace.increments if t.number == inc.number), None)
        sup = trace.supplement if trace else None
        living = trace.living if trace else ""  # the editor's line; without one, the points' facts
        if sup is not None or inc.relation_kind == "supplement":
            names = [inc.title, subject_head(inc.title), *([sup.anchor, subject_head(sup.anchor)] if sup else [])]
            anchor = self._anchor(names)
            if anchor is not None:
                text = living or key_facts(inc.key_points, set(sup.adds) if sup else None)
                self._under(anchor, subject_head(inc.title) or inc.title, text, "supplement", inc.number)
                return
            named = sup.anchor if sup else inc.title
            self.findings.append(
                f"{ZH.increment} {inc.number}: its anchor ({named}) has no line in {self.path}; written as a new line"
            )
        ids = find_ids(inc.arxiv_line)
        entry = _Entry(
            subject=subject_of(inc),
            paren=f"arXiv {ids[0].id.display}" if ids else _externals(inc),
            text=living or key_facts(inc.key_points),
            note=_verify_note(self.record, trace),
            key=ids[0].id.key if ids else None,
            section=inc.suggested_section,
            context=inc.relation,
            kind="increment",
            number=inc.number,
        )
        self._top(entry)

    def _top(self, e: _Entry) -> None:
        """A top-level line under its section, unless the document already has a line of that
        subject: tonight's is amended, an earlier one gets it as a line under it."""
        line = self.style.top(self.md, e.subject, e.paren, e.text, e.note)
        if any(ln.strip() == line.strip() for ln in self.lines):
            return  # already written, by this patch applied before or by hand
        same = self._same(e.subject, e.key)
        if same is not None and self._dated_tonight(same[1]):
            self._put(same[0], line, e.kind, e.number, replace=True)
            return
        if same is not None:
            self.findings.append(f"{e.subject}: already anchored in {self.path} (line {same[0] + 1}); written under it")
            self._under(same[0], e.subject, e.text, e.kind, e.number)
            return
        if (product := self._product_line(e.subject)) is not None:
            i, name = product
            self.findings.append(f"{e.subject}: a release of {name}, whose line is {i + 1}; written under it")
            self._under(i, e.subject, e.text, e.kind, e.number)
            return
        at = self._target(e.section, f"{line} {e.context}")
        self._put(at, line, e.kind, e.number)
        h = heading_of(self.lines, at, section=True)
        if e.key and h:
            self.placed[e.key] = h.title

    def _anchor(self, names: list[str]) -> int | None:
        scored = [(max(similarity(line_subject(ln), n) for n in names if n), i) for i, ln in self._tops()]
        best = max(scored, default=(0.0, -1))
        return best[1] if best[0] >= 0.5 else None

    def _under(self, anchor: int, subject: str, text: str, kind: Kind, number: int | None) -> None:
        """A line under the anchor's block (its indented lines); tonight's line of the same
        subject there is amended, never doubled."""
        line = self.style.sub(self.md, subject, text)
        j = anchor + 1
        while j < len(self.lines) and self.lines[j].strip() and self.lines[j][:1] in " \t":
            here = self.lines[j].rstrip("\r\n")
            if here.strip() == line.strip():
                return
            if self._dated_tonight(here) and similarity(line_subject(here), subject) >= SAME_SUBJECT:
                self._put(j, line, kind, number, replace=True)
                return
            j += 1
        self._put(j, line, kind, number)

    def _target(self, suggested: str, text: str) -> int:
        """Where a new line of `suggested` goes: the end of the subsection sharing most words
        with it, in the § section of that name; a section the document lacks is created."""
        num, name = split_section(suggested)
        heads = headings(self.lines)
        secs = [h for h in heads if h.number]
        match = max(secs, key=lambda h: similarity(split_section(h.title)[1], name), default=None)
        if match is None or not name or similarity(split_section(match.title)[1], name) < _SECTION_ALIKE:
            return self._new_section(num, name, secs)
        end = block_end(self.lines, match)
        subs = [h for h in heads if match.index < h.index < end]
        if not subs:
            return end
        return block_end(self.lines, nearest(self.lines, subs, words(f"{text} {suggested}")))

    def _new_section(self, num: tuple[int, ...] | None, name: str, secs: list[Heading]) -> int:
        if num is None or not name:
            last = secs[-1]
            self.findings.append(
                f"no section of {self.path} is near {name or 'an unnamed section'!r}: the line goes at the end of "
                f"{last.title}"
            )
            return block_end(self.lines, last)
        level = secs[0].level
        title = f"§{'.'.join(map(str, num))} {name}"
        head = "#" * level + " " + title
        gap = [""] if level in self.style.blank_after else []
        before = [h for h in secs if h.level == level and h.number and h.number < num]
        if before:
            at = block_end(self.lines, before[-1])
            block = ["", head, *gap]
            where = f"after {before[-1].title}"
        else:
            at = secs[0].index
            block = [head, *gap, ""]
            where = f"before {secs[0].title}"
        self._insert(at, block)
        self.findings.append(f"{title} is not a section of {self.path}: created {where}")
        return at + (len(block) if before else 1 + len(gap))

    # -- secondary anchors and the arXiv index ------------------------------------------------

    def secondary(self) -> None:
        """3★ papers (四/六): a short line each, under the section 六 writes them into."""
        rows = {key_of(r.arxiv_id): r for r in self.record.briefing.arxiv_rows if r.anchored_on is None}
        for anchor in self.record.trace.secondary:
            ids = find_ids(" ".join(anchor.arxiv))
            paper = rows.get(ids[0].id.key) if ids else None
            name, _, gist = (paper.title if paper else subject_head(anchor.title)).partition(" · ")
            entry = _Entry(
                subject=name.strip(),
                paren=f"arXiv {ids[0].id.display}" if ids else "",
                text=gist or _paren(anchor.title),
                note=ZH_LIVING.secondary_note,
                key=ids[0].id.key if ids else None,
                section=anchor.section,
                context=anchor.title,
                kind="secondary",
            )
            self._top(entry)

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
        # a row names the increment of its paper, so the page links it there too
        numbers = {m.id.key: inc.number for inc in self.record.briefing.increments for m in find_ids(inc.arxiv_line)}
        for r in self.record.briefing.arxiv_rows:
            key = key_of(r.arxiv_id) or r.arxiv_id
            if r.anchored_on is not None or key in have or not r.relation.startswith(ZH.arxiv_new_relation):
                continue
            section = self.placed.get(key) or r.relation.split("→", 1)[-1]
            number = SECTION_REF.match(section.strip())
            cells = [self._cell(c, r.arxiv_id, r.title, f"§{number[1]}" if number else "") for c in cols]
            self._put(at, "| " + " | ".join(cells) + " |", "index", numbers.get(key))
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
        if any(w in low for w in ZH_LIVING.index_section):
            return section
        if any(w in low for w in ZH_LIVING.index_date):
            return self.md
        if any(w in low for w in ZH_LIVING.index_name):
            return subject_head(title.split(" · ", 1)[0]) or title
        return ""

    # -- to-verify marks and the update line ---------------------------------------------------

    def settle(self) -> None:
        """An item settled tonight: its line in an open-items list goes, its mark on a line
        becomes the settled note, dated tonight."""
        titles = [f.subject for f in self.record.findings if f.rule == "resolve" and f.decision == "resolved"]
        for title in dict.fromkeys(titles):
            listed, marked = self._unlist(title), self._unmark(title)
            if not (listed or marked):
                self.findings.append(f"settled tonight: {title}; no line of {self.path} marks it {_VERIFY}")

    def _unlist(self, title: str) -> bool:
        """Its line in a list of open items (a heading naming the mark) goes."""
        for i, ln in enumerate(self.lines):
            h = heading_of(self.lines, i)
            if h and _VERIFY in h.title and BULLET.match(ln) and similarity(line_subject(ln), title) >= _SETTLED:
                del self.lines[i]
                self.changes.append(Change(ln.rstrip("\r\n"), "settled", h.title))
                return True
        return False

    def _unmark(self, title: str) -> bool:
        """Its mark on a line (the clause of the line naming it) becomes the settled note."""
        for i, ln in enumerate(self.lines):
            for clause in re.split(r"[；;，,（(）)]", ln) if _VERIFY in ln else ():
                what = clause.replace(_VERIFY, "").strip()
                if _VERIFY in clause and similarity(what or line_subject(ln), title) >= _SETTLED:
                    settled = ZH_LIVING.settled.format(md=self.md)
                    done = f"{what} {settled}" if what else settled
                    self._put(i, ln.rstrip("\r\n").replace(clause.strip(), done, 1), "settled", replace=True)
                    return True
        return False

    def update_line(self) -> None:
        """The header's update line: its dates moved to tonight's (a later one is left), 'E2' said."""
        first = next((h.index for h in headings(self.lines) if h.level > 1), len(self.lines))
        date = self.record.briefing.date
        for i in range(first):
            ln = self.lines[i].rstrip("\r\n")
            m = FULL_DATE.search(ln)
            if not (m and any(w in ln for w in ZH_LIVING.update_words)):
                continue
            was = dt.date(int(m[1]), int(m[2]), int(m[3]))
            if was > date or (was == date and "E2" in ln):
                return
            new = shift_dates(ln, date - was)
            if "E2" not in new:
                new = new.replace(date.isoformat(), date.isoformat() + ZH_LIVING.update_e2, 1)
            self._put(i, new, "update", replace=True)
            return
        title = next((i for i, ln in enumerate(self.lines[:first]) if ln.startswith("# ")), -1)
        at = j = title + 1
        while j < first and not self.lines[j].strip():
            j += 1
        while j < first and self.lines[j].startswith(">"):  # after the header's quoted lines, if it has some
            at = j = j + 1
        self._put(at, ZH_LIVING.update_line.format(date=date.isoformat(), md=self.md, tail=self.style.tail), "update")


# A release as a subject names it: its product, then a dotted version ('SGLang v0.5.19', 'vLLM 0.23.1').
_RELEASE = re.compile(r"\s*(.+?)\s+[vV]?\d+(?:\.\d+)+\b")


def _paren(title: str) -> str:
    """What a title says in its closing parentheses: 'X（边缘 KV 持久化）' -> '边缘 KV 持久化'."""
    m = re.search(r"[（(]([^（()）]*)[）)]\s*$", title)
    return m[1].strip() if m else ""
