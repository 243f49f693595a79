"""Rule 7: 六's levels, by what waiting would cost the reader.

An editor ranks tonight's changes to the living document by what they ask of someone who runs the
thing: a breaking change, a removal or rename, a security hole, an end of support, an incident, a
changed default or a 1.0 release must be acted on, so E2 writes it first (🔴 最高); the other
increments are 🟡 中; a secondary anchor (a 3★ paper, one short line) and a settled question no
increment carries (a 待核实 mark to drop) are 🟢 低, unless what settled it is itself urgent. When
nothing tonight is urgent, the first increment leads, so 六 still says where to start.

Urgency is read from what the briefing prints (an increment's title, a settled question's title
and how it was settled), with the words of `Labels.urgent`: the model's stars rate importance to
the topic, not whether a reader must act, and a title says what happened.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agent.core.labels import ZH, Labels
from agent.rules.claims import Finding, Group
from agent.rules.dedupe import Resolved

Level = Literal["high", "mid", "low"]
LEVEL_ORDER: dict[Level, int] = {"high": 0, "mid": 1, "low": 2}


@dataclass(frozen=True)
class Levels:
    """The level of each increment (in select's order) and of each settled question (in resolve's)."""

    increments: tuple[Level, ...]
    settled: tuple[Level, ...]


def urgent_word(text: str, labels: Labels = ZH) -> str:
    """The words of `text` that make it urgent, as written; empty when none do."""
    m = re.search(labels.urgent, text, re.I)
    return m.group() if m else ""


def prioritise(
    increments: Sequence[Group], resolved: Sequence[Resolved], labels: Labels = ZH
) -> tuple[Levels, list[Finding]]:
    """Each increment's and each settled question's level, with a finding for every one that leads."""
    findings: list[Finding] = []
    levels: list[Level] = []
    for g in increments:
        word = urgent_word(g.headline, labels)
        levels.append("high" if word else "mid")
        if word:
            findings.append(_leads(g, f"its title says {word!r}: a reader running it must act"))
    settled: list[Level] = []
    for x in resolved:
        word = urgent_word(f"{x.title} {x.how}", labels)
        settled.append("high" if word else "low")
        if word:
            findings.append(Finding("priority", x.title, x.doc.path, "urgent", f"what settled it says {word!r}"))
    if increments and "high" not in (*levels, *settled):
        levels[0] = "high"
        findings.append(_leads(increments[0], "nothing tonight is urgent: the first increment leads"))
    return Levels(tuple(levels), tuple(settled)), findings


def _leads(g: Group, why: str) -> Finding:
    return Finding("priority", g.headline, g.lead.doc.path, "urgent", why, g.lead.ref)


__all__ = ["LEVEL_ORDER", "Level", "Levels", "prioritise", "urgent_word"]
