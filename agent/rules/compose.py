"""Rules → Briefing: the rule chain (`agent.rules.chain`) decides, the layout (`agent.rules.layout`)
words; everything is derived from the extractions and the anchors, nothing asked of the model."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import cache

from agent.core.labels import ZH, Labels
from agent.plan.anchors import AnchorRegistry
from agent.rules.chain import Limits, Scope, run_chain
from agent.rules.claims import DocResult
from agent.rules.grounding import DocText
from agent.rules.layout import Composed, lay_out
from schemas.briefing import SourceRow
from schemas.documents import SourceDoc


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
    """The seven blocks of one evening, and a finding for every decision. `siblings`: rows of 一
    for the other topics' briefings of the same run."""
    decided = run_chain(Scope(results, registry, baselines, topic, date, window, limits, cache(DocText)))
    return lay_out(decided, footer, labels, siblings)


__all__ = ["Composed", "Limits", "compose"]
