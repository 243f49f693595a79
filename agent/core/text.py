"""Grounding on characters: find a quote in its source, pull out the facts a claim states.

The briefings are Chinese with English terms mixed in, so nothing here splits on spaces: word
alignment (langextract's, for one) fails on text that has no spaces between words. Matching
works on characters, after a `fold` that forgives what writers and models change without
changing meaning: fullwidth vs halfwidth forms, dash and quote variants, Markdown emphasis,
list bullets and table pipes, and spacing around CJK text.

Every offset this module returns is an offset into the caller's original text.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import cached_property
from typing import Literal

# Applied after NFKC. "" drops the character, " " makes it a separator.
_MATCH_MAP: dict[str, str] = {
    **dict.fromkeys("‐‑‒–—―−﹘﹣－", "-"),
    **dict.fromkeys("“”„‟«»「」『』〝〞＂", '"'),
    **dict.fromkeys("‘’‚‛′＇", "'"),
    "〜": "~",
    "*": "",  # **bold**, *emphasis*
    "`": "",  # `code`
    "|": " ",  # table cells
}
# List bullets, numbered items, headings and block quotes at the start of a line.
# Matched before NFKC (offsets must stay the original's), hence the fullwidth forms.
_LINE_MARKER_RE = re.compile(
    r"^[ \t\u3000]*(?:(?:[-*+•－＊＋]|[0-9０-９]{1,2}[.)．）]|[#＃]{1,6}|[>＞])[ \t\u3000]+)+", re.MULTILINE
)


# One piece of folded text: the span of the original it came from, how many folded characters it
# is, and whether they map one to one onto that span (a run) or each to all of it (a character
# normalised with its combining marks).
_Piece = tuple[int, int, int, bool]


@dataclass(frozen=True)
class Folded:
    """Folded text plus, for each of its characters, the span of the original it came from.

    The spans are worked out when first asked for: most callers compare folded text and never ask.
    """

    text: str
    unsqueezed: str  # the folded text before `_SPACES` decided which spaces stay
    pieces: tuple[_Piece, ...]
    spaces: re.Pattern[str]

    @cached_property
    def _spans(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        starts: list[int] = []
        ends: list[int] = []
        for i, j, n, one_to_one in self.pieces:
            starts += range(i, j) if one_to_one else [i] * n
            ends += range(i + 1, j + 1) if one_to_one else [j] * n
        kept_starts: list[int] = []
        kept_ends: list[int] = []
        at = 0
        for m in self.spaces.finditer(self.unsqueezed):
            stays = m[1] is not None
            kept_starts += starts[at : m.start() + stays]
            kept_ends += ends[at : m.start() + stays]
            at = m.end()
        kept_starts += starts[at:]
        kept_ends += ends[at:]
        return tuple(kept_starts), tuple(kept_ends)

    @property
    def starts(self) -> tuple[int, ...]:
        return self._spans[0]

    @property
    def ends(self) -> tuple[int, ...]:
        return self._spans[1]

    @cached_property
    def spaceless(self) -> tuple[str, tuple[int, ...]]:
        """`text` without spaces, and for each of its characters the index in `text`: built once
        for all the quotes `locate` looks for in one document."""
        keep = [i for i, c in enumerate(self.text) if c != " "]
        return "".join(self.text[i] for i in keep), tuple(keep)

    @cached_property
    def bigrams(self) -> dict[str, list[int]]:
        """Where each character bigram of `text` starts, for `_fuzzy`'s votes: built once per document."""
        return _bigram_index(self.text)


def _one_to_one() -> tuple[re.Pattern[str], dict[int, str]]:
    """The characters that fold to exactly one character on their own: a regex of their runs and a
    table of those that change. A report is mostly made of them, so `fold_map` translates a run
    whole instead of normalising it character by character. Combining marks are left out: they
    normalise with the character before them."""
    blocks = [(0x20, 0x7E), (0xA0, 0xFF), (0x2000, 0x206F), (0x3000, 0x30FF), (0x4E00, 0x9FFF)]
    blocks += [(0xAC00, 0xD7A3), (0xFF00, 0xFFEF)]
    ranges: list[list[int]] = []
    changed: dict[int, str] = {}
    for lo, hi in blocks:
        for o in range(lo, hi + 1):
            c = chr(o)
            folded = "".join(_MATCH_MAP.get(x, x) for x in unicodedata.normalize("NFKC", c))
            if len(folded) != 1 or unicodedata.combining(c) or unicodedata.combining(folded):
                continue
            folded = " " if folded.isspace() else folded
            if folded != c:
                changed[o] = folded
            if ranges and ranges[-1][1] == o - 1:
                ranges[-1][1] = o
            else:
                ranges.append([o, o])
    members = "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "") for a, b in ranges)
    return re.compile(f"[{members}]+"), changed


_ONE_RUN_RE, _ONE_TABLE = _one_to_one()


def fold_map(s: str, *, squeeze: bool = True) -> Folded:
    """`fold` with provenance: where in `s` each folded character came from. `squeeze=False`
    keeps one space wherever there was whitespace, for `facts`, which needs token boundaries
    ("--a\\n--b" is two flags)."""
    texts: list[str] = []
    pieces: list[_Piece] = []
    at = 0
    for m in _LINE_MARKER_RE.finditer(s):
        _fold_span(s, at, m.start(), texts, pieces)
        at = m.end()
    _fold_span(s, at, len(s), texts, pieces)
    text = "".join(texts)
    spaces = _SPACES[squeeze]
    return Folded(spaces.sub(lambda m: m[1] or "", text), text, tuple(pieces), spaces)


def _fold_span(s: str, i: int, stop: int, texts: list[str], pieces: list[_Piece]) -> None:
    """Fold `s[i:stop]` onto `texts`, with each piece's span of `s` onto `pieces`."""
    while i < stop:
        run = _ONE_RUN_RE.match(s, i, stop)
        j = run.end() if run else i
        if j < len(s) and j > i and unicodedata.combining(s[j]):
            j -= 1  # the run's last character normalises with the marks that follow it
        if j > i:
            texts.append(s[i:j].translate(_ONE_TABLE))
            pieces.append((i, j, j - i, True))
            i = j
            continue
        j = i + 1
        while j < len(s) and unicodedata.combining(s[j]):
            j += 1
        out = "".join(
            " " if c.isspace() else c for c in (_MATCH_MAP.get(c, c) for c in unicodedata.normalize("NFKC", s[i:j]))
        )
        if out:
            texts.append(out)
            pieces.append((i, j, len(out), False))
        i = j


# Each run of spaces, with group 1 the one space that stays of it: with `squeeze`, only between two
# non-CJK word characters, since Chinese needs no spaces and writers put them around English terms
# and punctuation at will; without, inside the text. Every other run goes, and so do the text's
# leading and trailing spaces. "[^\W_]" is exactly `str.isalnum`; the ranges are CJK ideographs, kana,
# hangul and CJK punctuation: text that needs no spaces.
_WORD = r"[^\W_\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef\U00020000-\U0003ffff]"
_SPACES = {
    True: re.compile(rf"(?<={_WORD})( ) *+(?={_WORD})| +"),
    False: re.compile(r"(?<=[^ ])( ) *+(?=[^ ])| +"),
}


def fold(s: str) -> str:
    """`s` as compared for matching only — never shown to a reader.

    NFKC (fullwidth ２０２６：（平均） → 2026:(平均)); dashes – — − ‐ → "-"; curly and CJK
    quotes → straight; Markdown emphasis and backticks, list bullets, heading marks and table
    pipes removed; whitespace runs collapsed to one space, and dropped entirely next to CJK
    characters or punctuation, where spacing is a matter of taste; stripped.
    """
    return fold_map(s).text


@dataclass(frozen=True)
class Alignment:
    """Where a quote was found in its source and how faithfully.

    `kind` is the first tier that found it: "exact" (verbatim), "folded" (equal after `fold`,
    or after it with every space removed), "fuzzy" (a window of the folded text is at least
    `threshold` similar), "elided" (a quote whose middle a model cut with "……" or "...", whose
    parts occur in order, close together) or "none". For "none", `start` and `end` are -1 and
    `score` is the best fuzzy score seen, to show how near a miss was.
    """

    kind: Literal["exact", "folded", "fuzzy", "elided", "none"]
    start: int
    end: int
    score: float

    @property
    def found(self) -> bool:
        return self.kind != "none"


_RARE = 48  # a bigram seen more often than this in the source says little about where a quote is
_MIN_VOTERS = 4


def _best_substring(quote: str, window: str) -> tuple[float, int, int]:
    """The substring of `window` most like `quote`: (score, start, end).

    The score is matched characters / max(len(quote), len(span)): the share of the longer side
    that aligns in order. Unlike difflib's ratio it charges a character the quote adds (say a
    "翻倍" the source never said) as much as one it changes. Spans are built from contiguous
    runs of SequenceMatcher's matching blocks, so stray matches at a window's edges do not
    stretch them.
    """
    blocks = [b for b in SequenceMatcher(None, quote, window, autojunk=False).get_matching_blocks() if b.size]
    best = (0.0, 0, 0)
    for i, first in enumerate(blocks):
        matched = 0
        for last in blocks[i:]:
            matched += last.size
            start, end = first.b, last.b + last.size
            score = matched / max(len(quote), end - start)
            if score > best[0]:
                best = (score, start, end)
    return best


def _bigram_index(folded: str) -> dict[str, list[int]]:
    """Where each character bigram of `folded` starts."""
    index: dict[str, list[int]] = {}
    for i in range(len(folded) - 1):
        index.setdefault(folded[i : i + 2], []).append(i)
    return index


def _fuzzy(quote: str, folded: str, index: dict[str, list[int]]) -> tuple[float, int, int]:
    """Best near-verbatim occurrence of `quote` in `folded`: (ratio, start, end). Rare character
    bigrams vote for where the quote would start; only the few best-voted windows are compared
    character by character, so the cost stays near-linear in the document. `index` is
    `_bigram_index(folded)` (a document's is built once: `Folded.bigrams`)."""
    m = len(quote)
    grams = [(q, index.get(quote[q : q + 2], [])) for q in range(m - 1)]
    grams = [(q, positions) for q, positions in grams if positions]
    voters = [g for g in grams if len(g[1]) <= _RARE]
    if len(voters) < _MIN_VOTERS:  # a quote made of common bigrams: let the rarest few vote
        voters = sorted(grams, key=lambda g: len(g[1]))[: 2 * _MIN_VOTERS]
    bucket = max(4, m // 4)
    votes: Counter[int] = Counter()
    for q, positions in voters:
        for p in positions:
            votes[(p - q) // bucket] += 1
    best = (0.0, -1, -1)
    for b, _ in votes.most_common(3):
        lo = max(0, (b - 1) * bucket)
        hi = min(len(folded), (b + 2) * bucket + m)
        score, start, end = _best_substring(quote, folded[lo:hi])
        if score > best[0]:
            best = (score, lo + start, lo + end)
    return best


def locate(
    quote: str, text: str, *, threshold: float = 0.9, min_fuzzy_len: int = 12, folded: Folded | None = None
) -> Alignment:
    """Find `quote` in `text`: verbatim, else after `fold`, else approximately.

    Fuzzy matching needs a quote of at least `min_fuzzy_len` folded characters; shorter ones
    match too easily by chance to ground anything. Offsets always index `text`, so
    `text[a.start:a.end]` is the passage the quote came from. `folded` is `fold_map(text)`, for a
    caller that looks for many quotes in one document.
    """
    if not quote.strip():
        return Alignment("none", -1, -1, 0.0)
    i = text.find(quote)
    if i >= 0:
        return Alignment("exact", i, i + len(quote), 1.0)
    q = fold(quote)
    if not q:
        return Alignment("none", -1, -1, 0.0)
    doc = folded if folded is not None else fold_map(text)
    k = doc.text.find(q)
    if k >= 0:
        return Alignment("folded", doc.starts[k], doc.ends[k + len(q) - 1], 1.0)
    bare, where = doc.spaceless
    qs = q.replace(" ", "")
    k = bare.find(qs) if qs else -1
    if k >= 0:  # "vLLM FP8" quoted as "vLLMFP8": spacing is a matter of taste, in English too
        return Alignment("folded", doc.starts[where[k]], doc.ends[where[k + len(qs) - 1]], 1.0)
    if _ELISION.search(quote):
        return _elided(quote, doc, threshold, min_fuzzy_len)
    if len(q) < min_fuzzy_len:
        return Alignment("none", -1, -1, 0.0)
    score, start, end = _fuzzy(q, doc.text, doc.bigrams)
    if start >= 0 and score >= threshold:
        return Alignment("fuzzy", doc.starts[start], doc.ends[end - 1], score)
    return Alignment("none", -1, -1, score)


_ELISION = re.compile(r"\s*(?:…+|\.{3,}|。{3,}|⋯+)\s*")
ELIDED_PART = 4  # folded characters a part needs to say where it is; shorter parts match anywhere
ELIDED_GAP = 240  # folded characters allowed between two parts: "close together", one passage


def _elided(quote: str, doc: Folded, threshold: float, min_fuzzy_len: int) -> Alignment:
    """A quote cut in the middle ("A……B"): every part must occur, in order, each within
    `ELIDED_GAP` of the one before. A part is found folded (spaces ignored), or approximately
    when it is long enough to fuzzy-match on its own. Each occurrence of the first part is
    tried, since a phrase can recur in a document."""
    parts = [p for p in (fold(x).replace(" ", "") for x in _ELISION.split(quote)) if p]
    if len(parts) < 2 or any(len(p) < ELIDED_PART for p in parts):
        return Alignment("none", -1, -1, 0.0)
    bare, where = doc.spaceless
    k = bare.find(parts[0])
    for _ in range(20):
        if k < 0:
            break
        found = _rest_in_order(parts[1:], bare, k + len(parts[0]), threshold, min_fuzzy_len)
        if found is not None:
            end, score = found
            return Alignment("elided", doc.starts[where[k]], doc.ends[where[end - 1]], score)
        k = bare.find(parts[0], k + 1)
    return Alignment("none", -1, -1, 0.0)


def _rest_in_order(
    parts: list[str], bare: str, pos: int, threshold: float, min_fuzzy_len: int
) -> tuple[int, float] | None:
    """(end, score) of `parts` found one after another from `pos`, each close to the last."""
    score = 1.0
    for part in parts:
        limit = min(len(bare), pos + ELIDED_GAP + len(part))
        k = bare.find(part, pos, limit)
        if k >= 0:
            pos = k + len(part)
        elif len(part) >= min_fuzzy_len:
            window = bare[pos:limit]
            s, a, b = _fuzzy(part, window, _bigram_index(window))
            if a < 0 or s < threshold:
                return None
            pos, score = pos + b, min(score, s)
        else:
            return None
    return pos, score


def bigram_counts(s: str) -> tuple[Counter[str], int]:
    """The bigram counts `similarity` compares, and their total."""
    t = fold(s).lower()
    grams = Counter([t] if t else []) if len(t) < 2 else Counter(t[i : i + 2] for i in range(len(t) - 1))
    return grams, sum(grams.values())


def least_shared(threshold: float, total: int) -> int:
    """The fewest bigrams a text must share with one of `total` bigrams for their `similarity` to
    reach `threshold`: 2s / (total + T) >= t with T >= s gives s >= t·total / (2 - t). A millionth
    is taken off so that float rounding never makes the bound stricter than the score: an index
    skips, unscored, whatever shares fewer."""
    t = min(threshold, 1.0)  # no score is above 1: a higher threshold is met by none
    return max(1, math.ceil(t * total / (2 - t) - 1e-6))


def similarity(a: str, b: str) -> float:
    """Character-bigram Dice coefficient of the folded, lowercased texts, in [0, 1]: bigrams rather
    than words, so that a Chinese title and its mixed-language paraphrase can still score high."""
    return dice(bigram_counts(a), bigram_counts(b))


def dice(a: tuple[Counter[str], int], b: tuple[Counter[str], int]) -> float:
    """`similarity` of two texts' `bigram_counts`, for a caller comparing one text with many."""
    (ga, na), (gb, nb) = a, b
    if not na + nb:
        return 1.0
    if len(ga) > len(gb):
        ga, gb = gb, ga
    return 2 * sum(min(n, gb[g]) for g, n in ga.items() if g in gb) / (na + nb)


# --- facts -----------------------------------------------------------------------------------

# What `facts` leaves where it took something: not a space, so that "-1050" left over from
# "2026-09-22-1050" does not read as a negative number.
_BLANK = "\x00"
# ①②③ and ❶❷❸ number items; NFKC would turn them into digits that state nothing. An em dash is
# punctuation ("替代写法——--kv-offload-gb"), which `fold` would turn into a hyphen glued to what follows.
_SEPARATOR_RE = re.compile("[\u2460-\u24ff\u2776-\u2793\u3251-\u325f\u32b1-\u32bf\u2014\u2015]")
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNIT = r"%|‰|×|[xX](?![A-Za-z0-9])|bits?(?![A-Za-z])|[KkMBGT](?![A-Za-z])"
_END = r"(?![0-9]|\.\d)"
_FLAG_RE = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*(?:=[A-Za-z0-9_.:/@+%-]+)?")
# A deliberate, smaller twin of agent.core.arxiv's finder: the two modules sit in independent layers.
_ARXIV_NEW_RE = re.compile(r"(?<![0-9A-Za-z])(?<![0-9]\.)(\d{4}\.\d{4,5})(?:v\d+)?(?![0-9A-Za-z])" + _END)
_ARXIV_OLD_RE = re.compile(
    r"(?<![0-9A-Za-z])([a-z]+(?:-[a-z]+)?)(?:\.[A-Za-z][A-Za-z-]{1,9})?/(\d{7})(?:v\d+)?(?![0-9])"
)
_REF_RE = re.compile(r"(?<![&0-9])#(\d+)(?![0-9])")
_DATE_RE = re.compile(r"(?<![0-9])((?:19|20)\d\d)[-/.年](\d{1,2})[-/.月](\d{1,2})日?" + _END)
_MONTH_RE = re.compile(r"(?<![0-9])((?:19|20)\d\d)[-/年](\d{1,2})月?" + _END)
_TIME_RE = re.compile(r"(?<![0-9])(?<!\d:)([01]?\d|2[0-3]):([0-5]\d)(?![0-9]|:\d)")
_JOINED_NAME_RE = re.compile(r"(?<![0-9A-Za-z])([A-Z][A-Za-z]+) ([A-Z]\d{1,2}(?:\.\d+)?)(?![0-9A-Za-z.-])")
_NAME_RE = re.compile(r"(?<![0-9A-Za-z_\x00])[A-Za-z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*")
_V_VERSION_RE = re.compile(r"[vV](\d+(?:\.\d+)+)")
# a release series ('1.0.x', 'v0.24.x', '2.x'): every release of it, not the release '1.0'
_SERIES_RE = re.compile(r"(?<![0-9A-Za-z.\x00])[vV]?(\d+(?:\.\d+)*)\.[xX](?![0-9A-Za-z])")
_VERSION_RE = re.compile(r"(?<![0-9A-Za-z.\x00])\d+\.\d+\.\d+(?:\.\d+)?(?![0-9A-Za-z])" + _END)
_CHAIN_RE = re.compile(r"(?<![0-9A-Za-z.\x00-])\d+(?:-\d+){2,}(?![0-9A-Za-z])")
_RANGE_RE = re.compile(
    rf"(?<![0-9A-Za-z.\x00])(?:(?P<cmp>>=|<=|[<>≤≥~≈]|约)\s?)?"
    rf"(?P<a>{_NUM})(?P<ua>{_UNIT})?\s?(?:-|~|至|到)\s?(?P<b>{_NUM})\s?(?P<ub>{_UNIT})?" + _END
)
_NUMBER_RE = re.compile(
    rf"(?<![0-9A-Za-z.\x00])(?:(?P<cmp>>=|<=|[<>≤≥~≈]|约)\s?)?(?P<sign>[-+]?)(?P<cur>[$¥€£]?)"
    rf"(?P<n>{_NUM})(?:\s?(?P<u>%|‰|×)|(?P<u2>{_UNIT}))?" + _END
)
_UNIT_CANON = {"x": "×", "X": "×", "k": "K", "bits": "bit"}
_CMP_CANON = {">=": "≥", "<=": "≤", "~": "", "≈": "", "约": ""}


def _digits(n: str, *, measured: bool) -> str:
    """A number as a fact: no thousands separators; with a unit, no trailing zeros ("3.60%" is
    "3.6%"), while a bare decimal keeps them, since it may be a version ("vLLM 0.20")."""
    n = n.replace(",", "")
    if measured and "." in n:
        n = n.rstrip("0").rstrip(".")
    return n


def _number(n: str, unit: str | None) -> str:
    return _digits(n, measured=bool(unit)) + (_UNIT_CANON.get(unit, unit) if unit else "")


Render = Callable[[re.Match[str]], "str | list[str] | None"]


def _take(work: str, pattern: re.Pattern[str], render: Render, found: set[str]) -> str:
    """Add what `pattern` finds to `found`; blank it out of `work` so later patterns skip it."""

    def replace(m: re.Match[str]) -> str:
        fact = render(m)
        if fact is None:
            return m.group()
        found.update([fact] if isinstance(fact, str) else fact)
        return _BLANK * (m.end() - m.start())

    return pattern.sub(replace, work)


_YEAR = re.compile(r"(?:19|20)\d\d")


def is_year(fact: str) -> bool:
    """A fact that is a year ('2026'): when something happened, not a figure a point could repeat."""
    return _YEAR.fullmatch(fact) is not None


def facts(s: str) -> set[str]:
    """The checkable facts `s` states, normalised so that two texts can be compared as sets.

    - numbers with what changes their meaning: "3.6%", ">10%", "5-6.5×" (a range also states
      its ends, "5×" and "6.5×"), "14B", "3bit", "-3%"; approximation marks (~, ≈, 约) and "+"
      are style and are dropped; measurement units are dropped ("16,200 tok/s" → "16200")
    - dates and times: "2026-09-22", "2025-12", "22:00"
    - versions without their "v": "0.5.19" (so "v0.5.19" and "0.5.19" agree); a release series as
      one: "1.0.x" (not the release "1.0")
    - CLI flags as written: "--ipc=host", "--enable-waterfill"
    - issue and PR references: "#34759"
    - arXiv IDs by versionless key: "2605.11093", "hep-th/9901001"
    - names with digits, lowercased: "qwen3-14b", "deepseek-v4" (also from "DeepSeek V4"), "h100"
    """
    work = fold_map(_SEPARATOR_RE.sub(" ", s), squeeze=False).text
    found: set[str] = set()
    for pattern, render in _PASSES:
        work = _take(work, pattern, render, found)
    return found


def _render_date(m: re.Match[str]) -> str | None:
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{year}-{month:02d}-{day:02d}"


def _render_month(m: re.Match[str]) -> str | None:
    month = int(m[2])
    return f"{m[1]}-{month:02d}" if 1 <= month <= 12 else None


def _render_name(m: re.Match[str]) -> str | None:
    token = m.group()
    if v := _V_VERSION_RE.fullmatch(token):
        return v[1]
    return token.lower() if any(map(str.isdigit, token)) else None


def _render_range(m: re.Match[str]) -> list[str]:
    ua, ub = m["ua"] or m["ub"], m["ub"]  # "0.4–6.8%": a unit written once applies to both ends
    cmp = _CMP_CANON.get(m["cmp"] or "", m["cmp"] or "")
    a, b = _number(m["a"], ua), _number(m["b"], ub)
    low = _digits(m["a"], measured=bool(ua)) if ua == ub else a
    return [f"{cmp}{low}-{b}", f"{cmp}{a}", b]


def _render_number(m: re.Match[str]) -> str:
    cmp, sign, cur, n, u, u2 = m.group("cmp", "sign", "cur", "n", "u", "u2")
    cmp = _CMP_CANON.get(cmp, cmp) if cmp else ""
    return f"{cmp}{'-' if sign == '-' else ''}{cur}{_number(n, u or u2)}"


# Most specific first: "Qwen3-14B" is a name, not a range.
_PASSES: tuple[tuple[re.Pattern[str], Render], ...] = (
    (_FLAG_RE, lambda m: m.group()),
    (_ARXIV_NEW_RE, lambda m: m[1]),
    (_ARXIV_OLD_RE, lambda m: f"{m[1].lower()}/{m[2]}"),
    (_REF_RE, lambda m: f"#{m[1]}"),
    (_DATE_RE, _render_date),
    (_MONTH_RE, _render_month),
    (_TIME_RE, lambda m: f"{int(m[1]):02d}:{m[2]}"),
    (_JOINED_NAME_RE, lambda m: f"{m[1]}-{m[2]}".lower()),
    (_SERIES_RE, lambda m: f"{m[1]}.x"),
    (_NAME_RE, _render_name),
    (_VERSION_RE, lambda m: m.group()),
    (_CHAIN_RE, lambda m: m.group()),
    (_RANGE_RE, _render_range),
    (_NUMBER_RE, _render_number),
)


def subject_head(title: str) -> str:
    """The subject of a title: what comes before its dash, colon or parenthesis."""
    return re.split(r"\s+[—–-]+\s+|——|：|:|（|\(", title, maxsplit=1)[0].strip()
