"""Block 三 an editor can act on: a budget, notes merged per increment, carried items that age out.

The flood this guards against is real: the relayed answers of the demo evening (a real model,
cassettes/world-relayed) attach 31 notes to 14 documents, which made 17 items before the budget.
"""

from __future__ import annotations

import datetime as dt

import pytest

from agent.pipeline import Outcome, Settings, brief, extract, plan
from agent.plan.anchors import AnchorRegistry, OpenItem
from agent.rules.claims import DocResult
from agent.rules.compose import Limits, compose
from agent.rules.verify import evenings_since
from schemas.briefing import VerifyItem
from schemas.documents import SourceDoc
from schemas.extraction import FileExtraction
from tests.paths import ROOT, WORLD

DATE = dt.date(2026, 9, 22)


@pytest.fixture(scope="module")
def relayed() -> Outcome:
    s = Settings(
        workspace=WORLD,
        topic="inference",
        date=DATE,
        backend="replay",
        cassette_dir=ROOT / "cassettes" / "world-relayed",
        allow_stale=True,  # a real model's answers to the prompt before anchor ids (the case replays them so)
        no_cache=True,
    )
    ev = plan(s, for_writing=False)
    return brief(ev, extract(ev))


def test_a_real_models_notes_fit_the_budget_and_every_drop_is_explained(relayed: Outcome) -> None:
    b = relayed.composed.briefing
    assert len(b.to_verify) <= Limits().max_to_verify == 6
    dropped = [f for f in relayed.findings if f.rule == "to-verify" and f.decision == "dropped by budget"]
    assert dropped
    assert all("past the budget of 6" in f.detail for f in dropped)
    # one question an item, under a short title: nothing joined with "；"
    assert all("；" not in v.title and len(v.title) <= 40 for v in b.to_verify)
    # ranked: nothing kept weighs less than something dropped (a carried item one level more)
    rank = {"高": 2, "中": 1, "低": 0}

    def weight(risk: str, carried: bool) -> int:
        return rank[risk] + carried

    kept_min = min(weight(v.risk, bool(v.carried_from)) for v in b.to_verify)
    assert all(weight(f.detail.split("(")[1].split()[0], f.doc.endswith("e1prep.md")) <= kept_min for f in dropped)
    # a carried item the budget drops stops being carried: 五 says so
    for f in dropped:
        if f.doc.endswith("e1prep.md"):
            assert any("未核实即停止延续" in n.note and f.subject in n.note for n in b.no_increment)


def test_notes_about_claims_that_are_not_increments_are_dropped(relayed: Outcome) -> None:
    drops = [f for f in relayed.findings if f.rule == "to-verify" and f.decision == "dropped"]
    assert drops and all("not an increment tonight" in f.detail for f in drops)
    increments = {i.title for i in relayed.composed.briefing.increments}
    assert not any(f.subject in increments for f in drops)


def _open(origin: str) -> OpenItem:
    """A briefing's own 高-risk doubt: the one kind of doubt carried, and the one kind that ages."""
    item = VerifyItem(number=1, title=f"某数字待核实 {origin}", risk="高", problem="p", suggestion="s")
    return OpenItem(item=item, origin=origin, source="inbox/tom/2026-09-21-inference-e1prep.md")


@pytest.mark.parametrize(
    ("origin", "carry_evenings", "carried"),
    [
        ("9-21", 3, True),
        ("9-19", 3, True),
        ("9-18", 3, False),
        ("9-18", 4, True),
        ("9-21", 1, True),
        ("9-25", 3, True),  # an origin after tonight has not aged
        ("9-25", 0, True),
    ],
)
def test_carried_items_age_out_with_a_note_in_five(origin: str, carry_evenings: int, carried: bool) -> None:
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(_open(origin),), sections=())
    d = SourceDoc(path="inbox/jay/a.md", kind="report", agent="jay", in_window=True, read=True, text="x")
    ex = FileExtraction(relevance="中", relevance_reason="r", held="h")
    out = compose(
        [DocResult(d, ex)],
        reg,
        [],
        topic="inference",
        date=DATE,
        window="w",
        limits=Limits(carry_evenings=carry_evenings),
    )
    b = out.briefing
    assert [v.carried_from for v in b.to_verify] == ([origin] if carried else [])
    aged = [n for n in b.no_increment if "未核实即停止延续" in n.note]
    assert bool(aged) is not carried
    assert any(f.decision == ("carried over" if carried else "dropped unverified") for f in out.findings)


def test_a_budget_of_zero_keeps_nothing_and_says_why() -> None:
    reg = AnchorRegistry(topic="inference", date=DATE, anchors=(), open_items=(_open("9-21"),), sections=())
    d = SourceDoc(path="inbox/jay/a.md", kind="report", agent="jay", in_window=True, read=True, text="x")
    ex = FileExtraction(relevance="中", relevance_reason="r", held="h")
    out = compose([DocResult(d, ex)], reg, [], topic="inference", date=DATE, window="w", limits=Limits(max_to_verify=0))
    assert out.briefing.to_verify == []
    assert [f.decision for f in out.findings if f.rule == "to-verify"] == ["dropped by budget"]


@pytest.mark.parametrize(
    ("origin", "date", "n"),
    [
        ("9-21", DATE, 1),
        ("9-22", DATE, 0),
        ("12-30", dt.date(2027, 1, 2), 3),
        ("x", DATE, None),
        ("2-30", DATE, None),
        (" 9-21 ", DATE, 1),
        ("9-21锚定", DATE, None),
        ("", DATE, None),
        ("12-31", dt.date(2027, 1, 1), 1),  # across the year end
        ("2-29", dt.date(2028, 3, 1), 1),
        ("2-29", dt.date(2026, 3, 1), 731),  # the last Feb 29, two years back
        ("9-25", DATE, 0),  # raised after tonight (a re-run of an earlier evening): not old, not negative
        ("1-1", dt.date(2026, 12, 31), 0),  # the same across the year end, not 364 evenings
        ("3-15", DATE, 191),
        ("10-24", DATE, 333),  # past the lead: last year's
    ],
)
def test_evenings_since(origin: str, date: dt.date, n: int | None) -> None:
    assert evenings_since(origin, date) == n
