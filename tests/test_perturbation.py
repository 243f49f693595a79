"""Quotes as real models write them: the relayed answers, roughened, give the same briefing.

A real model copies a quote with its punctuation in the other width, without the spaces around
an English term, with one character slipped, or with its middle cut ("……", "..."). Each such
roughening is applied to every quote of the relayed answers (cassettes/world-relayed, a real
model's blind answers to the demo evening) and the briefing must not change by a character.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from agent.core.text import fold
from agent.extract import CallRecord, ExtractionRequest, ExtractionResult
from agent.extract.llm.cassettes import CassetteIndex
from agent.extract.llm.reference import extraction_from_completion
from agent.pipeline import Outcome, Settings, brief, extract, plan
from schemas.extraction import FileExtraction
from tests.paths import ROOT, WORLD

RELAYED = ROOT / "cassettes" / "world-relayed"
_WIDTH = dict(zip("，：；（）！？,:;()!?", ",:;()!?，：；（）！？", strict=True))


def width_swapped(q: str, _: int) -> str:
    return "".join(_WIDTH.get(c, c) for c in q)


def spaces_removed(q: str, _: int) -> str:
    return q.replace(" ", "")


def slipped(q: str, _: int) -> str:
    """Two neighbouring characters in the middle swapped (a model's typo of one character)."""
    i = len(q) // 2
    if len(fold(q)) < 16 or q[i] == q[i + 1]:
        return q  # too short to tell a slip from another sentence: models slip in long quotes
    return q[:i] + q[i + 1] + q[i] + q[i + 2 :]


def elided(q: str, n: int) -> str:
    """The middle third cut, with '……' or '...' in turn."""
    if len(fold(q)) < 24:
        return q
    third = len(q) // 3
    return q[:third] + ("……" if n % 2 == 0 else "...") + q[-third:]


class Canned:
    """Answers each request with a given extraction, as the cassettes would."""

    def __init__(self, answers: dict[str, FileExtraction]) -> None:
        self.answers = answers

    def extract_all(
        self, requests: Sequence[ExtractionRequest], on_result: Callable[[ExtractionResult], None] | None = None
    ) -> list[ExtractionResult]:
        return [
            ExtractionResult(r, self.answers[r.doc_path], CallRecord(r.doc_path, r.chunk, "cassette", "relayed"))
            for r in requests
        ]


def _run(answers: dict[str, FileExtraction]) -> Outcome:
    s = Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22), cassette_dir=RELAYED)
    ev = plan(s, for_writing=False)
    return brief(ev, extract(ev, Canned(answers)))


def _roughen(answers: dict[str, FileExtraction], how: Callable[[str, int], str]) -> dict[str, FileExtraction]:
    out = {}
    n = 0
    for doc, ex in answers.items():
        claims = []
        for c in ex.claims:
            quotes = []
            for q in c.evidence:
                quotes.append(how(q, n))
                n += 1
            claims.append(c.model_copy(update={"evidence": quotes}))
        out[doc] = ex.model_copy(update={"claims": claims})
    return out


@pytest.fixture(scope="module")
def answers() -> dict[str, FileExtraction]:
    index = CassetteIndex.load(Path(RELAYED))
    return {
        c.provenance.document: extraction_from_completion(c.exchange.response_body)
        for c in index.all()
        if not c.provenance.document.startswith("compose/")  # the folder's composing answer is no document's
    }


@pytest.fixture(scope="module")
def as_given(answers: dict[str, FileExtraction]) -> Outcome:
    return _run(answers)


@pytest.mark.parametrize("how", [width_swapped, spaces_removed, slipped, elided], ids=lambda f: f.__name__)
def test_roughened_quotes_leave_the_briefing_unchanged(
    answers: dict[str, FileExtraction], as_given: Outcome, how: Callable[[str, int], str]
) -> None:
    rough = _roughen(answers, how)
    changed = sum(
        a != b
        for doc in answers
        for x, y in zip(answers[doc].claims, rough[doc].claims, strict=True)
        for a, b in zip(x.evidence, y.evidence, strict=True)
    )
    assert changed >= 20, "the roughening must touch the quotes it is about"
    report = _run(rough)
    assert report.markdown == as_given.markdown
    if how is elided:
        assert any(f.decision == "quote elided" for f in report.findings)
    report.payload()  # the run record (schemas/run.py) holds every alignment kind, "elided" included
