"""Rule 8: 六's levels, by what waiting would cost the reader.

A change someone running the thing must act on (a breaking change, a removal or rename, a
security hole, an end of support, an incident, a changed default, a 1.0 release) is 🔴 最高: E2
writes it first. Other increments are 🟡 中; a secondary anchor and a settled question no row
carries (a 待核实 mark to drop) are 🟢 低. An urgent answer to a settled question makes the row
that says it 🔴. When nothing is urgent the first increment leads, so 六 still says where to start.

Urgency is read from what the briefing prints (an increment's title; a settled question's title
and how it was settled) with the words of `Labels.urgent`: stars rate importance to the topic,
not whether a reader must act. A paper's title is not read, nor a secondary anchor's: 故障 or
漏洞 in a paper's title names what it studies, not something that happened to a reader's stack.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.core.labels import ZH, Labels
from agent.core.text import similarity
from agent.rules.claims import Finding, Group, Selection
from agent.rules.dedupe import Resolved
from agent.rules.verify import SAME_QUESTION

Level = Literal["high", "mid", "low"]
LEVEL_ORDER: dict[Level, int] = {"high": 0, "mid": 1, "low": 2}


@dataclass(frozen=True)
class Levels:
    """六's decisions. `rows`: the level of each increment, then of each secondary anchor.
    `settled_on`: for each settled question, the row that says it, or None when it gets a row of
    its own, at its level in `settled`."""

    rows: tuple[Level, ...]
    settled_on: tuple[int | None, ...]
    settled: tuple[Level, ...]


def urgent_word(text: str, labels: Labels = ZH) -> str:
    """The words of `text` that make it urgent, as written; empty when none do."""
    m = re.search(labels.urgent, text, re.I)
    return m.group() if m else ""


def prioritise(sel: Selection, resolved: Sequence[Resolved], labels: Labels = ZH) -> tuple[Levels, list[Finding]]:
    """Each row's level, with a finding for every row that leads and why."""
    groups = [*sel.increments, *sel.secondary]
    findings: list[Finding] = []
    rows: list[Level] = []
    for g in sel.increments:
        # the editor puts breaking changes and security first: its first point speaks with the title
        lead_point = g.points[0].point.text if g.by_editor and g.points else ""
        word = "" if g.is_paper else urgent_word(f"{g.headline} {lead_point}", labels)
        rows.append("high" if word else "mid")
        if word:
            findings.append(_leads(g, f"its title or first point says {word!r}: a reader running it must act"))
    rows += ["low"] * len(sel.secondary)
    settled_on = tuple(settling(x, groups) for x in resolved)
    settled: list[Level] = []
    for x, on in zip(resolved, settled_on, strict=True):
        # what settled it is printed too: in 五, and on this row's anchor once E2 drops the mark
        word = urgent_word(f"{x.title} {x.how}", labels)
        settled.append("high" if word else "low")
        if word and on is not None:
            rows[on] = "high"
        if word:
            findings.append(Finding("priority", x.title, x.doc.path, "urgent", f"what settled it says {word!r}"))
    if sel.increments and "high" not in (*rows, *settled):  # an urgent answer made its row or its own row high
        rows[0] = "high"
        findings.append(_leads(groups[0], "nothing tonight is urgent: the first increment leads"))
    return Levels(tuple(rows), settled_on, tuple(settled)), findings


def settling(x: Resolved, groups: Sequence[Group]) -> int | None:
    """The row that settles an open question: of the settling document's groups, the one whose
    title reads most like the question, if as alike as two titles of one question."""
    scored = [(similarity(g.headline, x.title), i) for i, g in enumerate(groups) if x.doc.path in g.docs]
    score, i = max(scored, default=(0.0, -1))
    return i if score >= SAME_QUESTION else None


def _leads(g: Group, why: str) -> Finding:
    return Finding("priority", g.headline, g.lead.doc.path, "urgent", why, g.lead.ref)


__all__ = ["LEVEL_ORDER", "Level", "Levels", "prioritise", "settling", "urgent_word"]
