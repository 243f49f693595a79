"""`find_ids` (and so `id_keys`) is its reference, only faster.

The reference below is `find_ids` as it was before finding was split into a new-style and an
old-style pattern and folding into whole-text replaces: one pattern, led by a lookahead, over a
`str.translate` of the text. The fast version is held to it exactly, on generated text dense in
what an ID is made of, on every Markdown file of the examples and eval cases, and on a
generated evening; the tables it builds on are checked for every Unicode character.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.arxiv import (
    _ARCHIVE_ALT,
    _ARCHIVE_FIRST,
    _CONTEXT,
    _FOLDS_TO_ITSELF_RE,
    _PREFIX_BEFORE_RE,
    _URL_BEFORE_RE,
    ArxivMatch,
    _OneToOne,
    _plausible_bare,
    find_ids,
    id_keys,
    normalise,
)
from benchmarks.evening import write_evening

ROOT = Path(__file__).resolve().parents[1]

# --- the reference ---------------------------------------------------------------------------

_FIND_RE = re.compile(
    rf"(?=[0-9{_ARCHIVE_FIRST}])(?<![0-9A-Za-z])(?<![0-9]\.)"
    rf"(?:(?:{_ARCHIVE_ALT})(?:\.[A-Za-z][A-Za-z-]{{1,9}})?/\d{{7}}|\d{{4}}\.\d{{4,5}})"
    r"(?:v\d+)?"
    r"(?![0-9A-Za-z])(?!\.\d)",
    re.IGNORECASE,
)
_ONE_TO_ONE = _OneToOne()


def _reference_find_ids(text: str) -> list[ArxivMatch]:
    folded = text if text.isascii() else text.translate(_ONE_TO_ONE)
    found: list[ArxivMatch] = []
    for m in _FIND_RE.finditer(folded):
        arxiv_id = normalise(m.group())
        before = folded[max(0, m.start() - _CONTEXT) : m.start()]
        via: Literal["prefix", "url", "bare"]
        if _URL_BEFORE_RE.search(before):
            via = "url"
        elif _PREFIX_BEFORE_RE.search(before):
            via = "prefix"
        else:
            via = "bare"
            if not _plausible_bare(arxiv_id):
                continue
        found.append(ArxivMatch(id=arxiv_id, start=m.start(), end=m.end(), via=via))
    return found


# --- the comparison --------------------------------------------------------------------------

ALPHABET = (
    "0123456789" "０１２９٣" ".．/／-:：vVİı" "hep-thmaGTcsqfinstat" "arXivorgbs" " \n　" "推理，。" "ſK"
)  # fmt: skip
PIECES = [
    "2605.11093", "0704.0001", "1412.1234", "9901.12345", "v2", "V3", "v", ".", "1", "12", "1234", "12345", "/",
    "hep-th", "HEP-TH", "math", "math.GT", "cs.AI", "q-fin", "stat", "9901001", "0309136", "1234567", "arXiv:",
    "arXiv ", "arxiv.org/abs/", "https://", "arxiv.org/pdf/", ".pdf", " ", "\n", "推理", "２６０５．１１０９３",
    "ａｒＸｉｖ：", "a", "x", "-", "İ", "ı", "ſ", "K",
]  # fmt: skip

text_from_alphabet = st.text(alphabet=ALPHABET, max_size=60)
text_from_pieces = st.lists(st.sampled_from(PIECES), max_size=25).map("".join)


def _same(text: str) -> None:
    assert find_ids(text) == _reference_find_ids(text)
    assert id_keys(text) == frozenset(m.id.key for m in _reference_find_ids(text))


@settings(max_examples=1500, deadline=None)
@given(st.one_of(text_from_alphabet, text_from_pieces))
def test_find_ids_is_the_reference_on_generated_text(text: str) -> None:
    _same(text)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("hep-th/9901001 2605.11093 math.GT/0309136v2 1.2605.11093", id="both-styles"),
        pytest.param("x2605.11093 2605.11093x 2605.11093.5 2605.110931", id="touching"),
        pytest.param("HEP-TH/9901001V2 2605.11093V2 ſtat/0601001", id="case"),
        pytest.param("İ2605.11093 2605.11093ı hep-th/9901001İ", id="non-ascii-letters-that-fold-case"),
        pytest.param("arXiv：２６０５．１１０９３ ａｓｔｒｏ－ｐｈ／０６０１００１", id="fullwidth"),
    ],
)
def test_find_ids_is_the_reference_on_edges(text: str) -> None:
    _same(text)


def _repository_markdown() -> list[Path]:
    return sorted([*(ROOT / "examples").rglob("*.md"), *(ROOT / "eval" / "cases").rglob("*.md")])


@pytest.mark.parametrize("path", _repository_markdown(), ids=lambda p: str(p.relative_to(ROOT)))
def test_find_ids_is_the_reference_on_the_repository(path: Path) -> None:
    _same(path.read_text(encoding="utf-8"))


def test_find_ids_is_the_reference_on_a_generated_evening(tmp_path: Path) -> None:
    write_evening(tmp_path, 30)
    reports = sorted((tmp_path / "inbox").rglob("*.md"))
    assert sum(len(find_ids(p.read_text(encoding="utf-8"))) for p in reports) > 100
    for path in reports:
        _same(path.read_text(encoding="utf-8"))


EVERY_CHARACTER = "".join(map(chr, range(sys.maxunicode + 1)))


def test_the_skipped_characters_fold_to_themselves() -> None:
    one_to_one = _OneToOne()  # a private table: filling the module's with every character is wasteful
    skipped = "".join(_FOLDS_TO_ITSELF_RE.findall(EVERY_CHARACTER))
    assert len(skipped) > 20_000
    assert [c for c in skipped if one_to_one[ord(c)] != c] == []


def test_what_a_character_folds_to_does_not_fold_again() -> None:
    one_to_one = _OneToOne()
    changing = [c for c in EVERY_CHARACTER if not unicodedata.is_normalized("NFKC", c)]
    assert len(changing) > 4_000
    again = [c for c in changing if one_to_one[ord(one_to_one[ord(c)])] != one_to_one[ord(c)]]
    assert again == []
