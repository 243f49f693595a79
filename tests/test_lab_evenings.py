"""The second workspace's two evenings exercise the selection limits the demo evening never reaches:
a flood (more real candidates than the 8-increment limit) and a thin one (fewer than 3)."""

from __future__ import annotations

import datetime as dt

from agent.core.settings import Settings
from agent.pipeline import brief, extract, plan
from tests.paths import ROOT

LAB = ROOT / "examples" / "lab"


def _evening(day: int):  # type: ignore[no-untyped-def]
    s = Settings(
        workspace=LAB,
        topic="retrieval",
        date=dt.date(2026, 10, day),
        backend="replay",
        cassette_dir=ROOT / "cassettes" / "lab",
        no_cache=True,
    )
    return brief(ev := plan(s, for_writing=False), extract(ev))


def test_the_flood_keeps_eight_and_turns_the_rest_into_secondary_anchors() -> None:
    report = _evening(14)
    b = report.composed.briefing
    assert len(b.increments) == 8
    past = [f for f in report.findings if f.rule == "select" and "past the limit of 8" in f.detail]
    assert past, "a 4-star candidate beyond the eighth becomes a secondary anchor"
    secondary = [f.subject for f in report.findings if f.decision == "secondary anchor"]
    assert len(secondary) >= 5
    assert all(any(s[:8] in row.content for row in b.priorities) for s in secondary)  # each one in 六
    # the question the pgvector increment settles is said on that increment's row, and the run
    # record's trace still points each secondary anchor at its own row
    from agent.write.trace import _secondary

    (settled,) = [row for row in b.priorities if "今晚已核实" in row.content]
    assert settled.content.startswith("pgvector 0.9.0") and settled.action.endswith("去掉待核实标注")
    traced = _secondary(report.composed)
    assert traced and all(t.title[:8] in b.priorities[t.row].content for t in traced)


def test_the_thin_evening_says_it_is_under_target_and_does_not_pad() -> None:
    b = _evening(15).composed.briefing
    assert len(b.increments) == 2
    assert "低于 3" in b.summary.count_note
    # nothing weak promoted to fill 六: its rows are the two increments and the open question settled
    (settled,) = [r.content for r in b.priorities if "待核实，今晚已核实" in r.content]
    assert sorted(r.content for r in b.priorities if r.content != settled) == sorted(i.title for i in b.increments)
    assert len(b.priorities) == 3
