"""Rule 5: which subjects become increments, in what order, under which sections; and how
relevant each source was tonight.

Select ranks by stars, credibility and relevance and never pads: too few strong subjects is a
short briefing, said so in the summary. Past the maximum, subjects with enough stars become
secondary anchors (四 and 六); the rest is noise and goes nowhere.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections.abc import Sequence
from dataclasses import replace

from agent.core.text import similarity
from agent.plan.anchors import Anchor, AnchorRegistry
from agent.rules.claims import Finding, Group, Selection
from schemas.documents import SourceDoc
from schemas.extraction import FileExtraction

_SECTION_REF = re.compile(r"^\s*§\s*(\d+(?:\.\d+)*)\s*(.*)$", re.S)
SECTION_ALIKE = 0.6


def _split_section(section: str) -> tuple[str, str, str] | None:
    """'§1.4 推理可观测性（新增）' -> ('1.4', '推理可观测性', '（新增）'); None without a number."""
    m = _SECTION_REF.match(section)
    if not m:
        return None
    rest = m[2].strip()
    name = re.split(r"[（(]", rest, maxsplit=1)[0].strip()
    return m[1], name, rest[len(name) :].strip()


def reconcile_sections(groups: list[Group], living: Sequence[str]) -> tuple[list[Group], list[Finding]]:
    """One number per block name, one name per block: each document's call proposes its own
    "§1.5 …" for what the living document lacks. A living section keeps its number; a proposed
    block named like one seen joins it; a new block keeps its number if free, else takes the next
    free one. Strongest groups first: they keep theirs."""
    numbers: dict[str, str] = {}  # block name -> number
    for sec in living:
        if parts := _split_section(sec):
            numbers.setdefault(parts[1], parts[0])
    taken = set(numbers.values())
    findings: list[Finding] = []
    renamed: dict[int, str] = {}
    for gi, g in sorted(enumerate(groups), key=lambda p: p[1].rank()):
        parts = _split_section(g.lead.claim.suggested_section)
        if parts is None:
            continue
        num, name, tail = parts
        same = max(numbers, key=lambda n: similarity(n, name), default="")
        if same and (same == name or similarity(same, name) >= SECTION_ALIKE):
            block, number = same, numbers[same]
        else:
            block, number = name, num if num not in taken else _next_free(num, taken)
            numbers[block] = number
            taken.add(number)
        if (number, block) != (num, name):
            why = f"§{num} {name} -> §{number} {block}"
            c = g.lead
            findings.append(
                Finding("sections", c.claim.title, c.doc.path, "renumbered" if block == name else "renamed", why, c.ref)
            )
        renamed[gi] = f"§{number} {block}{tail}"
    return [_in_section(g, renamed[gi]) if gi in renamed else g for gi, g in enumerate(groups)], findings


def _in_section(g: Group, section: str) -> Group:
    """The group with its lead's suggested section replaced (the section 二 and 六 print)."""
    lead = replace(g.lead, claim=g.lead.claim.model_copy(update={"suggested_section": section}))
    return replace(g, members=(lead, *g.members[1:]))


def _next_free(number: str, taken: set[str]) -> str:
    """The next number under the same parent: 1.5 taken -> 1.6 (or the first free after it)."""
    head, dot, last = number.rpartition(".")
    return next(c for n in itertools.count(int(last) + 1) if (c := f"{head}{dot}{n}") not in taken)


def select(
    groups: list[Group], *, min_stars: int, secondary_min_stars: int, max_increments: int, max_secondary: int = 8
) -> Selection:
    """Best first by stars, credibility, relevance: at most `max_increments`, never padded; the
    rest with `secondary_min_stars` become secondary anchors, at most `max_secondary` of them (the
    best; an evening's long tail of useful items is not what the living document keeps)."""
    ranked = sorted(groups, key=Group.rank)
    inc: list[Group] = []
    sec: list[Group] = []
    findings: list[Finding] = []
    for g in ranked:
        t, d, ref = g.lead.claim.title, g.lead.doc.path, g.lead.ref
        if g.stars >= min_stars and len(inc) < max_increments:
            inc.append(g)
            findings.append(Finding("select", t, d, "increment", f"{g.stars}★ {g.credibility} {g.relevance}", ref))
        elif g.stars >= secondary_min_stars and len(sec) < max_secondary:
            why = f"past the limit of {max_increments}" if g.stars >= min_stars else f"{g.stars}★ < {min_stars}★"
            sec.append(g)
            findings.append(Finding("select", t, d, "secondary anchor", why, ref))
        elif g.stars >= secondary_min_stars:
            why = f"past the limit of {max_secondary} secondary anchors"
            findings.append(Finding("select", t, d, "dropped", why, ref))
        else:
            findings.append(Finding("select", t, d, "dropped", f"{g.stars}★ is noise (< {secondary_min_stars}★)", ref))
    return Selection(sorted(inc, key=_display_key), sorted(sec, key=_display_key), findings)


def continued_papers(
    registry: AnchorRegistry, named_tonight: set[str], limit: int
) -> tuple[list[tuple[Anchor, bool]], int, list[Finding]]:
    """四's continued rows, each with whether a document names it again tonight: the papers earlier
    evenings anchored, newest first, as an editor lists what a reader may cite on. Every one a
    document names again tonight is listed; the rest up to `limit` rows in all, the newest first.
    Unbounded, the list would grow by every evening's papers for as long as the workspace lives;
    the living document keeps them all. Also returns how many earlier papers there are in all."""
    dated = [a for a in registry.anchors if a.kind == "arxiv" and a.first_date is not None]
    newest = sorted(dated, key=lambda a: a.first_date or dt.date.min, reverse=True)
    again = {a.key for a in newest if a.key in named_tonight}
    kept = again.union([a.key for a in newest if a.key not in again][: max(limit - len(again), 0)])
    listed = [(a, a.key in again) for a in newest if a.key in kept]
    left = len(newest) - len(listed)
    if not left:
        return listed, len(newest), []
    why = f"past the limit of {limit} continued papers (the newest, and every one a document names tonight, are listed)"
    return listed, len(newest), [Finding("arxiv", f"{left} earlier anchored paper(s)", "", "left out", why)]


def _display_key(g: Group) -> tuple[tuple[int, ...], dt.datetime, int]:
    """Increments read in living-document order: by suggested section, then in the order the
    evening produced them (document time; a date-only file counts from the start of its date),
    then as the model ranked them within a document."""
    m = re.search(r"§\s*(\d+(?:\.\d+)*)", g.lead.claim.suggested_section)
    section = tuple(int(x) for x in m[1].split(".")) if m else (999,)
    return (section, g.lead.doc.timestamp or dt.datetime.min.replace(tzinfo=dt.UTC), g.lead.order)


def relevance(
    doc: SourceDoc, extraction: FileExtraction, on_topic: int, strong: int = 0, judge: str = "model"
) -> tuple[str, Finding | None]:
    """The 一 label of a source, from what it carried rather than how much else it held: another
    topic's briefing is 邻接; a report with a strong grounded claim (`strong`: with the increment
    threshold of stars) or several is 高 — one side mention of 2-3★ raises nothing; a card or a
    queue with no grounded claim is 参考. Others keep the model's label; a change is a finding."""
    if doc.kind == "adjacent":
        label, why = "邻接", "a same-evening briefing of another topic"
    elif doc.kind == "report" and (strong or on_topic > 1):
        label, why = "高", f"a report with {on_topic} grounded claim(s) on the topic ({strong} strong)"
    elif doc.kind in ("paper_card", "queue") and not on_topic:
        label, why = "参考", f"a {doc.kind.replace('_', ' ')} with no grounded claim on the topic"
    else:
        return extraction.relevance, None
    if label == extraction.relevance:
        return label, None
    return label, Finding(
        "relevance", doc.name, doc.path, "relabelled", f"{label}: {why}; the {judge} said {extraction.relevance}"
    )
