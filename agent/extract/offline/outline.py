"""A document's own structure: the items it is made of, their headings, fields, bullets and tables.

Upstream reports already say where one subject ends and the next begins (a heading, `条目 N`,
a numbered entry, a table row naming a paper), what each is rated (`评级：⭐⭐⭐⭐`) and how far
it is to be trusted (`可信度：高（…）`). The offline extractor reads that structure instead of
asking a model. Nothing here knows any subject: only Markdown and the field names writers use.

Every `raw` string kept here is an exact span of the document, so evidence built from it is
found verbatim by the grounding rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.core.text import similarity

_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_BOLD_LINE = re.compile(r"^\*\*([^*]{2,80})\*\*[：:]?\s*$")
_ENTRY_LINE = re.compile(r"^(?:条目|Item|Entry)\s*\d+\s*[：:.、]\s*\S.*$", re.I)
_LIST = re.compile(r"^([ \t]*)([-*+•]|\d{1,3}[.)、])[ \t]+(.*)$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
_FIELD = re.compile(r"^\*{0,2}([^：:*]{1,16}?)\*{0,2}\s*[：:]\s*(.*)$")
_STARS = re.compile(r"[⭐★]")
_CIRCLED = "①②③④⑤⑥⑦⑧⑨⑩⑪⑫⑬⑭⑮⑯⑰⑱⑲⑳"
_CN_NUM = "一二三四五六七八九十"
# "条目 3：", "Item 3.", "§一.1 ", "§3 ", "3. ", "3、", "①", "一、", "#3"
_NUMBERING = re.compile(
    rf"^(?:(?P<label>条目|Item|Entry|第)\s*(?P<ln>\d+)\s*[条项]?\s*[：:.、\-—]?\s*"
    rf"|§(?P<s>(?:\d{{1,3}}|[{_CN_NUM}]{{1,3}})(?:\.\d{{1,3}})*)[.)、：:]?\s*"
    rf"|#?(?P<n>\d{{1,3}}(?:\.\d{{1,3}})*)[.)、：:]?(?=\s|$)\s*"
    rf"|(?P<c>[{_CIRCLED}])\s*"
    rf"|(?P<cn>[{_CN_NUM}]{{1,3}})[、.．]\s*)"
)

# Field names writers use for an entry's metadata, by what they mean. A bullet "来源：…" is a
# field, not a key point; an unknown "结论一：…" stays a key point.
FIELD_KINDS: dict[str, str] = {
    **dict.fromkeys(["来源", "出处", "链接", "代码", "原文", "source", "sources", "link", "url", "code"], "source"),
    **dict.fromkeys(["评级", "评分", "星级", "rating", "stars", "score"], "rating"),
    **dict.fromkeys(["可信度", "置信度", "credibility", "confidence", "trust"], "credibility"),
    **dict.fromkeys(["arxiv", "arxiv 号", "论文"], "arxiv"),
    **dict.fromkeys(["标题", "title"], "title"),
    **dict.fromkeys(["类型", "type", "kind"], "type"),
    **dict.fromkeys(["归类", "分类", "类别", "方向", "主题", "category", "topic", "tags"], "category"),
    **dict.fromkeys(["要点", "key points", "summary", "highlights"], "points"),
}
# Sections that summarise or list what was dropped: their tables rate the items, they are not items.
_INDEX_NAMES = re.compile(
    r"摘要|目录|总览|速览|概览|小结|总结|丢弃|未收录|附[:：]|^附|summary|contents|overview|index|discarded|dropped",
    re.I,
)


@dataclass(frozen=True)
class Point:
    """One bullet (or table row, or paragraph) of an item, with what hangs under it."""

    text: str  # cleaned for reading: no Markdown emphasis, backticks or list marker
    raw: str  # the exact span of the document it came from
    numbered: bool = False
    children: tuple[Point, ...] = ()
    entry: str = ""  # a table row that is an entry of its own (a release): the entry's name

    def walk(self) -> list[Point]:
        return [self, *(q for c in self.children for q in c.walk())]


@dataclass(frozen=True)
class Row:
    cells: tuple[str, ...]
    raw: str


@dataclass
class Item:
    """One subject as the document delimits it."""

    ref: str  # where in the document, e.g. "§条目 1", "§一.1"
    number: str  # its own number as written ("1", "①"), "" when unnumbered
    title: str
    heading: str  # exact span: the heading's text
    start: int
    end: int
    fields: dict[str, str] = field(default_factory=dict)  # kind -> value, e.g. "source" -> "https://…"
    points: list[Point] = field(default_factory=list)
    rating: int | None = None
    row: bool = False  # a table row lifted out as its own item
    index_text: str = ""  # what a summary table of the document says about it

    def walk(self) -> list[Point]:
        """Every point of the item, children after their parent."""
        return [q for p in self.points for q in p.walk()]


@dataclass
class Outline:
    meta: dict[str, str]  # front matter
    title: str  # the document's own title
    items: list[Item]
    index_rows: list[Row]  # rows of summary tables outside the items


def clean(s: str) -> str:
    """Text for reading: no emphasis, code ticks or link brackets; spacing kept."""
    s = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1（\2）", s)
    s = s.replace("**", "").replace("`", "")
    return " ".join(s.split())


def stars_in(s: str) -> int | None:
    n = len(_STARS.findall(s))
    return min(n, 5) if n else None


def split_number(heading: str) -> tuple[str, str, str]:
    """(label, number, rest): "条目 3：X" -> ("条目", "3", "X"); "1. X" -> ("", "1", "X")."""
    h = clean(heading).lstrip("⚠️ ").strip()
    m = _NUMBERING.match(h)
    if not m or m.end() == 0:
        return "", "", h
    rest = h[m.end() :].strip(" ：:—-")
    if m["label"]:
        return m["label"], m["ln"], rest
    return "", m["s"] or m["n"] or m["c"] or m["cn"] or "", rest or h


def _field_of(text: str) -> tuple[str | None, str]:
    """(kind, value) of a field line such as "来源：…"; (None, "") when it names no known field."""
    f = _FIELD.match(text)
    kind = FIELD_KINDS.get(f[1].strip().lower()) if f else None
    return (kind, f[2]) if f and kind else (None, "")


def _cells(line: str) -> tuple[str, ...]:
    return tuple(clean(c) for c in line.strip().strip("|").split("|"))


@dataclass
class _Line:
    text: str
    start: int
    end: int
    code: bool


def _lines(text: str, offset: int) -> list[_Line]:
    out: list[_Line] = []
    pos = offset
    fenced = False
    for raw in text[offset:].split("\n"):
        is_fence = bool(_FENCE.match(raw))
        out.append(_Line(raw, pos, pos + len(raw), fenced or is_fence))
        if is_fence:
            fenced = not fenced
        pos += len(raw) + 1
    return out


def _heading(line: _Line) -> tuple[int, str] | None:
    """(level, text) when the line is a heading in any of the styles writers use."""
    if line.code:
        return None
    if m := _HEADING.match(line.text):
        return len(m[1]), m[2]
    if m := _BOLD_LINE.match(line.text.strip()):
        return 7, m[1]  # below every '#' level: an entry inside whatever section holds it
    if _ENTRY_LINE.match(line.text):
        return 7, line.text.strip()
    return None


def parse_outline(text: str, *, whole: bool = False) -> Outline:
    """The document's items; `whole` reads it as one item (a paper card is one paper)."""
    meta: dict[str, str] = {}
    offset = 0
    if m := _FRONT.match(text):
        for k, v in re.findall(r"^(\w+):\s*(.*?)\s*$", m[1], re.M):
            meta[k.lower()] = v.strip().strip("\"'")
        offset = m.end()
    lines = _lines(text, offset)
    heads = [(i, h) for i, ln in enumerate(lines) if (h := _heading(ln))]
    doc_title = meta.get("title", "")
    if heads and heads[0][1][0] == 1 and sum(1 for _, h in heads if h[0] == 1) == 1:
        doc_title = doc_title or clean(heads[0][1][1])
        heads = heads[1:]
    items, index_rows = _items_at_headings(lines, heads)
    first_item = heads[0][0] if heads else len(lines)
    index_rows += _rows(lines[:first_item])
    if whole:
        items = [_whole(text, offset, doc_title, lines)]
    elif not items:
        items = _list_items(lines) or _linked_entries(lines) or [_whole(text, offset, doc_title, lines)]
    items = [sub for it in items for sub in _lift_rows(it)]
    for it in items:
        _rate_from_index(it, index_rows)
    return Outline(meta, doc_title, items, index_rows)


def _items_at_headings(lines: list[_Line], heads: list[tuple[int, tuple[int, str]]]) -> tuple[list[Item], list[Row]]:
    """One item per entry heading (with everything below it up to the next heading of its level);
    a heading with only deeper headings under it is a group, an index heading gives ratings."""
    items: list[Item] = []
    index_rows: list[Row] = []
    groups: list[tuple[int, str]] = []  # (level, number) of enclosing group headings
    k = 0
    covered_until = -1
    while k < len(heads):
        i, (level, htext) = heads[k]
        nxt = heads[k + 1][0] if k + 1 < len(heads) else len(lines)
        end_k = next((j for j in range(k + 1, len(heads)) if heads[j][1][0] <= level), len(heads))
        end_line = heads[end_k][0] if end_k < len(heads) else len(lines)
        groups = [g for g in groups if g[0] < level]
        body = lines[i + 1 : nxt]
        label, number, rest = split_number(htext)
        if i <= covered_until:
            k += 1
            continue
        if not number and _INDEX_NAMES.search(rest or htext):
            index_rows += _rows(lines[i + 1 : end_line])
            covered_until = end_line - 1
            k = end_k
            continue
        has_content = any(_LIST.match(b.text) or _TABLE_ROW.match(b.text) for b in body if not b.code)
        if not has_content and k + 1 < len(heads) and heads[k + 1][1][0] > level:
            groups.append((level, number))  # a group: its entries follow as deeper headings
            k += 1
            continue
        ref = _ref(label, number, rest, [g[1] for g in groups if g[1]])
        items.append(_heading_item(lines, i, end_line, ref, htext))
        covered_until = end_line - 1
        k = end_k
    return items, index_rows


def _heading_item(lines: list[_Line], i: int, end_line: int, ref: str, htext: str) -> Item:
    """The entry under heading line `i`, up to `end_line`."""
    _, number, rest = split_number(htext)
    item = Item(
        ref=ref,
        number=number,
        title=_title(rest),
        heading=htext.strip(),
        start=lines[i].start,
        end=lines[end_line - 1].end if end_line > i + 1 else lines[i].end,
        rating=stars_in(htext),
    )
    _fill(item, lines[i + 1 : end_line])
    return item


def _ref(label: str, number: str, rest: str, parents: list[str]) -> str:
    if label:
        return f"§{label} {number}"
    if number:
        return "§" + ".".join([*parents[-1:], number]) if "." not in number else f"§{number}"
    return f"§{_title(rest)[:24]}"


def _title(rest: str) -> str:
    t = re.sub(r"[（(]?[⭐★]+[）)]?", "", rest).strip(" ：:—-")
    return t[:80]


def _rows(lines: list[_Line]) -> list[Row]:
    out = []
    for ln in lines:
        if not ln.code and _TABLE_ROW.match(ln.text) and not _TABLE_RULE.match(ln.text):
            out.append(Row(_cells(ln.text), ln.text.strip()))
    return out


def _fill(item: Item, span: list[_Line]) -> None:
    """Fields, bullets (nesting kept), sub-headings as parent points, table rows as points."""
    builder = _Points(item)
    for ln in span:
        if not ln.code:
            builder.feed(ln)
    item.points = builder.finish()


class _Points:
    """The points of one item, built line by line: the current list, table and sub-heading are
    held open until a line of another kind closes them."""

    def __init__(self, item: Item) -> None:
        self.item = item
        self.top: list[Point] = []
        self.sub_parent: tuple[str, str] | None = None
        self.sub_children: list[Point] = []
        self.table: list[_Line] = []
        self.flat: list[tuple[int, str, str, bool]] = []  # bullets of the current list: (indent, text, raw, numbered)
        self.target = self.top

    def feed(self, ln: _Line) -> None:
        h = _heading(ln)
        if h is not None:
            self.finish()  # a sub-heading closes whatever is open
            _, _, rest = split_number(h[1])
            self.sub_parent = (_title(rest), h[1].strip())
            self.target = self.sub_children
        elif _TABLE_ROW.match(ln.text):
            self.flush_list()
            self.table.append(ln)
        else:
            self.flush_table()
            m = _LIST.match(ln.text)
            if m:
                self.bullet(m)
            else:
                self.flush_list()
                self.paragraph(ln.text.strip())

    def bullet(self, m: re.Match[str]) -> None:
        indent = len(m[1].expandtabs(4))
        body = m[3].strip()
        kind, value = _field_of(body)
        target = self.target
        lead_open = bool(target) and target[-1].raw.endswith(("：", ":")) and not target[-1].children
        metadata = not target or kind in ("rating", "credibility", "category")
        if kind and indent == 0 and self.sub_parent is None and kind != "points" and metadata and not lead_open:
            self.field(kind, value)
            return
        if kind == "points" and not value.strip():
            return
        self.flat.append((indent, clean(value if kind == "points" else body), body, m[2][0].isdigit()))

    def paragraph(self, para: str) -> None:
        if not para or para.startswith(">") or re.fullmatch(r"[-*_=]{3,}", para):
            return
        kind, value = _field_of(para)
        if kind and kind != "points" and self.sub_parent is None:
            self.field(kind, value)
        elif not (kind == "points" and not value.strip()):
            self.target.append(Point(clean(para), para))

    def field(self, kind: str, value: str) -> None:
        self.item.fields.setdefault(kind, value.strip())
        if kind == "rating":
            self.item.rating = stars_in(value) or self.item.rating

    def flush_table(self) -> None:
        lines = [ln for ln in self.table if not _TABLE_RULE.match(ln.text)]
        rows = [_cells(ln.text) for ln in lines]
        names = _entry_columns(rows[0]) if rows else None
        projects = [row[names[0]] for row in rows[1:] if names and names[0] < len(row)]
        if len(set(projects)) < len(projects):
            names = None  # one project at several versions: a comparison of one subject, its rows its points
        for ln, row in zip(lines[1:], rows[1:], strict=True):  # the first row names the columns
            cells = [c for c in row if c and c not in ("—", "-")]
            if cells:
                entry = " ".join(row[i] for i in names if i < len(row)) if names else ""
                self.target.append(Point(" · ".join(cells), ln.text.strip(), entry=entry))
        self.table.clear()

    def close_sub(self) -> None:
        if self.sub_parent is not None:
            self.top.append(Point(self.sub_parent[0], self.sub_parent[1], children=tuple(self.sub_children)))
            self.sub_children.clear()
            self.sub_parent = None

    def flush_list(self) -> None:
        tree = _tree(self.flat)
        self.flat.clear()
        if not tree:
            return
        target = self.target
        lead = target[-1] if target else None
        if lead is not None and not lead.children and not lead.raw.startswith("|") and lead.raw.endswith(("：", ":")):
            target[-1] = Point(lead.text, lead.raw, lead.numbered, tuple(tree))  # "关于 X：" and its bullets
        else:
            target.extend(tree)

    def finish(self) -> list[Point]:
        self.flush_list()
        self.flush_table()
        self.close_sub()
        return self.top


# Column names that make a table a list of releases: one row per project and version.
_PROJECT_COLUMN = re.compile(
    r"^(?:项目|组件|名称|框架|库|仓库|project|name|component|package|library|repo(?:sitory)?)$", re.I
)
_VERSION_COLUMN = re.compile(r"^(?:版本|版本号|发布|release|version|tag)$", re.I)


def _entry_columns(header: tuple[str, ...]) -> tuple[int, int] | None:
    """The project and version columns of a release table's header, if it is one: each of its
    rows is then a release of its own, as each row of a table of papers is a paper."""
    project = next((i for i, c in enumerate(header) if _PROJECT_COLUMN.match(c.strip())), None)
    version = next((i for i, c in enumerate(header) if _VERSION_COLUMN.match(c.strip())), None)
    return (project, version) if project is not None and version is not None else None


def _tree(flat: list[tuple[int, str, str, bool]]) -> list[Point]:
    """Bullets with their indentation → nested points (a child is any deeper bullet after its parent)."""
    roots: list[Point] = []
    k = 0
    while k < len(flat):
        indent, txt, raw, numbered = flat[k]
        j = k + 1
        while j < len(flat) and flat[j][0] > indent:
            j += 1
        children = _tree(flat[k + 1 : j])
        roots.append(Point(txt, raw, numbered and indent > 0, tuple(children)))
        k = j
    # a top-level numbered list stays numbered only under a parent: the schema says so
    return roots


def _list_items(lines: list[_Line]) -> list[Item]:
    """No headings: top-level list entries with a bold lead are the items."""
    out: list[Item] = []
    for n, ln in enumerate(lines):
        m = _LIST.match(ln.text)
        if ln.code or not m or m[1] or not m[3].startswith("**"):
            continue
        lead = re.match(r"\*\*([^*]+)\*\*", m[3])
        if not lead:
            continue
        end = next(
            (x for x in range(n + 1, len(lines)) if _LIST.match(lines[x].text) and not _LIST.match(lines[x].text)[1]),
            len(lines),
        )
        label, number, rest = split_number(lead[1])
        number = number or (m[2].rstrip(".)、") if m[2][0].isdigit() else "")
        item = Item(
            ref=_ref(label, number, rest, []),
            number=number,
            title=_title(rest),
            heading=lead[1],
            start=ln.start,
            end=lines[end - 1].end,
            rating=stars_in(m[3]),
        )
        _fill(item, lines[n + 1 : end])
        out.append(item)
    return out


_LINK = re.compile(r"https?://[^\s)）>\]]+")
_FIRST_CLAUSE = re.compile(r"^(.+?)(?:[：:，,；;。]|\s—|\shttps?://|$)")


def _linked_entries(lines: list[_Line]) -> list[Item]:
    """No headings and no bold leads: a list whose entries link to sources of their own (a
    digest of one-liners) is a list of items, each named by its first clause. An entry is one
    line of a list, so it is held like a table row (never more than a secondary anchor alone)."""
    tops = [n for n, ln in enumerate(lines) if not ln.code and (m := _LIST.match(ln.text)) and not m[1]]
    links = [frozenset(_LINK.findall(lines[n].text)) for n in tops]
    linked = [x for x in links if x]
    if len(linked) < 2 or len(set(linked)) < len(linked):
        return []
    out: list[Item] = []
    starts = set(tops)
    for n, own in zip(tops, links, strict=True):
        if not own:
            continue  # an entry with no source of its own is the writer's aside, not an item
        m = _LIST.match(lines[n].text)
        assert m is not None
        body = m[3].strip()
        head = _FIRST_CLAUSE.match(clean(body))
        title = _title(head[1] if head else clean(body))
        # up to the next entry or the first blank line: what follows a blank line is the writer's own
        end = next((x for x in range(n + 1, len(lines)) if x in starts or not lines[x].text.strip()), len(lines))
        item = Item(
            ref=f"§{m[2].rstrip('.)、')}",
            number=m[2].rstrip(".)、"),
            title=title,
            heading=body,
            start=lines[n].start,
            end=lines[end - 1].end,
            row=True,
        )
        _fill(item, lines[n + 1 : end])
        item.points = [Point(clean(body), body), *item.points]
        out.append(item)
    return out


def _whole(text: str, offset: int, title: str, lines: list[_Line]) -> Item:
    first = next((ln.text.strip() for ln in lines if ln.text.strip() and not ln.code), "")
    head = title or clean(first.lstrip("#> ").strip())
    item = Item(ref="§全文", number="", title=_title(head), heading=head, start=offset, end=len(text))
    _fill(item, lines)
    return item


_ARXIV_HINT = re.compile(r"(?i)arxiv|\b\d{4}\.\d{4,5}\b")


def _lift_rows(item: Item) -> list[Item]:
    """A table of papers or of releases inside an item: each row naming an arXiv ID, or each row
    of a release table, is an item of its own; a paragraph about a paper's ID ("关于 arXiv:…："
    plus its bullets) goes with its row."""
    rows = [p for p in item.points if p.raw.startswith("|") and (p.entry or _ARXIV_HINT.search(p.raw))]
    if len(rows) < 2:
        return [item]
    lifted: list[Item] = []
    for p in rows:
        name = p.entry or re.split(r"\s·\s", p.text, maxsplit=1)[0]
        name = re.sub(r"[（(][^）)]*(?:arxiv|\d{4}\.\d{4,5})[^）)]*[）)]", "", name, flags=re.I).strip()
        sub = Item(
            ref=item.ref,
            number="",
            title=_title(name or p.text),
            heading=p.raw,
            start=item.start,
            end=item.end,
            points=[p],
            row=True,
        )
        lifted.append(sub)
    item.points = [p for p in item.points if p not in rows]
    for p in list(item.points):
        ids = set(re.findall(r"\d{4}\.\d{4,5}", p.raw))
        home = next((s for s in lifted if ids & set(re.findall(r"\d{4}\.\d{4,5}", s.heading))), None)
        if home is not None and ids:
            home.points.append(p)
            item.points.remove(p)
    return [item, *lifted] if item.points else lifted


def _rate_from_index(item: Item, rows: list[Row]) -> None:
    """A summary table row about this item: its rating when the item gives none, and its words."""
    best: Row | None = None
    for r in rows:
        first = r.cells[0].lstrip("#") if r.cells else ""
        if item.number and first == item.number and not item.row:
            best = r
            break
        if any(similarity(c, item.title) >= 0.6 for c in r.cells[:3] if len(c) > 3):
            best = r
            break
    if best is None:
        return
    item.index_text = " · ".join(best.cells)
    if item.rating is None:
        item.rating = stars_in(best.raw)
