"""How close a briefing's E2 patch comes to what an editor wrote after E2.

A case may hold `living-gold.md`: the living document as an editor left it after tonight's E2
update. The lines the editor added (against the workspace's living document, as it was when the
evening was run) are compared with the lines the patch adds: a pair is the same line when the two
name the same arXiv ID, the same subject (the text before the colon), or amend the same anchor
line; greedily, most alike first, each line in at most one pair. A pair is placed when both sit
under the same § section. What the editor added that the patch lacks is `missing`; what the patch
adds that the editor did not is `extra`. Words may differ: an editor rephrases, a line is judged
by what it is about and where it goes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from agent.core.arxiv import find_ids
from agent.core.text import similarity
from agent.plan.workspace import load_workspace
from agent.write.living import BULLET, HEADING, line_subject, read_living, split_section
from agent.write.patch import propose
from eval.cases import load_case
from eval.metrics import Pair, greedy
from schemas.run import RunRecord

LIVING_GOLD = "living-gold.md"
SAME_LINE = 0.5  # subjects this alike name one line
SAME_ANCHOR = 0.9  # two supplement lines under one anchor line are one line


def patch_score(case_dir: Path, run_record: RunRecord) -> dict[str, Any]:
    """The patch of `run_record` against the case's living document, scored against the case's
    `living-gold.md`; an empty dict for a case without one."""
    case = load_case(case_dir)
    gold_path = case.folder / LIVING_GOLD
    if not gold_path.is_file():
        return {}
    ws = load_workspace(case.workspace)
    living, rel = ws.living_path(case.topic), ws.living_rel(case.topic)
    base = read_living(living.read_bytes(), rel)
    gold = read_living(gold_path.read_bytes(), str(gold_path))
    return {"case": case.name, **score_lines(base, gold, propose(run_record, base, rel).new)}


def score_lines(base: str, gold: str, patched: str) -> dict[str, Any]:
    """Editor's added lines (`gold` against `base`) against the patch's (`patched` against `base`)."""
    editor, patch = _added(base, gold), _added(base, patched)
    pairs = _pairs(patch, editor)
    placed = [(p, e) for p, e in pairs if p.section == e.section]
    matched_p, matched_e = {id(p) for p, _ in pairs}, {id(e) for _, e in pairs}
    return {
        "editor_lines": len(editor),
        "patch_lines": len(patch),
        "matched": len(pairs),
        "placed": len(placed),
        "same_heading": sum(p.heading == e.heading for p, e in pairs),
        "recall": _ratio(len(pairs), len(editor)),
        "precision": _ratio(len(pairs), len(patch)),
        "placement": _ratio(len(placed), len(pairs)),
        "missing": [e.text for e in editor if id(e) not in matched_e],
        "extra": [p.text for p in patch if id(p) not in matched_p],
        "misplaced": [
            {"line": p.text, "patch": p.section, "editor": e.section} for p, e in pairs if p.section != e.section
        ],
    }


def _ratio(n: int, d: int) -> float:
    return round(n / d, 3) if d else 1.0


class _Line:
    """An added line with where it sits: its § section, its nearest heading, its anchor line."""

    def __init__(self, text: str, section: str, heading: str, parent: str) -> None:
        self.text, self.section, self.heading, self.parent = text, section, heading, parent
        self.subject = line_subject(text) if not text.startswith("|") else text.split("|")[1].strip()
        self.ids = {m.id.key for m in find_ids(text)}


def _added(base: str, text: str) -> list[_Line]:
    """The content lines of `text` that `base` does not have (as many times as it lacks them);
    blank lines and headings are structure, not lines."""
    have = Counter(ln.rstrip() for ln in base.splitlines())
    out: list[_Line] = []
    section = heading = parent = ""
    for ln in text.splitlines():
        key = ln.rstrip()
        if m := HEADING.match(ln):
            heading, parent = m[2], ""
            section = _section(m[2]) or section
            continue
        if BULLET.match(ln) and not ln[:1].isspace():
            parent = key
        if not key.strip():
            continue
        if have[key] > 0:
            have[key] -= 1
            continue
        out.append(_Line(key, section, heading, parent if ln[:1].isspace() else ""))
    return out


def _section(title: str) -> str:
    """'§1.3 KV Cache' -> '§1.3'; a heading without a number is not a § section."""
    number, _ = split_section(title)
    return "§" + ".".join(map(str, number)) if number else ""


def _alike(a: _Line, b: _Line) -> float:
    if a.ids & b.ids:
        return 1.0
    score = similarity(a.subject, b.subject)
    if a.parent and a.parent == b.parent:
        score = max(score, SAME_ANCHOR)
    return score


def _pairs(patch: list[_Line], editor: list[_Line]) -> list[tuple[_Line, _Line]]:
    """The pairs at least `SAME_LINE` alike, in the order they were taken (most alike first).
    The patch's line takes `Pair.gold`, so ties go by the patch's order first."""
    cands = [
        Pair(i, j, s, ()) for i, p in enumerate(patch) for j, e in enumerate(editor) if (s := _alike(p, e)) >= SAME_LINE
    ]
    taken = sorted(greedy(cands, len(patch), len(editor)).pairs, key=lambda c: (-c.score, c.gold, c.out))
    return [(patch[c.gold], editor[c.out]) for c in taken]
