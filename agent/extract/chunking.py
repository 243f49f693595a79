"""Long documents in parts, and the parts' answers read as one again: both halves in one place.

A document larger than one call's budget is split at headings; a single section still larger
is split at paragraphs, and a paragraph still larger at lines, so no request exceeds what the
model's context holds. The per-document part limit is applied by the caller, which reports the
parts it did not send rather than paying for them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from schemas.extraction import FileExtraction

REL_RANK = {"高": 3, "中": 2, "邻接": 1, "参考": 0}
_CJK = re.compile("[\u3400-\u9fff\uff00-\uffef]+")  # runs: one replacement per run, not per character


def estimate_tokens(text: str) -> int:
    """Rough and deliberately pessimistic: a CJK character is a token, four other characters are one.
    The one estimator of the project (call budgets, usage of reference answers, benchmarks)."""
    return _estimate(len(text), _cjk(text))


def _cjk(text: str) -> int:
    return len(text) - len(_CJK.sub("", text))  # counted in C: this runs on every document, often


def _estimate(length: int, cjk: int) -> int:
    """`estimate_tokens` of a text of `length` characters, `cjk` of them CJK: both add up over
    pieces, so a growing part is estimated without counting it again."""
    return max(1, cjk + (length - cjk + 3) // 4)


def _fits(text: str, budget: int) -> bool:
    """No character is more than one token, so a text no longer than `budget` fits without being
    counted."""
    return len(text) <= budget or estimate_tokens(text) <= budget


def split_sections(text: str, budget: int) -> list[str]:
    """Parts of at most `budget` estimated tokens, cut at the coarsest boundary that fits:
    headings first (a claim stays with its evidence), then blank lines, then lines; joined
    back together the parts are the document. Each piece is counted once (the plain way,
    estimating each growing part again, was a third of planning a long evening)."""
    if _fits(text, budget):
        return [text]
    chunks: list[str] = []
    cur, length, cjk = "", 0, 0
    for piece, k in _pieces(text, budget, _CUTS):
        n = len(piece)
        if cur and _estimate(length + n, cjk + k) > budget:
            chunks.append(cur)
            cur, length, cjk = "", 0, 0
        cur, length, cjk = cur + piece, length + n, cjk + k
    if cur:
        chunks.append(cur)
    return chunks


_CUTS = (r"(?m)^(?=#{1,3} )", r"(?<=\n\n)", r"(?<=\n)")


def _pieces(text: str, budget: int, cuts: tuple[str, ...]) -> list[tuple[str, int]]:
    """`text` (known not to fit) cut at the first boundary kind, and any piece still too large
    at the next ones; each piece with its CJK count, which decided whether it fits and which
    `split_sections` adds up."""
    if not cuts:  # one line longer than a call: cut it by characters, as a last resort
        step = max(1, budget // 2)
        return [(p, _cjk(p)) for p in (text[i : i + step] for i in range(0, len(text), step))]
    pieces: list[tuple[str, int]] = []
    for p in re.split(cuts[0], text):
        if p:
            k = _cjk(p)
            pieces.extend([(p, k)] if _estimate(len(p), k) <= budget else _pieces(p, budget, cuts[1:]))
    return pieces


def merge_chunks(parts: Sequence[FileExtraction]) -> FileExtraction:
    """The parts of a split document read as one: highest relevance, claims and skips in order."""
    if len(parts) == 1:
        return parts[0]
    best = max(parts, key=lambda p: REL_RANK.get(p.relevance, 0))
    held = " · ".join(dict.fromkeys(h.strip() for p in parts for h in p.held.split(" · ") if h.strip()))
    return FileExtraction(
        relevance=best.relevance,
        relevance_reason=best.relevance_reason,
        held=held,
        claims=[c for p in parts for c in p.claims],
        skipped=[s for p in parts for s in p.skipped],
        resolved=[r for p in parts for r in p.resolved],
    )
