"""The two facts `_fold_text` builds on, checked for every Unicode character rather than sampled.

`_folds` skips the characters `_FOLDS_TO_ITSELF_RE` names before collecting a text's distinct
characters, and `_fold_text` folds with one whole-text replace per changing character, in any
order. Both are exact only if the class names no character that changes or combines, and if
nothing a character folds to changes again; a sample would miss the one character that breaks it.
"""

from __future__ import annotations

import sys
import unicodedata

from agent.core.text import _FOLDS_TO_ITSELF_RE, _MATCH_MAP, _CharFold

EVERY_CHARACTER = "".join(map(chr, range(sys.maxunicode + 1)))


def test_the_skipped_characters_fold_to_themselves() -> None:
    fold = _CharFold()  # a private table: filling the module's with every character is wasteful
    skipped = "".join(_FOLDS_TO_ITSELF_RE.findall(EVERY_CHARACTER))
    assert len(skipped) > 20_000  # CJK ideographs and printable ASCII at least
    assert [c for c in skipped if fold[c] != c or unicodedata.combining(c)] == []


def test_what_a_character_folds_to_does_not_fold_again() -> None:
    fold = _CharFold()
    changing = [
        c for c in EVERY_CHARACTER if not unicodedata.is_normalized("NFKC", c) or c.isspace() or c in _MATCH_MAP
    ]
    assert len(changing) > 4_000
    again = {c: fold[c] for c in changing if any(fold[x] != x for x in fold[c])}
    assert again == {}
