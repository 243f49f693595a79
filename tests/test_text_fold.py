"""The run-wise fold (`_fold_map`, `_fold_text`) is the per-character reference, only faster.

Grounding offsets and fact sets depend on every character of the fold, so the fast path is held
to the reference on texts drawn from the characters that matter: CJK, fullwidth forms, dashes
and quotes, Markdown markers, whitespace of every kind, ligatures and combining marks.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.text import _fold_map, _fold_map_by_char, _fold_text
from benchmarks.evening import report

PIECES = [
    "vLLM", "0.5.19", "--ipc=host", " ", "  ", "\n", "\t", "\u3000", "\n- ", "\n1. ", "\n## ", "\n> ", "**", "`",
    "|", "推理", "吞吐", "，", "。", "（", "）", "：", "２０２６", "－", "—", "–", "“", "”", "‘", "ﬁ", "①", "㎏",
    "e\u0301", "\u0301", "Å", "＊", "＃ ", "１．", "%", "3.6%", "H100", "\r\n",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.booleans())
def test_fast_fold_is_the_reference(pieces: list[str], squeeze: bool) -> None:
    s = "".join(pieces)
    reference = _fold_map_by_char(s, squeeze=squeeze)
    assert _fold_map(s, squeeze=squeeze) == reference
    assert _fold_text(s, squeeze=squeeze) == reference.text


def test_fast_fold_on_a_generated_report() -> None:
    s = report(random.Random(7), 6000)
    for squeeze in (True, False):
        reference = _fold_map_by_char(s, squeeze=squeeze)
        assert _fold_map(s, squeeze=squeeze) == reference
        assert _fold_text(s, squeeze=squeeze) == reference.text
