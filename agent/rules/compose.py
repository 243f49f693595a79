"""Rules → Briefing: the rule chain (`agent.rules.chain`) decides, the layout (`agent.rules.layout`) words.

Everything here is derived from the extractions and the anchors; nothing is asked of the model.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

from agent.core.labels import ZH, Labels
from agent.plan.anchors import AnchorRegistry
from agent.rules.chain import Limits, RuleOutcome, Scope, run_chain
from agent.rules.claims import DocResult, Finding
from agent.rules.edit import NumberConflict
from agent.rules.layout import lay_out
from agent.rules.verify import evenings_since
from schemas.briefing import Briefing, SourceRow
from schemas.documents import SourceDoc


@dataclass(frozen=True)
class Composed:
    """The briefing, the findings that explain it, and the typed facts it was laid out from."""

    briefing: Briefing
    findings: list[Finding]
    outcome: RuleOutcome
    # (disagreement, number of the 三 item that states it), for the page to mark the figures
    conflict_items: tuple[tuple[NumberConflict, int], ...] = field(default=())
    secondary_rows: tuple[int, ...] = field(default=())  # the row of 六 of each secondary anchor


def compose(
    results: Sequence[DocResult],
    registry: AnchorRegistry,
    baselines: Sequence[SourceDoc],
    *,
    topic: str,
    date: dt.date,
    window: str,
    limits: Limits,
    footer: str = "",
    labels: Labels = ZH,
    siblings: Sequence[SourceRow] = (),
) -> Composed:
    """Run the rule chain over one evening's extractions and lay the result out as the seven
    blocks; every decision on the way is returned as a finding. `siblings`: rows of 一 for the
    other topics' briefings of the same run (see `Scope.siblings`)."""
    outcome = run_chain(Scope(results, registry, baselines, topic, date, window, limits, tuple(siblings)))
    layout = lay_out(outcome, footer, labels)
    return Composed(layout.briefing, outcome.findings, outcome, layout.conflict_items, layout.secondary_rows)


__all__ = ["Composed", "Limits", "compose", "evenings_since"]
