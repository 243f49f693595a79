"""arXiv identifiers: find them in free text, normalise them, and judge whether they can be real.

A briefing cites papers by arXiv ID, and a wrong ID is the cheapest hallucination to catch: the
ID encodes its own month, so an ID from after the briefing date, from month 13, or with the
wrong number of digits for its era cannot exist. Finding is deliberately strict about what a
*bare* number must look like (version strings, dates and percentages are everywhere in the
inbox), lenient where the writer said "arXiv" or linked arxiv.org. `validate` never raises; every
rejection carries a reason a user can act on.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from typing import Literal

# Archives that issued old-style IDs (archive/YYMMNNN) until 2007-03. `q-fin` and `stat` only
# opened with the new scheme, but writers still file papers under them, so a hit is an ID to
# judge, not noise.
OLD_ARCHIVES: frozenset[str] = frozenset(
    {
        "acc-phys", "adap-org", "alg-geom", "ao-sci", "astro-ph", "atom-ph", "bayes-an",
        "chao-dyn", "chem-ph", "cmp-lg", "comp-gas", "cond-mat", "cs", "dg-ga", "funct-an",
        "gr-qc", "hep-ex", "hep-lat", "hep-ph", "hep-th", "math", "math-ph", "mtrl-th", "nlin",
        "nucl-ex", "nucl-th", "patt-sol", "physics", "plasm-ph", "q-alg", "q-bio", "q-fin",
        "quant-ph", "solv-int", "stat", "supr-con",
    }
)  # fmt: skip

_NEW_SCHEME_START = (2007, 4)  # 0704.0001 is the first new-style ID
_FIVE_DIGITS_FROM = (2015, 1)  # 1501.00001: the number grew to five digits
_OLD_SCHEME_START = (1991, 8)  # hep-th/9108001
_OLD_SCHEME_END = (2007, 3)  # the last month of archive/YYMMNNN

_ARCHIVE_ALT = "|".join(sorted((re.escape(a) for a in OLD_ARCHIVES), key=len, reverse=True))
# Finding accepts only known archives (anything-slash-seven-digits is too common in paths);
# normalising accepts any archive-shaped word so that `validate` can name the unknown archive.
# The leading lookahead lets every position that cannot start an ID (most of a Chinese report)
# fail on one character, before the lookbehinds and the archives are tried.
_FIND_RE = re.compile(
    rf"(?=[\dA-Za-z])(?<![0-9A-Za-z])(?<![0-9]\.)"
    rf"(?:(?:{_ARCHIVE_ALT})(?:\.[A-Za-z][A-Za-z-]{{1,9}})?/\d{{7}}|\d{{4}}\.\d{{4,5}})"
    r"(?:v\d+)?"
    r"(?![0-9A-Za-z])(?!\.\d)",
    re.IGNORECASE,
)
_SHAPE_RE = re.compile(
    r"(?:(?P<arch>[a-z]+(?:-[a-z]+)?)(?:\.(?P<subj>[a-z][a-z-]{1,9}))?/(?P<onum>\d{7})"
    r"|(?P<yymm>\d{4})\.(?P<num>\d{4,5}))"
    r"(?:v(?P<ver>\d+))?",
    re.IGNORECASE,
)
_PREFIX_BEFORE_RE = re.compile(r"arxiv\s*:?\s*$", re.IGNORECASE)
_URL_BEFORE_RE = re.compile(r"arxiv\.org/(?:abs|pdf|html|format)/$", re.IGNORECASE)
_LEADING_RE = re.compile(
    r"^(?:(?:https?://)?(?:[a-z]+\.)?arxiv\.org/(?:abs|pdf|html|format)/|arxiv\s*:?\s*)",
    re.IGNORECASE,
)
Via = Literal["prefix", "url", "bare"]
_CONTEXT = 24  # how far back to look for "arXiv:" or "arxiv.org/abs/" before an ID


@dataclass(frozen=True)
class ArxivId:
    """One paper (and perhaps one version of it), in canonical form.

    `key` drops the version and any subject class, so v1 and v2 of a paper, or
    `math.GT/0309136` and `math/0309136`, compare equal by key; `display` keeps what the writer
    said, tidied, because a briefing that cited v2 should keep citing v2.
    """

    key: str
    version: int | None
    display: str
    old_style: bool

    @property
    def yymm(self) -> str:
        """The year and month the ID encodes, e.g. "2605" or "9901"."""
        return self.key.split("/")[-1][:4]

    @property
    def number(self) -> str:
        """The sequence number within the month: "11093" of 2605.11093, "001" of hep-th/9901001."""
        return self.key.split("/")[1][4:] if self.old_style else self.key.split(".")[1]

    @property
    def archive(self) -> str | None:
        """The old-style archive ("hep-th"), or None for new-style IDs."""
        return self.key.split("/")[0] if self.old_style else None

    def __str__(self) -> str:
        return self.display


@dataclass(frozen=True)
class ArxivMatch:
    """Where an ID was found. `start:end` covers the ID itself (with its version), not the
    "arXiv:" prefix or the URL around it, so `text[start:end]` normalises to `id`."""

    id: ArxivId
    start: int
    end: int
    via: Via  # how the text just before it introduces it; bare is the weakest evidence of intent

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)


@dataclass(frozen=True)
class Verdict:
    """Whether an ID can be real. `id` is set whenever the text was shaped like an ID, even if
    rejected, so a caller can show what was parsed; `reason` is empty only when `ok`."""

    ok: bool
    id: ArxivId | None
    reason: str


# Fullwidth ASCII as ASCII (２６０９．１９６５７ → 2609.19657), one character for one, so that
# offsets into the translated text are offsets into the original.
_FULLWIDTH = {cp: cp - 0xFEE0 for cp in range(0xFF01, 0xFF5F)} | {0x3000: 0x20}


def _plausible_bare(arxiv_id: ArxivId) -> bool:
    """A bare YYMM.NNNN is a decimal as often as an ID; keep it only inside the 4-digit era."""
    if arxiv_id.old_style or len(arxiv_id.number) == 5:
        return True
    yymm = arxiv_id.yymm
    return "0704" <= yymm <= "1412" and 1 <= int(yymm[2:]) <= 12


def id_keys(text: str) -> frozenset[str]:
    """The versionless keys of every arXiv ID in `text`."""
    return frozenset(m.id.key for m in find_ids(text))


def find_ids(text: str) -> list[ArxivMatch]:
    """Every arXiv ID in `text`, in order: `arXiv:2605.11093v1`, `arXiv 2605.11093`, arxiv.org
    links, old-style `hep-th/9901001` and `math.GT/0309136`, fullwidth digits. A bare number
    counts only when nothing digit- or letter-like touches it (not `v0.5.19`, `2026.09.22`,
    `Qwen3.8`). Finding does not judge: pass each `.id` to `validate`."""
    folded = text.translate(_FULLWIDTH)
    found: list[ArxivMatch] = []
    for m in _FIND_RE.finditer(folded):
        arxiv_id = normalise(m.group())
        before = folded[max(0, m.start() - _CONTEXT) : m.start()]
        via = _via(before)
        if via == "bare" and not _plausible_bare(arxiv_id):
            continue
        found.append(ArxivMatch(id=arxiv_id, start=m.start(), end=m.end(), via=via))
    return found


def _via(before: str) -> Via:
    """How the text just before an ID introduces it: an arxiv.org link, an `arXiv:` prefix, or nothing."""
    if _URL_BEFORE_RE.search(before):
        return "url"
    if _PREFIX_BEFORE_RE.search(before):
        return "prefix"
    return "bare"


def normalise(raw: str) -> ArxivId:
    """Parse one ID, with or without `arXiv:` or an arxiv.org URL around it: its shape only
    (whether it can exist is `validate`'s job); ValueError for text that is not an ID at all."""
    s = _LEADING_RE.sub("", unicodedata.normalize("NFKC", raw).strip())
    s = s.removesuffix(".pdf").removesuffix(".PDF")
    m = _SHAPE_RE.fullmatch(s)
    if not m:
        raise ValueError(
            f"{raw!r} is not shaped like an arXiv ID "
            "(expected e.g. 2605.11093, 2605.11093v2, 0901.1234 or hep-th/9901001)"
        )
    version = int(m["ver"]) if m["ver"] is not None else None
    suffix = f"v{version}" if version is not None else ""
    if m["arch"]:
        archive = m["arch"].lower()
        subject = f".{m['subj']}" if m["subj"] else ""
        key = f"{archive}/{m['onum']}"
        display = f"{archive}{subject}/{m['onum']}{suffix}"
        return ArxivId(key=key, version=version, display=display, old_style=True)
    key = f"{m['yymm']}.{m['num']}"
    return ArxivId(key=key, version=version, display=key + suffix, old_style=False)


def _problem(arxiv_id: ArxivId, not_after: date | None) -> str:
    """Why `arxiv_id` cannot be real, or "" if nothing is wrong with it."""
    shown = arxiv_id.display
    yy, mm = int(arxiv_id.yymm[:2]), int(arxiv_id.yymm[2:])
    if arxiv_id.old_style and arxiv_id.archive not in OLD_ARCHIVES:
        return (
            f"{shown}: {arxiv_id.archive!r} is not an arXiv archive "
            "(old-style IDs look like hep-th/9901001 or math.GT/0309136)"
        )
    if arxiv_id.version == 0:
        return f"{shown}: there is no v0; arXiv versions start at v1"
    if not 1 <= mm <= 12:
        return f"{shown}: month {mm:02d} is not a month (the digits after the year, YYMM, must be 01–12)"
    if int(arxiv_id.number) == 0:
        return f"{shown}: paper number {arxiv_id.number} is never issued; numbering starts at 1"
    # old-style IDs began in 1991, so their 91–99 are the 1900s; every new-style ID is from 2007 on
    year = 1900 + yy if arxiv_id.old_style and yy >= 91 else 2000 + yy
    if arxiv_id.old_style:
        era_problem = _old_era_problem(shown, year, mm)
    else:
        era_problem = _new_era_problem(shown, year, mm, arxiv_id.number)
    if era_problem:
        return era_problem
    if not_after is not None and (year, mm) > (not_after.year, not_after.month):
        return (
            f"{shown} is from {year}-{mm:02d}, after the briefing date {not_after.isoformat()}; "
            "a paper cannot be cited before it exists"
        )
    return ""


def _old_era_problem(shown: str, year: int, mm: int) -> str:
    if not _OLD_SCHEME_START <= (year, mm) <= _OLD_SCHEME_END:
        return (
            f"{shown}: old-style IDs run from 1991-08 to 2007-03, and this one says "
            f"{year}-{mm:02d}; from 2007-04 on IDs look like 0704.0001"
        )
    return ""


def _new_era_problem(shown: str, year: int, mm: int, number: str) -> str:
    if (year, mm) < _NEW_SCHEME_START:
        return (
            f"{shown}: IDs like YYMM.NNNN began in 2007-04 (0704.0001); a paper from "
            f"{year}-{mm:02d} has an old-style ID such as hep-th/9901001"
        )
    five_digit_era = (year, mm) >= _FIVE_DIGITS_FROM
    if five_digit_era and len(number) == 4:
        return (
            f"{shown}: IDs from 2015-01 on have a 5-digit number (YYMM.NNNNN) but this one has 4 — is a digit missing?"
        )
    if not five_digit_era and len(number) == 5:
        return (
            f"{shown}: IDs before 2015-01 have a 4-digit number (YYMM.NNNN) but this one has 5 — "
            "is there an extra digit?"
        )
    return ""


def validate(raw_or_id: str | ArxivId, *, not_after: date | None) -> Verdict:
    """Whether an ID can be a real arXiv paper as of `not_after` (the briefing date), required
    because forgetting it would let through IDs from the future, the hallucination caught here."""
    if isinstance(raw_or_id, ArxivId):
        arxiv_id = raw_or_id
    else:
        try:
            arxiv_id = normalise(raw_or_id)
        except ValueError as exc:
            return Verdict(ok=False, id=None, reason=str(exc))
    reason = _problem(arxiv_id, not_after)
    return Verdict(ok=not reason, id=arxiv_id, reason=reason)


def key_of(raw: str) -> str | None:
    """The versionless key of one ID as written (`arXiv:2605.11093v1` → `2605.11093`), or None
    when `raw` is not shaped like an ID. For one ID; `find_ids` is for free text."""
    try:
        return normalise(raw).key
    except ValueError:
        return None
