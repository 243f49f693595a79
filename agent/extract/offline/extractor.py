"""The offline extractor: a `FileExtraction` per document from its own structure, with no model.

A user without a key, or an evening with the endpoint down, still gets a briefing: the items the
reports already mark (`agent.extract.offline.outline`) are scored against the topic's profile in
`predigest.toml` (its terms for, its adjacent topics' against) and fill the schema a model fills,
for the same rules to judge. In the eval it is the floor a prompt must beat. Nothing here names a
subject of any evening: only field names, Markdown and the topic's own words.
"""

from __future__ import annotations

import math
import re
import time
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from agent.core.arxiv import find_ids, key_of, validate
from agent.core.labels import ZH_ANSWERS as SAY
from agent.core.settings import TopicSection
from agent.core.text import facts
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult
from agent.extract.offline.outline import Item, Outline, Point, clean, parse_outline
from agent.plan.anchors import Anchor, AnchorRegistry
from schemas.briefing import KeyPoint
from schemas.documents import SourceDoc
from schemas.extraction import ArxivRef, Claim, CredLevel, FileExtraction, Relevance, SkippedItem, VerifyNote

STAMP = "offline@1"  # stamped on call records instead of a prompt: no prompt was sent
MODEL = "offline"

_STOP = frozenset(
    {"the", "and", "of", "for", "to", "in", "on", "with", "a", "an", "by", "via", "vs", "or", "is", "are"}
    | {"be", "as", "at", "from", "etc", "llm", "llms", "ai", "new", "use", "using"}
)
_SPLIT_CJK = re.compile(r"[的与和及或等在是了为对之其并而把被从到个]")
_CJK_RUN = re.compile(r"[\u4e00-\u9fff]+")
_CLAUSE = re.compile(r"[，,。；;！!？?\n]")
_DENIAL = re.compile(
    r"无关|不涉及|无直接关系|没有直接关系|不相关|非\s*\S{0,20}\s*主轴|unrelated|not related|irrelevant|off-topic", re.I
)
_DOUBT = re.compile(
    r"待核实|待补|待确认|待验证|未给出|没有给出|未给具体|没有给具体|未说明|没有说明|未公开|数字需|需读原文|"
    r"unverified|to be confirmed|\bTBD\b|not (?:yet )?(?:given|disclosed|confirmed|stated)",
    re.I,
)
# A link is ASCII and ends at the first character a link does not hold: a space, a bracket, a
# quote, or any CJK character or full-width punctuation ("…/releases（22:05 发布）" ends at "（").
_URL = re.compile(r"https?://[!-~]+")
_URL_END = re.compile(r"[)\]|,;>\"'`<].*$|[.:!?]+$")
_LEVELS: tuple[CredLevel, ...] = ("中高", "高", "中", "低")
_LEVEL_WORDS = {"medium-high": "中高", "high": "高", "medium": "中", "low": "低"}
_CAP = {"高": 5, "中": 3, "邻接": 2, "参考": 1}
_REL_ORDER: tuple[Relevance, ...] = ("高", "中", "邻接", "参考")
_MAX_POINTS, _MAX_CHILDREN, _MAX_DEPTH, _MAX_TEXT = 8, 8, 3, 160


# --- the topic as weighted terms ----------------------------------------------------------------


def tokens(text: str) -> dict[str, float]:
    """Terms of a text with their weight: lowercased Latin words (names like vLLM or H100 weigh
    more than plain words) and Chinese character bigrams, since Chinese has no word breaks. A
    Chinese term counts once per overlapping bigram (a four-character term three times), an
    English word once: so a word weighs 1.5 and a name 2.0 against a bigram's 1.0, or an English
    item on the topic would score as a Chinese one half as much, and its writer's 4★ be capped."""
    s = unicodedata.normalize("NFKC", text)
    out: dict[str, float] = {}
    for m in re.finditer(r"[A-Za-z][A-Za-z0-9]*(?:[-.+][A-Za-z0-9]+)*", s):
        w = m.group().lower().rstrip(".")
        if len(w) < 2 or w in _STOP:
            continue
        named = any(c.isdigit() for c in w) or (m.group()[1:] != m.group()[1:].lower())
        out[w] = max(out.get(w, 0.0), 2.0 if named else 1.5)
    for run in _CJK_RUN.findall(s):
        for piece in _SPLIT_CJK.split(run):
            grams = [piece] if len(piece) == 2 else [piece[i : i + 2] for i in range(len(piece) - 1)]
            for g in grams:
                out.setdefault(g, 1.0)
    return out


def _affirmed(text: str) -> tuple[str, str]:
    """(clauses that assert, clauses that deny): "与推理无关" must not count as being about 推理."""
    keep, deny = [], []
    for clause in _CLAUSE.split(text):
        (deny if _DENIAL.search(clause) else keep).append(clause)
    return "，".join(keep), "，".join(deny)


@dataclass(frozen=True)
class Fit:
    relevance: Relevance
    score: float  # profile weight found, title counted twice
    against: float  # adjacent weight found
    terms: tuple[str, ...]  # the profile terms that matched, strongest first


@dataclass(frozen=True)
class Profile:
    """The topic's terms: for it (its profile), against it (its adjacent topics' words)."""

    topic: str
    terms: Mapping[str, float]
    adjacent: Mapping[str, float]

    @classmethod
    def of(cls, topic: str, section: TopicSection | None, living: str = "") -> Profile:
        """From `predigest.toml`; with no profile, the topic's name and its living document's
        headings and anchor lines stand in (what the topic already holds is what it is about)."""
        profile = (section.profile if section else "").strip()
        terms = tokens(f"{topic} {profile}")
        if not profile:
            lines = [ln for ln in living.splitlines() if ln.lstrip().startswith(("#", "-", "*"))]
            for t, w in tokens("\n".join(lines)).items():
                terms.setdefault(t, w * 0.5)
        adjacent = {t: w for t, w in tokens(section.adjacent if section else "").items() if t not in terms}
        return cls(topic, terms, adjacent)

    def fit(self, title: str, body: str, declared: str = "") -> Fit:
        """How much an item is about the topic. `declared` is what the writer filed it under
        (a category line, a summary-table cell): a denial there ("与推理无关") settles it."""
        said, denied = _affirmed(f"{title}\n{body}")
        t_said, _ = _affirmed(title)
        d_said, d_denied = _affirmed(declared)
        found = tokens(said + "\n" + d_said)
        head = tokens(t_said + "\n" + d_said)
        score = sum(w for t, w in found.items() if t in self.terms) + sum(w for t, w in head.items() if t in self.terms)
        against = sum(w for t, w in found.items() if t in self.adjacent)
        matched = sorted((t for t in found if t in self.terms), key=lambda t: (-self.terms[t], t))
        if any(t in self.terms for t in tokens(d_denied)) or (not said.strip() and denied):
            return Fit("参考", score, against, tuple(matched))
        filed_elsewhere = bool(declared.strip()) and not any(t in self.terms for t in tokens(d_said))
        in_title = any(t in self.terms for t in tokens(t_said))
        return Fit(_label(score, against, filed_elsewhere, in_title), score, against, tuple(matched))


def _label(score: float, against: float, filed_elsewhere: bool, in_title: bool) -> Relevance:
    """High: enough profile terms, few of the adjacent topics', and the subject itself (its title)
    on-topic unless the body leaves no doubt. Scores are in profile-term weight: a named term like
    vLLM is 2.0, a plain word 1.5, a Chinese bigram 1.0 (see `tokens`), title terms count twice."""
    focus = score / (score + against) if score + against else 0.0
    if score >= 6 and focus >= 0.6 and not filed_elsewhere and (in_title or score >= 10):
        return "高"
    if score >= 3 and focus >= 0.5 and (not filed_elsewhere or score >= 12):
        return "中"
    if score > 0 or against > 0:
        return "邻接"
    return "参考"


# --- one document -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Context:
    """What every document of the evening is judged against."""

    topic: str
    profile: Profile
    registry: AnchorRegistry
    sections: tuple[tuple[str, Mapping[str, float]], ...]  # living § heading → its terms


def context(topic: str, section: TopicSection | None, registry: AnchorRegistry, living: str = "") -> Context:
    return Context(topic, Profile.of(topic, section, living), registry, tuple(_living_sections(registry, living)))


def _living_sections(registry: AnchorRegistry, living: str) -> Iterable[tuple[str, Mapping[str, float]]]:
    parts = re.split(r"(?m)^#+\s*(§\d+(?:\.\d+)*\s*.+?)\s*$", living)
    bodies = dict(zip(parts[1::2], parts[2::2], strict=False))
    for name in registry.sections:
        yield name, tokens(f"{name} {name} {bodies.get(name, '')}")


def extract_document(doc: SourceDoc, ctx: Context) -> FileExtraction:
    """The whole answer for one document, as a careful reader of its structure would give it."""
    if doc.kind == "adjacent":
        return FileExtraction(
            relevance="邻接",
            relevance_reason=SAY.adjacent_reason.format(topic=doc.topic or SAY.other_topic),
            held=SAY.adjacent_held,
        )
    outline = parse_outline(doc.text, whole=doc.kind == "paper_card")
    if doc.kind == "queue":
        return _queue(outline, doc, ctx)
    claims: list[tuple[Relevance, Claim]] = []
    skipped: list[SkippedItem] = []
    fits: list[Fit] = []
    for item in outline.items:
        fit = _fit(item, outline, doc, ctx)
        fits.append(fit)
        # one line of a list or a table says too little for a middling fit to carry it
        kept = ("高",) if item.row else ("高", "中")
        claim = _claim(item, outline, doc, ctx, fit) if fit.relevance in kept else None
        if claim is None:
            skipped.append(SkippedItem(subject=_scrub(_short(item.title), ctx), reason=_skip_reason(item, fit, ctx)))
        else:
            claims.append((fit.relevance, claim))
    relevance = min((f.relevance for f in fits), key=_REL_ORDER.index, default="参考")
    if doc.kind == "paper_card" and not claims:
        relevance = "邻接" if relevance in ("高", "中", "邻接") and fits and fits[0].score > 0 else "参考"
    claims.sort(key=lambda rc: (-rc[1].stars, _REL_ORDER.index(rc[0])))
    # the heaviest profile terms the items hit; among equals, the first met (a set's order changed with the hash seed)
    hit = dict.fromkeys(t for f in fits for t in f.terms[:4])
    terms = sorted(hit, key=lambda t: -ctx.profile.terms.get(t, 0))[:5]
    return FileExtraction(
        relevance=relevance,
        relevance_reason=_doc_reason(claims, fits, terms, ctx),
        held=_held(outline, doc, claims, skipped, ctx),
        claims=[c for _, c in claims],
        skipped=skipped,
    )


def _fit(item: Item, outline: Outline, doc: SourceDoc, ctx: Context) -> Fit:
    body = "\n".join(p.text for p in item.walk())
    declared = " ".join(
        x for x in (item.fields.get("category", ""), item.index_text, outline.meta.get("category", "")) if x
    )
    if doc.kind != "paper_card":
        return ctx.profile.fit(item.title, body, declared)
    title = outline.meta.get("title", "") or outline.title or item.title
    own = outline.meta.get("category", "").strip().lower() == ctx.topic.lower()  # filed under this very topic
    fit = ctx.profile.fit(title, body, "" if own else declared)
    return replace(fit, relevance="高") if own else fit


def _claim(item: Item, outline: Outline, doc: SourceDoc, ctx: Context, fit: Fit) -> Claim | None:
    text = doc.text[item.start : item.end]
    doc_facts = facts(text)  # whole lines of the document, so each of these facts is one of the document's
    title = _scrub(_title(item, outline, doc), ctx)
    ids = _arxiv(item, outline, doc, ctx)
    urls = _urls(item, text)
    points = [kp for p in item.points[: _MAX_POINTS * 2] if (kp := _key_point(p, ctx, doc_facts, 1))][:_MAX_POINTS]
    if not points or not title:
        return None
    evidence = [e for e in [item.heading, *(p.raw for p in item.points[:3])] if e and e in doc.text]
    if not evidence:
        return None
    level, why = _credibility(item, outline, doc, ids, urls, text)
    substantive = len(set().union(*(facts(x.text) for p in points for x in p.walk()))) >= 3 or bool(ids)
    stars = _stars(item, fit, substantive, any(it.rating is not None for it in outline.items))
    anchor, relation, note = _relation(ctx, ids, urls, title, points)
    section = _section(ctx, f"{title} {item.index_text} " + " ".join(p.text for p in item.points))
    return Claim(
        title=clip(title, 60),
        stars=stars,
        key_points=points,
        evidence=evidence[:4],
        section_ref=item.ref,
        arxiv=ids,
        urls=urls,
        credibility=level,
        credibility_reason=why,
        relation=relation,
        anchor=anchor,
        relation_note=note,
        suggested_section=section,
        to_verify=_doubts(item, title, ctx, stars),
    )


def _title(item: Item, outline: Outline, doc: SourceDoc) -> str:
    if doc.kind == "paper_card":
        return clean(outline.meta.get("title", "") or outline.title or item.title)
    given = item.fields.get("title")
    if given and item.row:
        return clean(given)
    return clean(item.title)


def _stars(item: Item, fit: Fit, substantive: bool, rated_doc: bool = False) -> int:
    """The writer's rating when there is one, held down by how far the item is from the topic;
    otherwise from the fit: on-topic with figures or a paper is strong, on-topic alone useful.
    A table row is one line of a list, never more than a secondary anchor on its own; in a
    document that rates its items, one the writer left unrated is not promoted past 3★."""
    cap = _CAP[fit.relevance]
    if rated_doc and item.rating is None:
        cap = min(cap, 3)
    if item.rating is not None:
        stars = min(item.rating, cap)
    else:
        stars = min(cap, 4 if fit.relevance == "高" and substantive else 3 if fit.relevance in ("高", "中") else 2)
    if item.row:
        stars = min(stars, 3)
    return max(1, stars)


def _arxiv(item: Item, outline: Outline, doc: SourceDoc, ctx: Context) -> list[ArxivRef]:
    """Papers the item rests on, valid as of the evening (an impossible or future ID is left out):
    those its heading and fields name, else those its own bullets name (not a lifted row's)."""
    head = " ".join(
        [item.heading, item.fields.get("arxiv", ""), item.fields.get("source", "")]
        + ([outline.meta.get("arxiv", "")] if doc.kind == "paper_card" else [])
    )
    source = head if find_ids(head) else "\n".join(p.raw for p in item.walk())
    refs: dict[str, ArxivRef] = {}
    given = item.fields.get("title", "") or outline.meta.get("title", "")
    for m in find_ids(source):
        if m.id.key in refs or not validate(m.id, not_after=ctx.registry.date).ok:
            continue
        refs[m.id.key] = ArxivRef(arxiv_id=source[m.start : m.end], title=clean(given) or item.title)
    return list(refs.values())[:3]


def links(text: str) -> list[str]:
    """Every link written in `text`, each ending where the link ends (see `_URL`)."""
    return [u for u in (_URL_END.sub("", m) for m in _URL.findall(text)) if "://" in u and not u.endswith("://")]


def _urls(item: Item, text: str) -> list[str]:
    """The links of the item's source fields, else of its text: a lifted row's own line, not the
    table's (each row of a release table links its own release)."""
    source = " ".join(v for k, v in item.fields.items() if k in ("source", "arxiv"))
    own = "\n".join(p.raw for p in item.walk()) if item.row else text
    found = links(source) or links(own)
    out: list[str] = []
    for u in found:
        u = re.sub(r"^https?://(?:www\.)?", "", u).rstrip("/")
        if "arxiv.org/" in u or u in out:
            continue
        out.append(u)
    return out[:3]


def _key_point(p: Point, ctx: Context, doc_facts: set[str], depth: int) -> KeyPoint | None:
    """A bullet as a key point: trimmed at a clause, its invalid arXiv IDs removed, and kept only
    if every figure it states is in the document (what the grounding rule will check)."""
    text = _scrub(_trim(p.text), ctx)
    if not text or not facts(text) <= doc_facts:
        return None
    children: list[KeyPoint] = []
    if depth < _MAX_DEPTH:
        children = [kp for c in p.children if (kp := _key_point(c, ctx, doc_facts, depth + 1))][:_MAX_CHILDREN]
    return KeyPoint(text=text, numbered=p.numbered and depth > 1, children=children)


def _trim(s: str, n: int = _MAX_TEXT) -> str:
    """At most about `n` characters, cut after a clause and never inside a bracket: a cut text
    still reads as a sentence ("…（22:05" would not)."""
    if len(s) <= n:
        return s
    cut = max(s.rfind(c, 0, n) for c in "，。；;,")
    head = s[: cut if cut > n // 4 else n]
    for open_, close in ("（）", "()", "[]", "【】", "「」"):
        if head.count(open_) > head.count(close):
            head = head[: head.rfind(open_)]
    return head.rstrip("，。；;,、:： ") + "…"


def _scrub(s: str, ctx: Context) -> str:
    """Leave out every arXiv ID that cannot be real on the evening (bad month, from the future)."""
    for m in reversed(find_ids(s)):
        if not validate(m.id, not_after=ctx.registry.date).ok:
            start = m.start
            prefix = re.search(r"(?i)(?:arxiv\s*:?\s*|arxiv\.org/(?:abs|pdf)/)$", s[:start])
            if prefix:
                start = prefix.start()
            s = s[:start] + s[m.end :]
    return " ".join(s.split()).strip(" :：,，")


_CRED_BY_SOURCE: tuple[tuple[re.Pattern[str], CredLevel, str], ...] = (
    (re.compile(r"release notes|/releases\b|changelog|发布说明|更新日志|release", re.I), "高", SAY.cred_release_notes),
    (re.compile(r"github\.com/[^/\s]+/[^/\s]+/(?:pull|issues)/|\bPR\s*#\d+", re.I), "中高", SAY.cred_pr_issue),
    (
        re.compile(
            r"reddit|\br/\w+|hacker news|news\.ycombinator|\bHN\b|公众号|转载|论坛|讨论帖"
            r"|twitter|x\.com|微博|快讯|传闻|社交媒体",
            re.I,
        ),
        "低",
        SAY.cred_forum,
    ),
    (re.compile(r"官方|official|documentation|文档|docs\.", re.I), "中高", SAY.cred_official),
    (re.compile(r"blog|博客|dev\.to|medium\.com|substack", re.I), "中", SAY.cred_blog),
    (re.compile(r"github\.com|github", re.I), "中", SAY.cred_github),
)


def _credibility(
    item: Item, outline: Outline, doc: SourceDoc, ids: list[ArxivRef], urls: list[str], text: str
) -> tuple[CredLevel, str]:
    """The writer's 可信度 line when present; else by the kind of source linked."""
    if stated := item.fields.get("credibility"):
        value = clean(stated)
        word = re.match(r"(?i)(medium[- ]high|high|medium|low)\b", value)
        if word:
            value = _LEVEL_WORDS[word[1].lower().replace(" ", "-")] + value[word.end() :]
        level = next((lv for lv in _LEVELS if value.startswith(lv)), None)
        if level:
            reason = re.sub(r"^[（(]|[）)]$", "", value[len(level) :].strip())
            return level, reason or SAY.cred_self_rated.format(level=level)
    if doc.kind == "paper_card" or ids:
        return "高", SAY.cred_paper
    source = " ".join([item.fields.get("source", ""), item.fields.get("type", ""), *urls])
    for pattern, level, why in _CRED_BY_SOURCE:
        if pattern.search(source):
            return level, why
    return "中", SAY.cred_unsourced


def _relation(
    ctx: Context, ids: list[ArxivRef], urls: list[str], title: str, points: list[KeyPoint]
) -> tuple[str, str, str]:
    """(anchor, relation, note): by arXiv ID, then URL, then title; anchored with a figure, flag,
    version or ID the anchor lacks is a supplement, with nothing of the kind it is covered."""
    reg = ctx.registry
    anchor: Anchor | None = None
    for a in ids:
        anchor = anchor or reg.arxiv(key_of(a.arxiv_id) or a.arxiv_id)
    for u in urls:
        anchor = anchor or reg.url(u)
    anchor = anchor or reg.subject(title, threshold=0.6) or _contained_subject(reg, title)
    if anchor is None:
        return "", "new", SAY.no_anchor.format(topic=ctx.topic)
    mine = set().union(*(facts(x.text) for p in points for x in p.walk()), *(facts(a.arxiv_id) for a in ids))
    new = sorted(mine - facts(anchor.text))
    named = f"arXiv {anchor.display_id or anchor.key}" if anchor.kind == "arxiv" else anchor.key
    where = SAY.anchored_where.format(when=anchor.when, label=anchor.label[:30])
    if new:
        return named, "supplement", SAY.supplement_note.format(where=where, new="、".join(new[:4]))
    return named, "covered", SAY.covered_note.format(where=where)


def _contained_subject(reg: AnchorRegistry, title: str) -> Anchor | None:
    """An anchored subject written out whole inside the title ("X 发布" in "X 发布 — 细节")."""
    low = title.lower()
    hits = [a for a in reg.anchors if a.kind == "subject" and len(a.key) >= 6 and a.key.lower() in low]
    return max(hits, key=lambda a: len(a.key), default=None)


def _section(ctx: Context, text: str) -> str:
    """The living-document section sharing the most terms with the item."""
    if not ctx.sections:
        return SAY.no_section.format(topic=ctx.topic)
    mine = tokens(text)
    best = max(
        ctx.sections,
        key=lambda s: sum(w for t, w in s[1].items() if t in mine) / math.sqrt(len(s[1]) or 1),
    )
    return best[0]


def _doubts(item: Item, title: str, ctx: Context, stars: int) -> list[VerifyNote]:
    """What the writer flagged as unverified or missing, one note per item."""
    doubt = next((p for p in item.walk() if _DOUBT.search(p.text)), None)
    if doubt is None:
        return []
    source = item.fields.get("source", "")
    where = f"（{_trim(clean(source))[:60]}）" if source else ""
    return [
        VerifyNote(
            title=SAY.verify_title.format(subject=_short(title)),
            risk="中" if stars >= 4 else "低",
            problem=_scrub(_trim(doubt.text), ctx),
            suggestion=SAY.verify_suggestion.format(where=where),
        )
    ]


def _short(title: str) -> str:
    head = re.split(r"\s+[—–-]+\s+|——|：|:\s", title, maxsplit=1)[0].strip()
    return clip(head, 40)


def clip(text: str, n: int) -> str:
    """At most `n` characters; a cut says so with an ellipsis, and an English title is cut
    between words (a Chinese one anywhere: it has no spaces to cut at)."""
    if len(text) <= n:
        return text
    head = text[: n - 1]
    space = head.rfind(" ")
    if text[n - 1].isascii() and text[n - 1].isalnum() and space > n // 2:
        head = head[:space]
    return head.rstrip(" ,.;:，、") + "…"


def _skip_reason(item: Item, fit: Fit, ctx: Context) -> str:
    filed = item.fields.get("category", "") or _category_cells(item)
    if filed:
        return SAY.filed_as.format(category=_trim(_scrub(clean(filed), ctx), 60))
    if fit.relevance == "邻接":
        return SAY.adjacent_skip.format(topic=ctx.topic)
    return SAY.off_profile.format(topic=ctx.topic)


def _category_cells(item: Item) -> str:
    """What a summary-table row says of the item's kind, without the row's number, stars or the
    item's own title ("3 · NVIDIA Dynamo 部署笔记 · 推理 · ⭐⭐" files it under "推理")."""
    title = clean(item.title)
    cells = [c.strip() for c in item.index_text.split(" · ")]
    kept = [c for c in cells if c and not re.fullmatch(r"[\d.#]+|[⭐★☆\s]+", c) and clean(c) not in title]
    # a category is a short cell; a long one is the row's own title or description, said elsewhere
    return "，".join([c for c in kept if len(c) <= 16] or kept[:1])


def _held(
    outline: Outline, doc: SourceDoc, claims: list[tuple[Relevance, Claim]], skipped: list[SkippedItem], ctx: Context
) -> str:
    if doc.kind == "paper_card":
        category = outline.meta.get("category", "")
        return "，".join(x for x in (_short(_title(outline.items[0], outline, doc)), category) if x)
    subjects = [_short(c.title) for _, c in sorted(claims, key=lambda rc: -rc[1].stars)] or [s.subject for s in skipped]
    if not subjects:
        return SAY.no_items.format(topic=ctx.topic)
    return " · ".join(list(dict.fromkeys(s for s in subjects if s))[:6])


def _doc_reason(claims: list[tuple[Relevance, Claim]], fits: list[Fit], terms: list[str], ctx: Context) -> str:
    hits = "、".join(terms) if terms else SAY.no_hits
    if claims:
        return SAY.items_fit.format(n=len(claims), topic=ctx.topic, hits=hits)
    return SAY.none_fit.format(topic=ctx.topic, hits=hits)


def _queue(outline: Outline, doc: SourceDoc, ctx: Context) -> FileExtraction:
    """A work-queue snapshot tracks work on subjects whose facts live in the documents it cites:
    its rows are listed, never claimed, so a task is not mistaken for a finding."""
    rows = [p for it in outline.items for p in it.points if p.raw.startswith("|")]
    mine = [p for p in rows if ctx.topic.lower() in (c.strip().lower() for c in p.text.split(" · "))]
    skipped = [
        SkippedItem(subject=_scrub(_short(p.text.split(" · ")[1] if " · " in p.text else p.text), ctx)[:60],
                    reason=SAY.queue_row)
        for p in mine
    ]  # fmt: skip
    held = SAY.queue_held.format(rows=len(rows), mine=len(mine), topic=ctx.topic) if rows else SAY.queue_empty
    return FileExtraction(
        relevance="参考",
        relevance_reason=SAY.queue_reason.format(topic=ctx.topic),
        held=held,
        skipped=skipped,
    )


# --- the Extractor -------------------------------------------------------------------------------


class OfflineExtractor:
    """Answers extraction requests from the documents themselves; no network, no key.

    A split document is read once, as far as its requests reach (parts past `[llm] max_parts`
    are reported unread, so not read here either): its first part answers for all of it and the
    others answer empty, so merging the parts gives the document's answer.
    """

    def __init__(
        self,
        docs: Mapping[str, SourceDoc],
        registry: AnchorRegistry,
        topic: str,
        section: TopicSection | None,
    ) -> None:
        self.docs = docs
        living = next((d.text for d in docs.values() if d.kind == "living"), "")
        self.ctx = context(topic, section, registry, living)
        self._done: dict[str, FileExtraction] = {}
        self._last: dict[str, ExtractionRequest] = {}  # per document, the last part asked for

    def extract_all(
        self,
        requests: Sequence[ExtractionRequest],
        on_result: Callable[[ExtractionResult], None] | None = None,
    ) -> list[ExtractionResult]:
        results = []
        for request in requests:
            last = self._last.get(request.doc_path)
            if last is None or request.chunk > last.chunk:
                self._last[request.doc_path] = request
        for request in requests:
            result = self.extract_one(request)
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    def extract_one(self, request: ExtractionRequest) -> ExtractionResult:
        started = time.perf_counter()
        extraction: FileExtraction | None = None
        error = ""
        doc = self.docs.get(request.doc_path)
        if doc is None:
            error = f"the offline extractor was not given {request.doc_path}"
        else:
            try:
                whole = self._done.get(doc.path) or extract_document(self._asked(doc), self.ctx)
            except Exception as exc:  # one document's failure must not stop the run
                error = f"offline extraction failed: {type(exc).__name__}: {exc}"[:400]
            else:
                self._done[doc.path] = whole
                extraction = whole if request.chunk == 0 else _empty_like(whole)
        record = CallRecord(
            doc_path=request.doc_path,
            chunk=request.chunk,
            source="offline",
            model=MODEL,
            attempts=0,
            latency_s=round(time.perf_counter() - started, 4),
            prompt=STAMP,
            error=error,
        )
        return ExtractionResult(request=request, extraction=extraction, record=record)

    def _asked(self, doc: SourceDoc) -> SourceDoc:
        """The document up to the end of the last part a request carries (offsets stay the
        document's own, so every quote is still found in it)."""
        last = self._last.get(doc.path)
        if last is None or last.chunk + 1 >= last.chunks:
            return doc
        fenced = _FENCED.search(last.messages[-1]["content"])
        part = fenced.group(1).replace("<\u200d", "<") if fenced else ""
        at = doc.text.find(part) if part else -1
        return doc if at < 0 else doc.model_copy(update={"text": doc.text[: at + len(part)]})

    def __enter__(self) -> OfflineExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        """Nothing to release: here so the pipeline can hold any extractor in a `with`."""


# the part a request carries, as agent.extract.prompting fences it (its `<document` tags defused)
_FENCED = re.compile(r'<document path="[^"]*">\n(.*)\n</document>\s*$', re.S)


def _empty_like(whole: FileExtraction) -> FileExtraction:
    return FileExtraction(relevance=whole.relevance, relevance_reason=whole.relevance_reason, held="")
