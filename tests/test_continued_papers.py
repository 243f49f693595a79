"""四's continued rows: the papers earlier evenings anchored, bounded so a workspace that runs for
months does not list its whole history every evening; a paper a document names again tonight is
always listed."""

from __future__ import annotations

import datetime as dt

import pytest

from agent.plan.anchors import Anchor, AnchorRegistry
from agent.rules.select import continued_papers

DATE = dt.date(2026, 9, 22)


def _paper(n: int, days_before: int) -> Anchor:
    day = DATE - dt.timedelta(days=days_before)
    return Anchor("arxiv", f"2609.{n:05d}", f"Paper {n}", day, f"inbox/tom/{day}-inference-e1prep.md")


# papers 1..6 anchored 6..1 days before the evening: paper 6 is the newest
PAPERS = tuple(_paper(n, 7 - n) for n in range(1, 7))
UNDATED = Anchor("arxiv", "2601.00001", "Only the living document", None, "living/inference.md")


@pytest.mark.parametrize(
    ("limit", "named", "listed", "left"),
    [
        pytest.param(20, set(), [6, 5, 4, 3, 2, 1], 0, id="under-the-limit-newest-first"),
        pytest.param(3, set(), [6, 5, 4], 3, id="over-the-limit-the-newest"),
        pytest.param(3, {"2609.00001"}, [6, 5, 1], 3, id="an-old-paper-named-tonight-stays"),
        pytest.param(1, {"2609.00001", "2609.00002"}, [2, 1], 4, id="every-named-paper-past-the-limit"),
        pytest.param(0, set(), [], 6, id="none-asked"),
    ],
)
def test_continued_papers(limit: int, named: set[str], listed: list[int], left: int) -> None:
    reg = AnchorRegistry("inference", DATE, (UNDATED, *PAPERS), (), ())
    rows, total, findings = continued_papers(reg, named, limit)
    assert total == len(PAPERS)  # the undated line is the living document's alone
    assert [int(a.key.split(".")[1]) for a, _ in rows] == listed
    assert [again for a, again in rows] == [a.key in named for a, _ in rows]
    assert [f.decision for f in findings] == (["left out"] if left else [])
    assert all(f"{left} earlier" in f.subject for f in findings)
