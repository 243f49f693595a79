"""Scores of one briefing against its gold: pure, deterministic, each explained item by item.

Every metric returns a `Score`: a value in [0, 1] and the items behind it — what matched, what
the gold had that the output missed, what the output added — so that when a number moves, a
reader can see which increment, arXiv ID or fact moved it. Nothing here reads a file or calls a
model; `rule_compliance` gets what it needs from the workspace through a `RuleContext` built by
the runner.

Matching is one-to-one and greedy on the best score: an output increment pairs with a gold one
when they credit the same inbox file at the same § reference, share an arXiv ID, or have titles
at least `TITLE_THRESHOLD` alike (character bigrams, so a Chinese title and a mixed-language
paraphrase can still pair). File+§ and arXiv are strong evidence and outrank any title.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from agent.core.arxiv import find_ids, normalise, validate
from agent.core.dates import month_day
from agent.core.labels import ZH
from agent.core.text import facts, fold, similarity
from schemas.briefing import Briefing, Increment, KeyPoint, VerifyItem

TITLE_THRESHOLD = 0.5  # unrelated seed titles stay below 0.15; a paraphrase of one title scores ≥ 0.5
PRIORITY_LINK = 0.3  # a priority row "is about" the increment whose title is most like it, if this alike

METRICS: dict[str, str] = {
    "increment_precision": "output increments that match a gold increment",
    "increment_recall": "gold increments the output found",
    "increment_f1": "harmonic mean of increment precision and recall",
    "new_arxiv_f1": "set F1 of the summary's new arXiv IDs (versionless)",
    "continued_arxiv_f1": "set F1 of continued arXiv rows as ID→anchoring date (the M-D of its relation)",
    "key_fact_recall": "numbers, versions, flags and names of the gold key points found in the matched output increment"
    " (an unmatched gold increment's facts count as missed)",
    "sources_recall": "gold source-table rows the output lists (by key file)",
    "relevance_agreement": "gold source rows the output lists with the same relevance label",
    "to_verify_recall": "gold to-verify items the output raises (same subject and question, or alike titles)",
    "to_verify_precision": "output to-verify items that raise a gold item",
    "priority_agreement": "order (pairwise concordance) of paired rows, and gold rows met at the same level",
    "rule_compliance": "3–8 increments, no anchored arXiv presented as new, valid arXiv IDs, grounded increments",
    "facts_twice": "figures, flags and CVE IDs an increment states in two of its points (a count: 0 is right)",
    "releases_split": "increments beyond the first that name one release (product and version) in their titles",
    "multi_question_items": "to-verify items holding several questions (joined by a semicolon, or two question marks)",
    "disputed_stated": "figures the gold's to-verify items dispute that an output increment still states as fact",
    "points_over_8": "top-level key points beyond 8 in an increment, summed over the increments",
    "cut_sentences": "key points that end where a clause began (a comma, an opening bracket, a connective, an "
    "ellipsis; a colon only when no sub-point follows)",
}
# Counts of what an editor would rewrite: lower is better, and 0 is the target.
COUNTS = frozenset(
    {"facts_twice", "releases_split", "multi_question_items", "disputed_stated", "points_over_8", "cut_sentences"}
)


@dataclass(frozen=True)
class Score:
    """One metric's value and the items behind it (labels a reader recognises)."""

    metric: str
    value: float
    matched: tuple[str, ...] = ()
    missed: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class Pair:
    """A gold item (index) paired with an output item (index), and why."""

    gold: int
    out: int
    score: float
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Matching:
    pairs: tuple[Pair, ...]
    missed: tuple[int, ...]  # gold indices left unpaired
    extra: tuple[int, ...]  # output indices left unpaired


@dataclass(frozen=True)
class RuleContext:
    """What rule compliance needs from outside the briefing, gathered by the runner.

    `anchored_arxiv`: versionless keys anchored before the evening (the anchor registry).
    `files`: workspace-relative path → text, for every file the output credits that exists.
    """

    date: dt.date
    anchored_arxiv: frozenset[str] = frozenset()
    files: Mapping[str, str] = field(default_factory=dict)
    min_increments: int = 3
    max_increments: int = 8


@dataclass(frozen=True)
class Scorecard:
    scores: dict[str, Score]  # in METRICS order
    matching: Matching  # of the increments, for reports that pair them side by side


def score(gold: Briefing, out: Briefing, ctx: RuleContext, *, threshold: float = TITLE_THRESHOLD) -> Scorecard:
    """Every metric of `out` against `gold`."""
    m = match_increments(gold, out, threshold)
    found = [
        *increment_scores(gold, out, m),
        new_arxiv_f1(gold, out),
        continued_arxiv_f1(gold, out),
        key_fact_recall(gold, out, m),
        *source_scores(gold, out),
        *to_verify_scores(gold, out, m, threshold),
        priority_agreement(gold, out, m, threshold),
        rule_compliance(out, ctx),
        facts_twice(out),
        releases_split(out),
        multi_question_items(out),
        disputed_stated(gold, out),
        points_over_8(out),
        cut_sentences(out),
    ]
    by_name = {s.metric: s for s in found}
    return Scorecard({name: by_name[name] for name in METRICS}, m)


# --- matching -------------------------------------------------------------------------------------


def greedy(cands: list[Pair], n_gold: int, n_out: int) -> Matching:
    """Best score first, ties by position: deterministic and one-to-one."""
    pairs: list[Pair] = []
    used_g: set[int] = set()
    used_o: set[int] = set()
    for c in sorted(cands, key=lambda c: (-c.score, c.gold, c.out)):
        if c.gold not in used_g and c.out not in used_o:
            pairs.append(c)
            used_g.add(c.gold)
            used_o.add(c.out)
    return Matching(
        tuple(sorted(pairs, key=lambda p: p.gold)),
        tuple(i for i in range(n_gold) if i not in used_g),
        tuple(i for i in range(n_out) if i not in used_o),
    )


def is_file_ref(ref: str) -> bool:
    """A credited workspace file ('inbox/jay/x.md'), as opposed to a URL, a blog or 'arXiv …'."""
    r = ref.strip()
    return r.endswith(".md") and "/" in r and not re.match(r"^(?:https?://|www\.|github\.com|arxiv)", r, re.I)


def file_refs(inc: Increment) -> list[str]:
    return [s.ref.strip().removeprefix("./") for s in inc.sources if is_file_ref(s.ref)]


def _file_sections(inc: Increment) -> set[tuple[str, str]]:
    return {
        (s.ref.strip().removeprefix("./"), fold(s.section)) for s in inc.sources if is_file_ref(s.ref) and s.section
    }


def _keys(texts: Iterable[str]) -> set[str]:
    return {m.id.key for t in texts for m in find_ids(t)}


def increment_arxiv(inc: Increment) -> set[str]:
    """The versionless arXiv keys an increment is about: its arXiv line and its arXiv sources."""
    return _keys([inc.arxiv_line, *(s.ref for s in inc.sources)])


def match_increments(gold: Briefing, out: Briefing, threshold: float = TITLE_THRESHOLD) -> Matching:
    cands: list[Pair] = []
    for gi, g in enumerate(gold.increments):
        for oi, o in enumerate(out.increments):
            reasons: list[str] = []
            strong = 0
            if shared := sorted(_file_sections(g) & _file_sections(o)):
                strong += 1
                reasons.append("file+§ " + "; ".join(f"{f} {s}" for f, s in shared))
            if ids := sorted(increment_arxiv(g) & increment_arxiv(o)):
                strong += 1
                reasons.append("arXiv " + ", ".join(ids))
            weight = 2.0 * strong  # what the increments rest on outweighs how their titles read
            if (release := _release(g.title)) and release == _release(o.title):
                weight += 1  # one release however its title is worded: 'SGLang v0.5.19 …' and 'SGLang v0.5.19：…'
                reasons.append(f"release {release}")
            sim = similarity(g.title, o.title)
            if sim >= threshold:
                reasons.append(f"title {sim:.2f}")
            if weight or sim >= threshold:
                cands.append(Pair(gi, oi, weight + sim, tuple(reasons)))
    return greedy(cands, len(gold.increments), len(out.increments))


def inc_label(inc: Increment) -> str:
    return f"{ZH.increment} {inc.number}：{inc.title}"


# --- increments -----------------------------------------------------------------------------------


def _ratio(n: int, d: int) -> float:
    """n/d, and 1.0 for an empty denominator: nothing was there to get wrong."""
    return n / d if d else 1.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def _items(m: Matching, gold: list[str], out: list[str]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A matching's matched, missed and extra items, named by the labels of either side."""
    matched = tuple(f"{gold[p.gold]} ↔ {out[p.out]} ({', '.join(p.reasons)})" for p in m.pairs)
    return matched, tuple(gold[i] for i in m.missed), tuple(out[i] for i in m.extra)


def increment_scores(gold: Briefing, out: Briefing, m: Matching) -> list[Score]:
    """Precision, recall and F1 of the increments, sharing one matching and one item list."""
    items = _items(m, [inc_label(i) for i in gold.increments], [inc_label(i) for i in out.increments])
    p = _ratio(len(m.pairs), len(out.increments))
    r = _ratio(len(m.pairs), len(gold.increments))
    note = f"{len(m.pairs)} matched of {len(gold.increments)} gold / {len(out.increments)} output"
    return [
        Score("increment_precision", p, *items, note),
        Score("increment_recall", r, *items, note),
        Score("increment_f1", _f1(p, r), *items, note),
    ]


# --- arXiv sets -----------------------------------------------------------------------------------


def _set_f1(metric: str, gold: set[str], out: set[str], note: str = "") -> Score:
    both = gold & out
    p, r = _ratio(len(both), len(out)), _ratio(len(both), len(gold))
    value = 1.0 if not gold and not out else _f1(p, r)
    return Score(metric, value, tuple(sorted(both)), tuple(sorted(gold - out)), tuple(sorted(out - gold)), note)


def _arxiv_key(raw: str) -> str:
    try:
        return normalise(raw).key
    except ValueError:
        return raw.strip()


def new_arxiv_f1(gold: Briefing, out: Briefing) -> Score:
    g = {_arxiv_key(x) for x in gold.summary.new_arxiv}
    o = {_arxiv_key(x) for x in out.summary.new_arxiv}
    return _set_f1("new_arxiv_f1", g, o)


def continued_rows(b: Briefing) -> set[str]:
    """Continued arXiv rows as 'key@M-D' (the date it was first anchored), e.g. '2609.20511@9-21'."""
    out = set()
    for row in b.arxiv_rows:
        if (d := row.anchored_on) is not None:
            out.add(f"{_arxiv_key(row.arxiv_id)}@{month_day(d)}")
    return out


def continued_arxiv_f1(gold: Briefing, out: Briefing) -> Score:
    """A row with the right ID but the wrong anchoring date is both a miss and an extra."""
    return _set_f1("continued_arxiv_f1", continued_rows(gold), continued_rows(out))


# --- key facts ------------------------------------------------------------------------------------


# Not facts of an increment, though `facts` reads figures in them: a month-day reference to an
# earlier evening ("9-20 已锚定" would read as the range 9–20 and its ends 9 and 20), a year said
# in words ("2026 年"), and an em dash, which folds into a flag's "--" before the word after it.
_NOT_FACTS = re.compile(
    r"(?<![\d.\-/])(?:0?[1-9]|1[0-2])-(?:0?[1-9]|[12]\d|3[01])(?![\d.,%×xX/\-]|\s*(?:[KkMBb]|tok|bit))"
    r"|(?<!\d)(?:19|20)\d{2}\s*年"
    r"|[—―]+"
)


def _facts_of(texts: Iterable[str]) -> set[str]:
    return set().union(*(facts(_NOT_FACTS.sub(" ", t)) for t in texts))


def key_facts(g: Increment) -> set[str]:
    """What a gold increment's key points state: the facts `key_fact_recall` counts."""
    return _facts_of(k.text for k in g.all_points())


def stated_facts(o: Increment) -> set[str]:
    """What an output increment states wherever a reader sees it: its title, arXiv line and points."""
    return _facts_of([o.title, o.arxiv_line, *(k.text for k in o.all_points())])


def key_fact_recall(gold: Briefing, out: Briefing, m: Matching) -> Score:
    """Micro-averaged over every gold increment: a fact of an unmatched gold increment is missed,
    so a briefing that finds half the increments cannot read 1.000 here."""
    matched: list[str] = []
    missed: list[str] = []
    paired = {p.gold: p.out for p in m.pairs}
    for gi, g in enumerate(gold.increments):
        want = key_facts(g)
        have = stated_facts(out.increments[paired[gi]]) if gi in paired else set()
        matched += [f"{ZH.increment} {g.number} · {f}" for f in sorted(want & have)]
        unmatched = "" if gi in paired else ZH.unmatched
        missed += [f"{ZH.increment} {g.number} · {f}{unmatched}" for f in sorted(want - have)]
    total = len(matched) + len(missed)
    return Score(
        "key_fact_recall",
        _ratio(len(matched), total),
        tuple(matched),
        tuple(missed),
        note=f"{len(matched)}/{total} facts; {len(m.pairs)}/{len(gold.increments)} gold increments matched",
    )


# --- sources table --------------------------------------------------------------------------------


def source_key(directory: str, key_file: str) -> str:
    """Inbox rows by folder and file stem ('inbox/jay/2026-09-22-x'); other rows (paper cards,
    the work queue) are one row per evening, keyed by their folder ('paper_cards')."""
    d = (directory.split() or [""])[0].strip("/")
    if d.split("/")[0] != "inbox":
        return d.split("/")[0]
    stem = re.split(r"[\s（(]", key_file.strip(), maxsplit=1)[0].removesuffix(".md")
    return f"{d}/{stem}"


def _label(level: str) -> str:
    return re.sub(r"[^\w]", "", level)


def source_scores(gold: Briefing, out: Briefing) -> list[Score]:
    """Sources-table recall by key file, and relevance-label agreement on the rows both list."""
    g = {source_key(r.directory, r.key_file): r.relevance for r in gold.sources}
    o = {source_key(r.directory, r.key_file): r.relevance for r in out.sources}
    both = [k for k in g if k in o]
    recall = Score(
        "sources_recall",
        _ratio(len(both), len(g)),
        tuple(both),
        tuple(k for k in g if k not in o),
        tuple(k for k in o if k not in g),
    )
    same = [k for k in both if _label(g[k]) == _label(o[k])]
    agree = Score(
        "relevance_agreement",
        _ratio(len(same), len(g)),
        tuple(f"{k} {g[k]}" for k in same),
        tuple(f"{k} gold {g[k]} / output {o[k]}" for k in both if k not in same)
        + tuple(f"{k} gold {g[k]} / not listed" for k in g if k not in o),
        note=f"{len(same)}/{len(g)} gold rows agree ({len(both)} listed)",
    )
    return [recall, agree]


# --- to-verify ------------------------------------------------------------------------------------


QUESTION_LIKE = 0.28  # same subject and this alike: the same question (seen: same 0.30–0.42, other 0.21–0.26)


def _names(text: str) -> set[str]:
    """Latin names, lowercased, and their hyphen parts ('KV-Cache' -> kv-cache, kv, cache)."""
    out: set[str] = set()
    for w in re.findall(r"[A-Za-z][A-Za-z0-9.+-]*[A-Za-z0-9]", text):
        w = w.lower()
        out |= {w, *(p for p in w.split("-") if len(p) > 1)}
    return out


def verify_subject(v: VerifyItem, b: Briefing) -> int | None:
    """The increment (index) a to-verify item concerns: one whose arXiv ID it cites; else the one
    whose title shares a name with the item's title and, with its key points, a second name with
    the item; else one whose title reads much like it. None for an item about something else (an
    anchor of an earlier evening, a carried item)."""
    best: tuple[tuple[int, int, int, float], int] | None = None
    mine, asked = _names(v.title), _names(f"{v.title} {v.problem}")
    for i, inc in enumerate(b.increments):
        ids = _keys([v.title, v.problem]) & increment_arxiv(inc)
        head = _names(f"{inc.title} {inc.arxiv_line}")
        body = head | _names(" ".join(k.text for k in inc.all_points()))
        in_title, in_all = len(mine & head), len(asked & body)
        sim = similarity(v.title, inc.title)
        key = (len(ids), in_title, in_all, sim)
        if (ids or (in_title and in_all >= 2) or sim >= 0.4) and (best is None or key > best[0]):
            best = (key, i)
    return None if best is None else best[1]


def _questions(v: VerifyItem) -> list[str]:
    """What an item asks, piece by piece: an item that merges several notes about one subject
    lists them after its subject ('主题：问题一；问题二') and in its problem, one per '；'."""
    _, _, asked = v.title.partition("：")
    return [
        f"{v.title} {v.problem}",
        v.title,
        *(q for q in asked.split("；") if q),
        *(p for p in v.problem.split("；") if p),
    ]


def question_likeness(g: VerifyItem, o: VerifyItem) -> float:
    """How alike the gold item's question is to the closest question the output item asks."""
    return max(similarity(f"{g.title} {g.problem}", q) for q in _questions(o))


def to_verify_scores(gold: Briefing, out: Briefing, m: Matching, threshold: float = TITLE_THRESHOLD) -> list[Score]:
    """Recall and precision of block 三. An output item raises a gold item when both concern
    increments the matching paired and ask the same question (the figure, flag or version in
    doubt, `QUESTION_LIKE`), or when their titles are alike (a carried item keeps its title)."""
    paired = {(p.gold, p.out) for p in m.pairs}
    gs = [verify_subject(v, gold) for v in gold.to_verify]
    os_ = [verify_subject(v, out) for v in out.to_verify]
    cands: list[Pair] = []
    for gi, g in enumerate(gold.to_verify):
        for oi, o in enumerate(out.to_verify):
            title = similarity(g.title, o.title)
            if gs[gi] is not None and (gs[gi], os_[oi]) in paired and (q := question_likeness(g, o)) >= QUESTION_LIKE:
                cands.append(Pair(gi, oi, 1.0 + q, (f"same increment, question {q:.2f}",)))
            elif title >= threshold:
                cands.append(Pair(gi, oi, title, (f"title {title:.2f}",)))
    vm = greedy(cands, len(gold.to_verify), len(out.to_verify))
    items = _items(vm, [v.title for v in gold.to_verify], [v.title for v in out.to_verify])
    note = f"{len(vm.pairs)} raised of {len(gold.to_verify)} gold / {len(out.to_verify)} output items"
    return [
        Score("to_verify_recall", _ratio(len(vm.pairs), len(gold.to_verify)), *items, note),
        Score("to_verify_precision", _ratio(len(vm.pairs), len(out.to_verify)), *items, note),
    ]


# --- priorities -----------------------------------------------------------------------------------


def _links(b: Briefing) -> list[int | None]:
    """Which increment each priority row is about (most alike title), if any is alike enough."""
    out: list[int | None] = []
    for row in b.priorities:
        best = max(
            ((similarity(row.content, inc.title), i) for i, inc in enumerate(b.increments)),
            default=(0.0, None),
            key=lambda x: x[0],
        )
        out.append(best[1] if best[0] >= PRIORITY_LINK else None)
    return out


def _priority_pairs(gold: Briefing, out: Briefing, m: Matching, threshold: float) -> list[Pair]:
    """Every (gold row, output row) worth pairing, with its evidence and the reasons for it."""
    gl, ol = _links(gold), _links(out)
    paired_inc = {(p.gold, p.out) for p in m.pairs}
    cands: list[Pair] = []
    for gi, g in enumerate(gold.priorities):
        for oi, o in enumerate(out.priorities):
            reasons: list[str] = []
            evidence = 0.0
            if ids := sorted(_keys([g.content]) & _keys([o.content])):
                evidence += 1.0
                reasons.append("arXiv " + ", ".join(ids))
            if gl[gi] is not None and (gl[gi], ol[oi]) in paired_inc:
                # weaker than equal wording: the link itself is only a title likeness
                evidence += 0.5
                reasons.append("same increment")
            sim = similarity(g.content, o.content)
            if sim >= threshold:
                reasons.append(f"content {sim:.2f}")
            if evidence or sim >= threshold:
                cands.append(Pair(gi, oi, evidence + sim, tuple(reasons)))
    return cands


def priority_agreement(gold: Briefing, out: Briefing, m: Matching, threshold: float = TITLE_THRESHOLD) -> Score:
    """Rows pair by shared arXiv ID, by being about increments the matching paired (a row's
    increment is the one whose title is most like it), or by similar content. The value is the
    mean of the pairwise order concordance (Kendall-like) of the paired rows and the share of
    gold rows met at the same level, so an unpaired gold row costs the score."""
    if not gold.priorities and not out.priorities:
        return Score("priority_agreement", 1.0, note="no priority rows on either side")
    pm = greedy(_priority_pairs(gold, out, m, threshold), len(gold.priorities), len(out.priorities))
    pairs = list(pm.pairs)
    n = len(pairs)
    total = n * (n - 1) // 2
    concordant = sum(1 for i in range(n) for j in range(i + 1, n) if pairs[i].out < pairs[j].out)
    order = _ratio(concordant, total) if n else 0.0
    same = [p for p in pairs if _label(gold.priorities[p.gold].level) == _label(out.priorities[p.out].level)]
    # over every gold row: a row the output never pairs is a level it did not meet
    level = len(same) / len(gold.priorities) if gold.priorities else 0.0

    def row(i: int, b: Briefing) -> str:
        r = b.priorities[i]
        return f"{r.level} {r.content}"

    return Score(
        "priority_agreement",
        (order + level) / 2,
        tuple(f"{row(p.gold, gold)} ↔ {row(p.out, out)} ({', '.join(p.reasons)})" for p in same),
        tuple(f"{row(p.gold, gold)} ↔ output {out.priorities[p.out].level}" for p in pairs if p not in same)
        + tuple(f"{row(i, gold)} (no output row)" for i in pm.missed),
        tuple(row(i, out) for i in pm.extra),
        note=f"order {concordant}/{total} pairs concordant · level {len(same)}/{len(gold.priorities)} gold rows"
        f" · {n}/{len(gold.priorities)} paired",
    )


# --- rule compliance ------------------------------------------------------------------------------


def _all_ids(b: Briefing) -> list[str]:
    """Every arXiv ID the briefing cites: table cells and summary as written, the rest as found.
    An ID marked invalid right after it (`ZH.invalid_id_mark`) is named, not cited."""
    ids = [*b.summary.new_arxiv, *(r.arxiv_id for r in b.arxiv_rows)]
    texts: list[str] = [*b.summary.headlines, *(f"{s.key_file} {s.held}" for s in b.sources)]
    for inc in b.increments:
        texts += [inc.title, inc.arxiv_line, *(s.ref for s in inc.sources), *(k.text for k in inc.all_points())]
    for v in b.to_verify:
        texts += [v.title, v.problem, v.suggestion]
    texts += [p.content for p in b.priorities]
    texts += [n.note for n in b.no_increment]
    ids += [m.id.display for t in texts for m in find_ids(t) if not t[m.end :].startswith(ZH.invalid_id_mark)]
    return list(dict.fromkeys(x.strip() for x in ids if x.strip()))


# --- what an editor would rewrite ------------------------------------------------------------------

_STRONG_FACT = re.compile(r"^(?:--.+|cve-.+|[<>≤≥+\-]?\d[\d.]*(?:%|×|x|ms|s|gb|gib|tb|bit|tok/s))$", re.I)
_WORD = r"(?![vV]\d)[A-Za-z][A-Za-z0-9_+/@-]*"
_RELEASE = re.compile(rf"^({_WORD}(?:\s{_WORD}){{0,3}})\s?[vV]?(\d+(?:\.\d+){{1,3}})(?![\w.-])")


def facts_twice(out: Briefing) -> Score:
    """A figure with its unit, a flag or a CVE ID written in two top-level points of one increment."""
    twice: list[str] = []
    for inc in out.increments:
        seen: dict[str, int] = {}
        for top in inc.key_points:
            for f in {f for f in _facts_of(p.text for p in top.walk()) if _STRONG_FACT.match(f)}:
                seen[f] = seen.get(f, 0) + 1
        twice += [f"{inc_label(inc)} · {f}" for f, n in sorted(seen.items()) if n > 1]
    return Score("facts_twice", float(len(twice)), extra=tuple(twice))


def _release(title: str) -> str:
    head = re.split(r"\s+[—–-]+\s+|——|：|:|（|\(", title, maxsplit=1)[0].strip()
    m = _RELEASE.match(head)
    if not m:
        return ""
    parts = m[2].split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return f"{m[1].split()[-1].lower()} {'.'.join(parts)}"


def releases_split(out: Briefing) -> Score:
    """One release (its product's last name word and its version, from the title) in several increments."""
    by: dict[str, list[str]] = {}
    for inc in out.increments:
        if key := _release(inc.title):
            by.setdefault(key, []).append(inc_label(inc))
    extra = [f"{k}: {' / '.join(v)}" for k, v in by.items() if len(v) > 1]
    return Score("releases_split", float(sum(len(v) - 1 for v in by.values())), extra=tuple(extra))


_BRACKETED = re.compile(r"[（(][^（()）]*[）)]")


def multi_question_items(out: Briefing) -> Score:
    """An item of 三 that staples questions: '；' in its title, or two question marks in its problem.
    Marks inside brackets are one question's alternatives ('相对什么（B200？旧版本？）'), not more questions."""
    bad = [
        f"{ZH.verify_item} {ZH.circled(v.number)} {v.title[:30]}"
        for v in out.to_verify
        if re.search(r"[；;]", v.title) or len(re.findall(r"[？?]", _BRACKETED.sub("", v.problem))) > 1
    ]
    return Score("multi_question_items", float(len(bad)), extra=tuple(bad))


_DISPUTED = re.compile(
    r"(\d+(?:\.\d+)?)\s*(%|×|x|ms|s|倍)?\s*(?:还是|vs\.?|或|与)\s*(\d+(?:\.\d+)?)\s*(%|×|x|ms|s|倍)?"
)


Figure = tuple[str, str]  # a disputed value and its unit: ('2.1', '×')


def disputed_figures(items: Iterable[VerifyItem]) -> set[Figure]:
    """The figures items of 三 dispute, each written 'A 还是 B' in an item's title (as the layout and the
    editors write a dispute): both sides, with their unit."""
    figures: set[Figure] = set()
    for v in items:
        for m in _DISPUTED.finditer(v.title):
            unit = m[2] or m[4] or ""
            figures |= {(m[1], unit), (m[3], unit)}
    return figures


def stated_figures(text: str, figures: Iterable[Figure]) -> list[str]:
    """The disputed figures `text` states ('2.1×'), each as a number of its own with its unit."""
    return [
        f"{value}{unit}"
        for value, unit in sorted(figures)
        if re.search(rf"(?<![\d.]){re.escape(value)}(?![\d])\s*{re.escape(unit)}", text)
    ]


def disputed_stated(gold: Briefing, out: Briefing) -> Score:
    """The gold's 三 names a figure it disputes as 'A 还是 B'; an increment that states A or B
    (with its unit) states a disputed figure as fact."""
    figures = disputed_figures(gold.to_verify)
    stated = [
        f"{inc_label(inc)} · {f}"
        for inc in out.increments
        for p in inc.all_points()
        for f in stated_figures(p.text, figures)
    ]
    return Score("disputed_stated", float(len(stated)), extra=tuple(dict.fromkeys(stated)))


MAX_POINTS = 8  # what an editor keeps in one increment; the seed's longest has eight


def points_over_8(out: Briefing) -> Score:
    """Top-level key points beyond eight in an increment: a story an editor would cut to what matters."""
    over = [(inc_label(inc), n - MAX_POINTS) for inc in out.increments if (n := len(inc.key_points)) > MAX_POINTS]
    return Score("points_over_8", float(sum(n for _, n in over)), extra=tuple(f"{lab} · +{n}" for lab, n in over))


# How a sentence ends when it was cut where a clause began: a comma, a semicolon, an opening bracket or
# dash, an ellipsis, or a connective whose clause never came. A colon ends a point only when sub-points
# follow it (the seed's "三种方案 overhead 对比：").
_CUT = re.compile(
    r"(?:[，,、；;（(\[—–]|…|\.\.\.|(?<![A-Za-z])(?:and|or|but|with|to|of|the|a)"
    r"|即使|但是?|而且?|以及|并且?|或者?|如果|因为|所以|由于|虽然|包括|例如|比如|其中)$",
    re.I,
)


def cut_sentences(out: Briefing) -> Score:
    """Key points that stop where a clause began: the mark of a trimming rule, not of an editor."""
    cut = []
    for inc in out.increments:
        for siblings in _lists(inc.key_points):
            for i, p in enumerate(siblings):
                text = p.text.strip().rstrip("*`\"'”’」』 ")
                last = i == len(siblings) - 1 and not p.children  # a colon with nothing after it
                if _CUT.search(text) or (last and text.endswith(("：", ":"))):
                    cut.append(f"{inc_label(inc)} · …{text[-24:]}")
    return Score("cut_sentences", float(len(cut)), extra=tuple(cut))


def _lists(points: Sequence[KeyPoint]) -> list[Sequence[KeyPoint]]:
    """A point list and every sub-list under it (a flat list's colon is followed by its next point)."""
    return [points, *(x for p in points for x in _lists(p.children))]


def rule_compliance(out: Briefing, ctx: RuleContext) -> Score:
    """The share of the four rules the briefing keeps; every violation is listed. Must be 1.0."""
    n, ids = len(out.increments), _all_ids(out)
    invalid = [v.reason for x in ids if not (v := validate(x, not_after=ctx.date)).ok]
    rules = [
        ("count", _count_violations(out, ctx), f"{n} increments"),
        ("no anchored arXiv", _anchored_as_new(out, ctx), "no increment repeats an anchor as new"),
        ("valid arXiv", invalid, f"{len(ids)} IDs valid as of {ctx.date}"),
        ("grounded", _ungrounded(out, ctx), "every increment's files exist and hold its arXiv IDs"),
    ]
    passed = [f"{name}: {ok_note}" for name, violations, ok_note in rules if not violations]
    broken = [f"{name}: {v}" for name, violations, _ in rules for v in violations]
    return Score("rule_compliance", _ratio(len(passed), len(rules)), tuple(passed), tuple(broken))


def _count_violations(out: Briefing, ctx: RuleContext) -> list[str]:
    n = len(out.increments)
    count: list[str] = []
    if n > ctx.max_increments:
        count.append(f"{n} increments, more than {ctx.max_increments}")
    elif n < ctx.min_increments and not out.summary.under_target:
        count.append(f"{n} increments, fewer than {ctx.min_increments}, and the summary does not say so")
    if out.summary.increment_count != n:
        count.append(f"the summary says {out.summary.increment_count}, the briefing has {n}")
    return count


def _anchored_as_new(out: Briefing, ctx: RuleContext) -> list[str]:
    """A supplement to an anchored paper is a kept increment by design (rule 3); what must not
    happen is an anchored paper presented as if it were new."""
    return [
        f"{inc_label(inc)} is about arXiv {key}, anchored before {ctx.date}, and does not say it supplements it"
        for inc in out.increments
        if inc.relation_kind != "supplement"
        for key in sorted(increment_arxiv(inc) & ctx.anchored_arxiv)
    ]


def _ungrounded(out: Briefing, ctx: RuleContext) -> list[str]:
    ungrounded: list[str] = []
    for inc in out.increments:
        files = file_refs(inc)
        if not files:
            ungrounded.append(f"{inc_label(inc)} credits no workspace file")
            continue
        ungrounded += [f"{inc_label(inc)}: {f} is not in the workspace" for f in files if f not in ctx.files]
        texts = [ctx.files[f] for f in files if f in ctx.files]
        have = _keys(texts)
        ungrounded += [
            f"{inc_label(inc)}: arXiv {k} is not in {', '.join(files)}"
            for k in sorted(increment_arxiv(inc) - have)
            if texts
        ]
    return ungrounded
