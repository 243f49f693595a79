"""What is already known for a topic on an evening: the anchors tonight's claims are deduped against.

Three places feed it: the living document (its § sections, every arXiv ID, URL and named subject
in it, and its list of open 待核实 questions), every earlier briefing of the topic (increments, arXiv
rows with their first anchoring date, the latest briefing's open to-verify items), and same-evening
briefings of other topics, which are kept apart as adjacent references — never as anchors. Each
open item says where it was raised (`OpenKind`): what 三 carries depends on it.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import chain
from operator import itemgetter
from typing import Literal

from agent.core.arxiv import find_ids, id_keys
from agent.core.dates import MONTH_DAY, month_day, read_day
from agent.core.errors import ParseError, WorkspaceError
from agent.core.labels import ZH, ZH_LIVING
from agent.core.names import release_version
from agent.core.text import bigram_counts, dice, facts, fold, least_shared, similarity, subject_head
from agent.plan.parse import parse
from schemas.briefing import Briefing, VerifyItem
from schemas.documents import SourceDoc

AnchorKind = Literal["arxiv", "subject", "url"]
# where an open item was raised: the living document's list of open questions, two documents giving
# one figure differently, or a briefing's own doubt (the model's note, or an editor's question)
OpenKind = Literal["living", "dispute", "doubt"]
_LIVING_DATE = re.compile(rf"[（(]\s*({MONTH_DAY})\b[^）)]*[）)]")
_CELL_DATE = re.compile(rf"\|\s*({MONTH_DAY})\s*(?=\|)")  # a table cell that is only 'M-D'
_URL = re.compile(
    r"(?:https?://)?(?:www\.)?((?:github\.com|arxiv\.org|huggingface\.co|[a-z0-9-]+\.(?:ai|io|dev|com|org))/[^\s）)|，,；;]+)"
)
_BULLET_OR_BOLD = re.compile(r"^[-*]\s+|\*\*")
_SCHEME_WWW = re.compile(r"^(?:https?://)?(?:www\.)?")
_SECTION = re.compile(r"^#+\s*(§\d+(?:\.\d+)*\s*.+?)\s*$", re.M)
LISTED_ANCHORS = 25  # anchors listed in one prompt, at most: the bound that keeps prompts flat
SAME_OPEN_ITEM = 0.6  # a briefing's item and a living document's open question this alike are one
SAME_SUBJECT = 0.6  # two subject names this alike, with the same versions and model names, are one subject
_ALIKE_FLOOR = 0.3  # below this no name can be the other's with words added (`same_subject`'s containment)
_TOLD_AT_MOST = 16  # anchors pooled into one subject: a chain of alike names stops here
ANCHOR_ID, ITEM_ID = "A", "Q"  # 'A7' names an anchor in a prompt and its answer, 'Q2' an open item
_ID = re.compile(r"([AQ])(\d{1,6})")


@dataclass(frozen=True)
class Anchor:
    kind: AnchorKind
    key: str  # versionless arXiv key, normalised URL, or the subject as written
    label: str  # what a reader sees: paper title, increment title, living-doc line
    first_date: dt.date | None  # None: only the living document knows it, undated
    source: str  # workspace path of the briefing or living document that anchored it
    text: str = ""  # everything the anchor said, to tell "nothing new" from "a supplement"
    display_id: str = ""  # arXiv ID as first displayed (with version), for 四's continued rows
    credibility: str = ""
    # the entries that told it ('<path>#<n>': an increment, an arXiv row, a living-document line):
    # anchors told by one entry are one subject, whatever their kind (`AnchorRegistry.told`)
    origins: frozenset[str] = frozenset()
    dates: tuple[dt.date, ...] = ()  # every evening that told it, when more than `first_date`

    @property
    def evenings(self) -> tuple[dt.date, ...]:
        """The evenings that told it, in order (the living document's undated line none)."""
        return self.dates or ((self.first_date,) if self.first_date else ())

    @property
    def when(self) -> str:
        """'9-21' as the briefings write it, or 'living' when undated."""
        return month_day(self.first_date) if self.first_date else "living"


@dataclass(frozen=True)
class OpenItem:
    item: VerifyItem
    origin: str  # 'M-D' of the briefing (or the living document's mark) that first raised it
    source: str
    kind: OpenKind = "doubt"
    briefed: bool = True  # an earlier briefing lists it; False: only the living document's list, so far


_Listed = tuple[Anchor, tuple[str, ...], tuple[str, ...]]  # a subject, the tokens naming it, its versions


@dataclass(frozen=True)
class AnchorRegistry:
    topic: str
    date: dt.date
    anchors: tuple[Anchor, ...]
    open_items: tuple[OpenItem, ...]
    sections: tuple[str, ...]  # the living document's § headings, in order
    adjacent: tuple[Anchor, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)  # e.g. an adjacent briefing read as plain text

    @property
    def briefed_items(self) -> tuple[OpenItem, ...]:
        """The open items an earlier briefing lists: what the prompts name as its earlier briefings'
        open items. A living document's question joins them the evening a briefing first carries
        it (and requests recorded before the list was read stay the same requests)."""
        return tuple(o for o in self.open_items if o.briefed)

    @cached_property
    def _position(self) -> dict[tuple[str, str], int]:
        """(kind, key) -> index in `anchors`: lookups by ID or URL without a scan (keys are unique
        after `_merge`; else the first wins)."""
        position: dict[tuple[str, str], int] = {}
        for i, a in enumerate(self.anchors):
            position.setdefault((a.kind, a.key), i)
        return position

    @cached_property
    def _subject_tokens(self) -> tuple[tuple[_Listed, ...], dict[str, list[int]]]:
        """Each subject anchor with the tokens that name it and its versions, and each distinct token's
        postings (a subject holding a token twice is posted twice): the part of ranking by overlap
        that depends on the registry alone, which every document of the evening asks. A version
        ('v0.14', '2.29.1') does not name a subject: a document about the next release of an
        anchored product must see the release before it, the anchor its answer names; the versions
        only rank it."""
        subjects: list[_Listed] = []
        postings: dict[str, list[int]] = {}
        for a in self.anchors:
            toks = _tokens(a.key) if a.kind == "subject" else ()
            versions = tuple(t for t in toks if _VERSION_TOKEN.fullmatch(t))
            names = tuple(t for t in toks if t not in versions) or toks
            if names:
                for t in names:
                    postings.setdefault(t, []).append(len(subjects))
                subjects.append((a, names, versions if len(names) < len(toks) else ()))
        return tuple(subjects), postings

    def _get(self, kind: AnchorKind, key: str) -> Anchor | None:
        i = self._position.get((kind, key))
        return None if i is None else self.anchors[i]

    def arxiv(self, key: str) -> Anchor | None:
        return self._get("arxiv", key)

    def url(self, url: str) -> Anchor | None:
        return self._get("url", normalise_url(url))

    def subject(self, title: str, threshold: float = 0.5) -> Anchor | None:
        """The anchored subject most like `title` (named as the prompt lists it or bare), if any
        is alike enough. Ties go to the earliest anchor, as a scan's `max` does
        (tests/test_anchor_lookup.py holds the two equal)."""
        score, i = max(self._scored(bare_name(title), threshold), default=(0.0, -1), key=itemgetter(0))
        return self.anchors[i] if i >= 0 and score >= threshold else None

    def _scored(self, title: str, threshold: float) -> Iterable[tuple[float, int]]:
        """(similarity, index) of the subject anchors whose bare name may reach `threshold` against
        `title`, in index order.

        Every claim of the evening asks, against every subject of the history, so the subjects
        are indexed by bigram: each one's shared bigram count, summed from the postings, is
        exactly the numerator of `similarity` (same integers, so the same float), and only those
        sharing enough to reach `threshold` are scored."""
        grams, total = bigram_counts(title)
        if not (threshold > 0 and grams):
            return ((similarity(title, bare_name(a.key)), i) for i, a in enumerate(self.anchors) if a.kind == "subject")
        postings, totals = self._subject_grams
        # a subject holding a bigram m times is posted under (bigram, 1..m): min(n, m) postings match
        shared = Counter(
            chain.from_iterable(postings.get((gram, k), ()) for gram, n in grams.items() for k in range(1, n + 1))
        )
        least = least_shared(threshold, total)  # fewer cannot reach the threshold: not scored
        return ((2 * shared[i] / (total + totals[i]), i) for i in sorted(i for i, m in shared.items() if m >= least))

    # --- one subject, one line: what the prompts list and what dedupe measures against ----------------

    @cached_property
    def _index(self) -> dict[Anchor, int]:
        return {a: i for i, a in reversed(list(enumerate(self.anchors)))}

    def anchor_id(self, anchor: Anchor) -> str:
        """'A7': how a prompt lists the anchor and an answer cites it (its place in the registry, so
        every request of the evening for this topic names it alike)."""
        return f"{ANCHOR_ID}{self._index[anchor] + 1}"

    def by_id(self, ident: str) -> Anchor | None:
        """The anchor an answer cites by id ('A7'), or None when `ident` is no anchor's id."""
        m = _ID.fullmatch(ident.strip())
        n = int(m[2]) if m and m[1] == ANCHOR_ID else 0
        return self.anchors[n - 1] if 0 < n <= len(self.anchors) else None

    def item_id(self, item: OpenItem) -> str:
        """'Q2': how a prompt lists an open item of an earlier briefing and an answer names it."""
        return f"{ITEM_ID}{self.briefed_items.index(item) + 1}"

    def item_by_id(self, ident: str) -> OpenItem | None:
        m = _ID.fullmatch(ident.strip())
        n = int(m[2]) if m and m[1] == ITEM_ID else 0
        return self.briefed_items[n - 1] if 0 < n <= len(self.briefed_items) else None

    @cached_property
    def _by_origin(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for i, a in enumerate(self.anchors):
            for o in a.origins:
                out.setdefault(o, []).append(i)
        return out

    @cached_property
    def _alike(self) -> dict[int, list[int]]:
        """Subject -> the subjects named alike, filled as asked: every document's prompt lists the
        subjects it names, and a long history compares each name with hundreds of others."""
        return {}

    def _named_alike_to(self, i: int) -> list[int]:
        if i not in self._alike:
            name = bare_name(self.anchors[i].key)
            self._alike[i] = [j for _, j in self._scored(name, _ALIKE_FLOOR) if same_subject(name, self.anchors[j].key)]
        return self._alike[i]

    def told(self, anchor: Anchor) -> tuple[Anchor, ...]:
        """Everything anchored about the subject `anchor` is about, `anchor` first: what one entry told
        with it (an increment's title, its link and its paper; a living-document line's), and the
        subjects named alike (`same_subject`) — one release or paper told on several evenings in
        other words is one subject, holding every fact told of it."""
        start = self._index[anchor]
        seen = {start}
        todo = [start]
        while todo and len(seen) < _TOLD_AT_MOST:
            i = todo.pop()
            a = self.anchors[i]
            near = [j for o in a.origins for j in self._by_origin.get(o, ())]
            near += self._named_alike_to(i) if a.kind == "subject" else []
            for j in near:
                if j not in seen:
                    seen.add(j)
                    todo.append(j)
        return (anchor, *(self.anchors[j] for j in sorted(seen - {start})))

    def listing(self, text: str, limit: int = LISTED_ANCHORS) -> list[tuple[Anchor, tuple[Anchor, ...]]]:
        """The lines a prompt lists for one document: each relevant subject once, under the first of
        its anchors that `relevant_to` ranks, with everything `told` about it."""
        lines: list[tuple[Anchor, tuple[Anchor, ...]]] = []
        listed: set[Anchor] = set()
        for a in self.relevant_to(text, limit):
            if a not in listed:
                group = self.told(a)
                listed.update(group)
                lines.append((a, group))
        return lines

    @cached_property
    def _subject_grams(self) -> tuple[dict[tuple[str, int], list[int]], dict[int, int]]:
        """(bigram, k) -> the subject anchors whose bare name has that bigram k times or more, and
        each such anchor's bigram total: `subject` counts a title's shared bigrams by counting
        postings instead of comparing titles."""
        index: dict[tuple[str, int], list[int]] = {}
        totals: dict[int, int] = {}
        for i, a in enumerate(self.anchors):
            if a.kind == "subject":
                grams, totals[i] = bigram_counts(bare_name(a.key))
                for g, n in grams.items():
                    for k in range(1, n + 1):
                        index.setdefault((g, k), []).append(i)
        return index, totals

    def relevant_to(self, text: str, limit: int = LISTED_ANCHORS) -> list[Anchor]:
        """The anchors worth showing the model for one document: its arXiv IDs and URLs first,
        then the subjects most of whose tokens the text contains. At most `limit`, however long
        the history: what a prompt lists is bounded by relevance, not by how much is anchored."""
        keys = id_keys(text)
        urls = {normalise_url(u) for u in _URL.findall(text)}
        found = [self._position.get(("arxiv", k)) for k in keys] + [self._position.get(("url", u)) for u in urls]
        hits = [self.anchors[i] for i in sorted(i for i in found if i is not None)]
        low = text.lower()
        # An ASCII token is a word of the text: one of its runs of the characters such tokens are
        # made of, or a piece of one ('kueue' of 'kueue.x-k8s.io'), never a part of a word ('ga'
        # of 'gang'). Chinese has no word boundaries: a Chinese token is looked for anywhere.
        runs = set(_TOKEN_RUN.findall(low))
        runs |= {r.strip(".+-_") for r in runs}  # 'v0.15.0.' ends a sentence; 'c++' is a name
        words = runs | {p for r in runs for p in _TOKEN_PIECES.split(r)}
        versions = {release_version(w) for w in words if _VERSION_TOKEN.fullmatch(w)}  # 'v0.14.0' is '0.14'

        subjects, postings = self._subject_tokens
        held: Counter[int] = Counter()  # subject -> how many of its naming tokens the text contains
        for token, posted in postings.items():
            if token in words if token.isascii() else token in low:
                held.update(posted)

        def named(i: int) -> bool:
            """Its own version is in the text (or it has none)."""
            own = subjects[i][2]
            return not own or any(release_version(v) in versions for v in own)

        def rank(i: int) -> tuple[float, bool, tuple[int, ...], int]:
            """Most of its name first, then its own version named, then the highest version (a hotfix of
            an older line is anchored after the newer release), then the newest."""
            a, names, own = subjects[i]
            release = tuple(-n for n in _release_numbers(own))
            return (-held[i] / len(names), not named(i), release, -(a.first_date or dt.date.min).toordinal())

        releases: set[tuple[str, ...]] = set()  # products some release of which is listed unnamed
        for i in sorted((i for i in held if held[i] / len(subjects[i][1]) > 0.5), key=rank):
            a, names, _ = subjects[i]
            if not named(i):  # of a product's releases the text does not name, the latest: the one before tonight's
                if names in releases:
                    continue
                releases.add(names)
            hits.append(a)
        return _unique(hits)[:limit]


def _release_numbers(versions: tuple[str, ...]) -> tuple[int, ...]:
    """'v0.24.1' -> (0, 24, 1): the first version's numbers, for ordering releases of one product."""
    return tuple(int(n) for n in re.findall(r"\d+", versions[0])) if versions else ()


def build_registry(docs: Iterable[SourceDoc], topic: str, date: dt.date) -> AnchorRegistry:
    """Read the living document, the baselines and the adjacent briefings among `docs` (with text)."""
    anchors: list[Anchor] = []
    adjacent: list[Anchor] = []
    sections: tuple[str, ...] = ()
    latest: tuple[Briefing, str] | None = None  # the newest baseline: its open items carry over
    marks: list[OpenItem] = []  # the living document's open questions
    warnings: list[str] = []
    for doc in docs:
        if not doc.read:
            continue
        if doc.kind == "living":
            sections = tuple(_SECTION.findall(doc.text))
            anchors += _from_living(doc, date)
            marks += _living_marks(doc, date)
        elif doc.kind == "adjacent":
            # another agent's briefing: read as far as it goes; if it does not parse at all, it is
            # still a document of the evening (extracted like a report), only without its anchors
            try:
                found = _from_briefing(parse(doc.text, path=doc.path, lenient=True), doc.path)
            except ParseError as e:
                warnings.append(f"{doc.path} is not a briefing this parser can read ({e.message}); read as plain text")
                continue
            adjacent += [a for a in found if a.kind == "subject"]
        elif doc.kind == "baseline":
            b = _parse_briefing(doc)
            anchors += _from_briefing(b, doc.path)
            if latest is None or b.date > latest[0].date:
                latest = (b, doc.path)
    return AnchorRegistry(
        topic=topic,
        date=date,
        anchors=tuple(_merge(anchors)),
        open_items=_open_items(latest, marks, date),
        sections=sections,
        adjacent=tuple(adjacent),
        warnings=tuple(warnings),
    )


def _open_items(latest: tuple[Briefing, str] | None, marks: list[OpenItem], date: dt.date) -> tuple[OpenItem, ...]:
    """The latest briefing's 三, each item with where it was raised, then the living document's
    open questions that briefing could not know. A question the living document lists is that
    briefing's item (its words, its path), raised by the living document. A listed question the
    briefing left out although written after it was raised was settled, or stopped, that evening;
    the E2 patch takes a settled one out of the list, and until it is applied the list is behind."""
    if latest is None:
        return tuple(marks)
    b, path = latest
    out: list[OpenItem] = []
    for v in b.to_verify:
        listed = any(_same_question(m.item.title, v.title) for m in marks)
        kind: OpenKind = "living" if listed else "dispute" if _reads_as_dispute(v.title) else "doubt"
        out.append(OpenItem(v, v.carried_from or month_day(b.date), path, kind))
    for m in marks:
        raised = read_day(m.origin, date)
        if raised is not None and raised > b.date and not any(_same_question(m.item.title, o.item.title) for o in out):
            out.append(m)
    return tuple(out)


def _same_question(a: str, b: str) -> bool:
    return similarity(bare_name(a), bare_name(b)) >= SAME_OPEN_ITEM


def _reads_as_dispute(title: str) -> bool:
    """'Mooncake v1.0 TTFT 降幅：2.1× 还是 1.6×': the layout writes a dispute so (`Labels.conflict_title`),
    and so do the editors; a question of the model's asks one thing, not which of two figures."""
    return ZH.conflict_or in title.rpartition(ZH.subject_sep)[2]


_MARK_TAIL = re.compile(r"[（(]([^（()）]*)[）)]\s*$")  # '（9-21 起，低风险；…）' after an open question
_MARK_DATE = re.compile(rf"(?<![\d.-])({MONTH_DAY})(?![\d.-])")
_MARK_RISK = re.compile(rf"([^\s（()），,；;]+?){ZH.risk_suffix}")  # as 三's head line says it (agent.plan.parse)


@dataclass
class _QuestionList:
    """Where a living document's list of open 待核实 questions is, read line by line: from a heading
    naming 待核实 that is no section of its own ('## 附：开放待核实', not '## §1 引擎（含待核实）') to the
    next heading of its level or higher; its sub-headings ('### 高风险') stay in it."""

    level: int = 0  # the list heading's level; 0 outside the list

    def read(self, line: str) -> bool:
        """Whether `line` is in the list (its own heading included)."""
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            if self.level and level > self.level:
                return True
            heading = line.lstrip("#").strip()
            self.level = level if ZH_LIVING.verify_mark in heading and not heading.startswith("§") else 0
        return bool(self.level)


def _living_marks(doc: SourceDoc, date: dt.date) -> list[OpenItem]:
    """The living document's open questions: the bullets under a heading that names 待核实
    ('## 附 B：开放待核实'), each '- question（9-21 起，低风险）'. Only the list: a 待核实 on an
    anchor's line may be the E2 patch's copy of one evening's model notes (`agent.write.patch`), while
    the list is what the document itself holds open, and E2 only takes settled lines out of it. One
    raised tonight or later is not known before this evening (a re-run reads today's document)."""
    out: list[OpenItem] = []
    questions = _QuestionList()
    for line in doc.text.splitlines():
        t = line.strip()
        if not (questions.read(t) and t.startswith(("-", "*"))):
            continue
        question = _BULLET_OR_BOLD.sub("", t)
        tail = _MARK_TAIL.search(question)
        said = tail.group(1) if tail else ""
        when, risk = _MARK_DATE.search(said), _MARK_RISK.search(said)
        raised = read_day(when.group(1), date) if when else None
        if raised is not None and raised >= date:
            continue
        title = question[: tail.start()].strip() if tail else question.strip()
        rated = risk.group(1) if risk else "低"  # unrated weighs least: not ranked above questions rated 中
        item = VerifyItem(number=len(out) + 1, title=title, risk=rated, problem="", suggestion="")
        out.append(OpenItem(item, when.group(1) if when else "", doc.path, "living", briefed=False))
    return out


def _parse_briefing(doc: SourceDoc) -> Briefing:
    try:
        return parse(doc.text, path=doc.path)
    except ParseError as e:
        raise WorkspaceError(
            f"cannot read the briefing {doc.path}: {e}",
            hint="fix it, or move it out of the inbox if it is not a briefing",
        ) from e


def _from_briefing(b: Briefing, path: str) -> list[Anchor]:
    """Anchors of one briefing. Its arXiv table comes first so that, at equal dates, a paper's
    label is the table's title rather than the increment's 'arXiv:ID title' line."""
    out = _from_arxiv_table(b, path)
    for n, inc in enumerate(b.increments, 1):
        body = " ".join([inc.title, inc.arxiv_line, *(p.text for p in inc.all_points()), inc.relation])
        told = frozenset({f"{path}#{n}"})
        out.append(Anchor("subject", inc.title, inc.title, b.date, path, text=body, origins=told))
        for ref in (s.ref for s in inc.sources):
            if _URL.fullmatch(ref) or ref.startswith(("github.com", "http")):
                out.append(Anchor("url", normalise_url(ref), inc.title, b.date, path, text=body, origins=told))
        for m in find_ids(inc.arxiv_line):
            out.append(
                Anchor(
                    "arxiv",
                    m.id.key,
                    inc.arxiv_line[m.end :].strip() or inc.title,
                    b.date,
                    path,
                    text=body,
                    display_id=m.id.display,
                    credibility=inc.credibility.level,
                    origins=told,
                )
            )
    return out


def _from_arxiv_table(b: Briefing, path: str) -> list[Anchor]:
    out: list[Anchor] = []
    for n, row in enumerate(b.arxiv_rows, 1):
        ids = find_ids(row.arxiv_id)  # the first ID written in the cell is the row's
        if not ids:
            continue
        out.append(
            Anchor(
                "arxiv",
                ids[0].id.key,
                row.title,
                row.anchored_on or b.date,
                path,
                text=f"{row.title} {row.relation}",
                display_id=row.arxiv_id,
                credibility=row.credibility,
                origins=frozenset({f"{path}#arxiv{n}"}),
            )
        )
    return out


def _from_living(doc: SourceDoc, date: dt.date) -> list[Anchor]:
    out: list[Anchor] = []
    parent = ""  # the subject of the last top-level entry: what a nested line's bare version is of
    questions = _QuestionList()  # under it: what is not known yet (`_living_marks`)
    for n, line in enumerate(doc.text.splitlines(), 1):
        t = line.strip()
        if not t or questions.read(t) or t.startswith("#"):
            continue
        told = frozenset({f"{doc.path}:{n}"})
        m = _LIVING_DATE.search(t) or (_CELL_DATE.search(t) if t.startswith("|") else None)
        first = read_day(m.group(1), date) if m else None  # no day of the calendar ('13-1'): undated
        if first is not None and first >= date:
            # written by tonight's E2 update or a later one: not known before this evening, and a
            # re-run of an earlier evening must not find its own increments already anchored
            continue
        since = 0  # where the words naming the next paper of the line may start
        for a in find_ids(t):
            label = _paper_name(t, a.start, a.end, since)
            since = a.end
            out.append(Anchor("arxiv", a.id.key, label, first, doc.path, text=t, display_id=a.id.display, origins=told))
        for u in _URL.findall(t):
            out.append(Anchor("url", normalise_url(u), t[:80], first, doc.path, text=t, origins=told))
        if t.startswith(("-", "*")):
            subject = _BULLET_OR_BOLD.sub("", t).split("：", 1)[0].strip()
            if line[:1] in "-*":
                parent = subject
            elif parent and _NO_SUBJECT.fullmatch(_BRACKETED_TAIL.sub("", subject)):
                subject = f"{_product(parent)} {subject}"  # '  - v0.23.1（11-04）' under vLLM's line is vLLM v0.23.1
            if 2 <= len(subject) <= 60:
                out.append(Anchor("subject", subject, subject, first, doc.path, text=t, origins=told))
    return out


# A nested entry named by a version, a number or a date alone ('v0.23.1', '1.1', 'v2'): it says no subject.
_NO_SUBJECT = re.compile(r"[vV]?\d[\w.\-]*")
# what stands between a paper's name and its ID on a living-document line: '（arXiv ', ' (arXiv:', ' · '
_BEFORE_ID = re.compile(r"[\s（(\[·：:,，—–-]*(?:arxiv[\s:：]*)?$", re.I)
_AFTER_PREVIOUS = re.compile(r"^(?:[\s）)\]·：:,，、；;]|与|和|及)*")  # '）与 ' after the paper before
_LINK_OPEN = re.compile(r"\]\([^)]*$")  # '[Name](https://arxiv.org/abs/' before an ID in a link
_CELL_WORDS = frozenset({"高", "中高", "中", "低"})  # a credibility cell names no paper
_AFTER_ID = re.compile(r"^(?:v\d+)?[\s）)\]·：:,，]*")


def _paper_name(line: str, start: int, end: int, since: int = 0) -> str:
    """A paper's name as a living-document line writes it, for 四 and the prompts: a table row's
    first cell that is neither an ID, a date, a section nor a credibility; else the words before the
    ID since the ID before it (`since`; its bullet, bold marks, link and the bracket it opens on left
    out), when they are more than a date or a word; else the clause after it; else the line without
    its markup."""
    plain = _BULLET_OR_BOLD.sub("", line).strip(" |")[:80]
    if line.startswith("|"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        named = [c for c in cells if _names_a_paper(c) and c[:1] != "§" and c not in _CELL_WORDS]
        return named[0] if named else plain
    before = _LINK_OPEN.sub("", _BULLET_OR_BOLD.sub("", line[since:start])).replace("[", "")
    before = _AFTER_PREVIOUS.sub("", _BEFORE_ID.sub("", before)).strip()
    if not _names_a_paper(before):
        before = ""
    after = re.split(r"[：:。；;]", _AFTER_ID.sub("", line[end:]), maxsplit=1)[0].replace("**", "")
    after = _BRACKETED_TAIL.sub("", after).strip()  # without its source mark
    return (before or after or plain)[:80]


def _names_a_paper(text: str) -> bool:
    """More than a date, a word or an ID: 'HookPoint', not '9-15', '论文' or '2606.22410'."""
    return len(text) >= 3 and not re.fullmatch(MONTH_DAY, text) and not find_ids(text)


_BRACKETED_TAIL = re.compile(r"\s*[（(][^（()）]*[）)]\s*$")


def _product(subject: str) -> str:
    """The product a top-level entry is about, without its version: 'vLLM v0.23.0 发布' -> 'vLLM'."""
    m = re.match(r"(.+?)\s+[vV]?\d+(?:\.\d+)+", subject)
    return (m[1] if m else _BRACKETED_TAIL.sub("", subject)).strip()


def _merge(anchors: list[Anchor]) -> list[Anchor]:
    """One anchor per (kind, key): the earliest date wins, the texts are pooled."""
    by: dict[tuple[str, str], Anchor] = {}
    for a in anchors:
        old = by.get((a.kind, a.key))
        if old is None:
            by[(a.kind, a.key)] = a
            continue
        first = old if _earlier(old.first_date, a.first_date) else a
        text = old.text if a.text in old.text else f"{old.text} {a.text}"
        by[(a.kind, a.key)] = Anchor(
            a.kind,
            a.key,
            first.label if first.first_date else old.label,
            first.first_date,
            first.source,
            text,
            old.display_id or a.display_id,
            old.credibility or a.credibility,
            old.origins | a.origins,
            tuple(sorted(set(old.evenings) | set(a.evenings))),
        )
    # stable: within one date, anchors keep the order their briefing gave them
    return sorted(by.values(), key=lambda a: (a.kind, a.first_date or dt.date.min))


def _earlier(a: dt.date | None, b: dt.date | None) -> bool:
    if a is None:
        return False
    return b is None or a <= b


_KIND_TAG = re.compile(r"^\s*\[(?:subject|arxiv|url)\]\s*", re.I)
_HEAD, _, _TAIL = ZH.verify_item.rpartition("/")  # '矛盾/待核实': the tag, its first word optional
_ITEM_TAG = re.compile(rf"^\s*(?:{re.escape(_HEAD)}/)?{re.escape(_TAIL)}\s*[\u2460-\u2473\d]*\s*[：:]\s*")
_DATE_TAIL = re.compile(r"\s*(?:[·•]\s*\d{1,2}-\d{1,2}|[（(][^（()）]*\d{1,2}-\d{1,2}[^（()）]*[）)])\s*$")


def same_subject(a: str, b: str) -> bool:
    """Two subject names name one subject: alike (`SAME_SUBJECT`), or one is the other with words
    added ('SGLang v0.5.19 发布' in 'SGLang v0.5.19 发布 — RadixArk 成立后的首个版本') — and both
    state the same versions, model names and other numbered names, so 'vLLM v0.23.0' and
    'vLLM v0.23.1' stay two subjects."""
    sa, sb = _name_of(a), _name_of(b)
    if _named_alike(sa, sb):
        return True
    if sa.numbered != sb.numbered:
        return False
    short, long = sorted((sa.folded, sb.folded), key=len)
    return dice(sa.grams, sb.grams) >= SAME_SUBJECT or (len(short) >= _CONTAINED and short in long)


@dataclass(frozen=True)
class _Name:
    """A subject name as `same_subject` reads it: bare, folded, its head (what it names before what
    it says), and the numbered names each states."""

    folded: str
    grams: tuple[Counter[str], int]
    head: str  # folded
    numbered: frozenset[str]
    head_numbered: frozenset[str]


@lru_cache(maxsize=8192)  # `told` asks it of each name against hundreds of others: read once per name, not per pair
def _name_of(name: str) -> _Name:
    bare = bare_name(name)
    head = fold(subject_head(bare))
    return _Name(fold(bare), bigram_counts(bare), head, _numbered(bare), _numbered(head))


def _named_alike(a: _Name, b: _Name) -> bool:
    """Both name the same subject before what they say of it: 'vLLM v0.24.2' and 'vLLM v0.24.2：修
    Blackwell FP8 KV 乱码', or 'NVIDIA Dynamo 1.1：KV 感知路由 GA' and 'NVIDIA Dynamo 1.1：TTFT 定为 1.7×'
    (a briefing's increment, the living line written from it, the next evening's). The name must
    say which release, or be a whole name of some length: 'vLLM：…' and 'vLLM：…' are two subjects."""
    if a.head != b.head:
        return False
    return bool(a.head_numbered) or (len(a.head) >= _CONTAINED and a.head in (a.folded, b.folded))


_CONTAINED = 8  # a shorter name ('vLLM', 'SGLang') inside another says too little to be its subject


def _numbered(name: str) -> frozenset[str]:
    return frozenset(f for f in facts(name) if any(ch.isdigit() for ch in f))


def bare_name(name: str) -> str:
    """An anchor or open item as named, without the marks the prompt or a briefing adds around it:
    '[subject] X · 9-20', 'X（since 9-22）', 'X（9-21 起，低风险）', '待核实 ①：X' all mean X. A model
    copies the name with or without them."""
    out = _ITEM_TAG.sub("", _KIND_TAG.sub("", name))
    while (shorter := _DATE_TAIL.sub("", out)) != out:
        out = shorter
    return out.strip() or name.strip()


def normalise_url(url: str) -> str:
    u = _SCHEME_WWW.sub("", url.strip().lower())
    return u.rstrip("/.")


_TOKEN_RUN = re.compile(r"[a-z0-9_.+-]+")  # what an ASCII token of `_tokens` is made of
_TOKEN_PIECES = re.compile(r"[._+-]")
_VERSION_TOKEN = re.compile(r"v?\d[\w.+-]*")  # '2.29.1', 'v0.14'; not 'h100' or 'gpt-4o'


def _tokens(subject: str) -> tuple[str, ...]:
    """The subject's word-ish tokens, lowercased, for ranking by overlap (a ranking, not a match)."""
    toks = re.findall(r"[A-Za-z][\w.+-]*|\d[\d.]*|[\u4e00-\u9fff]{2,}", subject)
    return tuple(t.lower() for t in toks if len(t) > 1)


def _unique(anchors: list[Anchor]) -> list[Anchor]:
    seen: set[tuple[str, str]] = set()
    out = []
    for a in anchors:
        if (a.kind, a.key) not in seen:
            seen.add((a.kind, a.key))
            out.append(a)
    return out
