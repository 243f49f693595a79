"""Why an item of a metric other than the increments, new arXiv IDs and to-verify items is
missed (or extra) in a logged row: the stage and the reason, read from the row's own scores and
fates, so every flipped item of `eval --compare` carries both.

The fates (eval/explain.py) cover the gold increments, the new arXiv IDs and the to-verify
items; every other metric's item is named after what the metric checks, and a key fact takes the
fate of its increment: a fact of an increment the output never matched is lost where the
increment was.
"""

from __future__ import annotations

import re

from agent.core.labels import ZH
from schemas.runlog import EveningEntry, ItemFate

# "增量 5 · 3.6%" or "增量 5 · 3.6%（增量未匹配）": a key fact, its increment and whether that was matched
_KEY_FACT = re.compile(
    rf"^{re.escape(ZH.increment)} (?P<n>\S+) · (?P<fact>.*?)(?P<unmatched>{re.escape(ZH.unmatched)})?$"
)

# (metric, "missed" | "extra") -> (stage, detail) for items that have no recorded fate
_BY_METRIC: dict[tuple[str, str], tuple[str, str]] = {
    ("sources_recall", "missed"): ("not listed", "the output's sources table has no row for this file"),
    ("continued_arxiv_f1", "missed"): ("not continued", "no arXiv row of the output continues it from that date"),
    ("continued_arxiv_f1", "extra"): (
        "not in gold",
        "the output continues it; the gold does not (or from another date)",
    ),
    ("new_arxiv_f1", "extra"): ("not in gold", "the output's summary lists it as new; the gold does not"),
    ("increment_precision", "extra"): ("unmatched increment", "no gold increment is alike (file+§, arXiv or title)"),
    ("to_verify_precision", "extra"): ("not in gold", "the output raises it; no gold to-verify item asks it"),
    ("priority_agreement", "extra"): ("not in gold", "an output priority row no gold row pairs with"),
    ("rule_compliance", "missed"): ("rule broken", "the briefing breaks this rule"),
}


def key_fact(item: str) -> tuple[str, str, bool] | None:
    """(increment number, fact, whether its increment went unmatched) of a key-fact item."""
    m = _KEY_FACT.match(item)
    return (m["n"], m["fact"], bool(m["unmatched"])) if m else None


def increment_fate(e: EveningEntry, number: str) -> ItemFate | None:
    """The fate of gold increment `number` in the row (matched, or the stage that lost it)."""
    head = f"{ZH.increment} {number}："
    return next((f for f in e.fates if f.metric == "increment_recall" and f.item.startswith(head)), None)


def reason(metric: str, item: str, kind: str, losing: EveningEntry) -> tuple[str, str]:
    """The stage and reason of an item missed (`kind` "missed") or added ("extra") in the row."""
    if kind == "missed":
        fate = next((f for f in losing.fates if f.metric == metric and f.item == item and not f.matched), None)
        if fate is not None:
            return fate.stage, fate.detail
    if metric == "key_fact_recall" and (fact := key_fact(item)) is not None:
        return _key_fact_reason(fact[0], fact[2], losing)
    if metric == "relevance_agreement":
        if item.endswith("/ not listed"):
            return "not listed", "the output's sources table has no row for this file"
        return "label differs", "the output labels the source otherwise"
    if metric == "priority_agreement" and kind == "missed":
        if item.endswith("(no output row)"):
            return "no priority row", "no output priority row pairs with it (arXiv, its increment or wording)"
        return "other level", "the paired output row has another level"
    if (metric, kind) in _BY_METRIC:
        return _BY_METRIC[(metric, kind)]
    if losing.errors:
        return "row failed", losing.errors[0]
    return "", "no recorded reason for this metric's items"


def _key_fact_reason(number: str, unmatched: bool, losing: EveningEntry) -> tuple[str, str]:
    fate = increment_fate(losing, number)
    if unmatched:
        if fate is not None and not fate.matched:
            return fate.stage, "lost with its increment (its increment_recall line says why)"
        return "unpaired increment", "its increment has no match in the output"
    where = f" {fate.detail}" if fate is not None and fate.matched else ""
    return "not stated", f"its matched output increment{where} does not state it"
