"""Scores of a span of evenings as a whole: what no one evening's score can see. Pure, like eval.metrics.

- `re_reported`: an increment of a later evening whose subject is an increment of an earlier evening
  of the span, and that states no fact that earlier increment did not: old news told again. Subjects
  pair as an evening's increments pair with its gold's (`match_increments`: credited file and §, arXiv
  ID, release, or alike titles), facts are read as key-fact recall reads them (`stated_facts`).
- `subjects_twice`: a top-level line of the living document after the span whose subject an earlier
  top-level line already has (one arXiv ID, or subjects as alike as the E2 patch holds to be one
  subject, `agent.write.living.SAME_SUBJECT`): the patch amends such a line, it must never double it.
- `living_disputed`: a figure disputed in 三 ('A 还是 B', as `disputed_stated` reads the gold's) by the
  briefing of the evening that wrote the line, stated on a line the span added to the living document
  without the open-question mark (`待核实`) the patch writes beside a disputed increment's line: once a
  document settles the dispute, its value is the fact to write.
- `growth`: the bytes the span added to the living document, per evening (the target: ≤ 1.5 kB).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Sequence

from agent.core.arxiv import find_ids
from agent.core.dates import read_day
from agent.core.labels import ZH_LIVING
from agent.core.text import similarity
from agent.write.living import HEADING, SAME_SUBJECT, TAIL, is_top_line, line_subject
from eval.metrics import COUNTS, Score, disputed_figures, inc_label, match_increments, stated_facts, stated_figures
from schemas.briefing import Briefing

SPAN_METRICS: dict[str, str] = {
    "re_reported": "increments whose subject an earlier evening of the span reported, adding no fact to it (a count)",
    "subjects_twice": "top-level lines of the living document after the span whose subject an earlier line has",
    "living_disputed": "figures the span's briefings disputed, written as fact on a line the span added to the"
    " living document",
    "growth": "bytes the span added to the living document, per evening",
}
# Every span metric counts what an editor would undo: lower is better, as for eval.metrics.COUNTS.
LOWER_IS_BETTER = COUNTS | frozenset(SPAN_METRICS)

Evening = tuple[dt.date, Briefing]  # one evening of the span and the briefing it wrote


def span_scores(evenings: Sequence[Evening], before: str, after: str) -> dict[str, Score]:
    """Every span metric, from the evenings' briefings in order and the living document before the
    first evening and after the last."""
    found = [
        re_reported(evenings),
        subjects_twice(after),
        living_disputed(evenings, before, after),
        growth(before, after, len(evenings)),
    ]
    return {s.metric: s for s in found}


def re_reported(evenings: Sequence[Evening]) -> Score:
    """Each later increment against every earlier evening's increments: re-reported when it pairs
    with at least one and states no fact beyond the facts of those it pairs with."""
    told: list[str] = []
    fresh: list[str] = []
    for k, (day, later) in enumerate(evenings):
        earlier: dict[int, list[tuple[dt.date, int, Briefing]]] = {}
        for before_day, before in evenings[:k]:
            for p in match_increments(before, later).pairs:
                earlier.setdefault(p.out, []).append((before_day, p.gold, before))
        for i, pairs in sorted(earlier.items()):
            inc = later.increments[i]
            known = set().union(*(stated_facts(b.increments[g]) for _, g, b in pairs))
            was = "; ".join(f"{d:%m-%d} {inc_label(b.increments[g])}" for d, g, b in pairs)
            label = f"{day:%m-%d} {inc_label(inc)} ← {was}"
            if new := sorted(stated_facts(inc) - known):
                fresh.append(f"{label} (adds {', '.join(new[:4])})")
            else:
                told.append(label)
    return Score("re_reported", float(len(told)), matched=tuple(fresh), extra=tuple(told))


def _lines(text: str) -> list[tuple[int, str, bool]]:
    """Each line (1-based) with whether it sits in the open-questions list (under a heading that names
    it, '## 附 B：开放待核实'): an item there asks about a subject, it is not the subject's line."""
    out: list[tuple[int, str, bool]] = []
    listed = False
    for n, line in enumerate(text.splitlines(), 1):
        if m := HEADING.match(line):
            listed = ZH_LIVING.verify_mark in m[2]
        out.append((n, line.rstrip(), listed))
    return out


def subjects_twice(text: str) -> Score:
    """Each top-level line whose subject an earlier top-level line has: one arXiv ID, or subjects at
    least `SAME_SUBJECT` alike."""
    seen: list[tuple[int, str, set[str]]] = []
    twice: list[str] = []
    for n, line, listed in _lines(text):
        if listed or not is_top_line(line):
            continue
        subject, ids = line_subject(line), {m.id.key for m in find_ids(line)}
        first = next(
            ((m, s) for m, s, keys in seen if ids & keys or (subject and s and similarity(subject, s) >= SAME_SUBJECT)),
            None,
        )
        if first is not None:
            twice.append(f"line {n} {subject[:40]} = line {first[0]} {first[1][:40]}")
        seen.append((n, subject, ids))
    return Score("subjects_twice", float(len(twice)), extra=tuple(twice))


def living_disputed(evenings: Sequence[Evening], before: str, after: str) -> Score:
    """Each figure disputed when its line was written, stated on a line the span added, unless that
    line holds it open (the open-question mark on it, or the line in the open-questions list). A line
    is the evening's its source mark names ('（11-18 inference e1prep）'): a dispute that evening's 三
    no longer holds was settled, and its value may be written then; a line with no evening of the span
    is held against every dispute of the span."""
    disputed = {day: disputed_figures(b.to_verify) for day, b in evenings}
    every = set().union(*disputed.values())
    last = evenings[-1][0] if evenings else dt.date.today()
    have = Counter(ln.rstrip() for ln in before.splitlines())  # a line `before` has is not the span's
    stated: list[str] = []
    for n, line, listed in _lines(after):
        if have[line] > 0:
            have[line] -= 1
        elif not listed and ZH_LIVING.verify_mark not in line:
            figures = disputed.get(_written_on(line, last), every)
            stated += [f"line {n} · {f}" for f in stated_figures(line, figures)]
    return Score("living_disputed", float(len(stated)), extra=tuple(stated))


def _written_on(line: str, last: dt.date) -> dt.date | None:
    """The evening a living-document line's source mark names ('（11-18 inference e1prep 补充）', the
    tail the E2 patch writes), read as of the span's last evening."""
    t = TAIL.search(line)
    return read_day(f"{t[1]}-{t[2]}", last) if t else None


def growth(before: str, after: str, evenings: int) -> Score:
    """Bytes (UTF-8) the living document grew by, per evening of the span."""
    added = len(after.encode("utf-8")) - len(before.encode("utf-8"))
    note = f"{added} bytes over {evenings} evening(s): {len(before.encode('utf-8'))} → {len(after.encode('utf-8'))}"
    return Score("growth", added / evenings if evenings else 0.0, note=note)
