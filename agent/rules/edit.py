"""The floor's pass over each merged subject, when no editor's composition stands: the points as
the documents wrote them, whole, with what a rule can tell without reading for meaning.

- A supplement's point whose every flag, number and measured figure its anchor already states is
  yesterday's news, and goes.
- Every member's points, strongest source first, each kept whole: no clause is cut from a sentence
  and no sentence is joined to another. A point another kept point writes word for word (the same
  text, or a part of it) is dropped, and so is one whose every figure, flag, version and name the
  points before it state (a later source's restatement); what two documents say in other words
  beyond that is the editor's call.
- A work-queue task adds no points to a subject the reports state.
- When two documents give different values for one measure of the subject (TTFT 2.1× vs 1.6×,
  CVSS 8.8 vs 7.1), neither value is stated: a point that states one is withheld whole, and the
  dispute goes to 三 (`agent.rules.verify`), which names both documents and both values.
- At most eight points, in that order; the rest are named in the run record.
- The credibility line is the strongest source's level and its first reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agent.core.text import facts, fold, is_year, subject_head
from agent.rules.claims import CRED_RANK, Candidate, ClaimRef, Finding, Group, Point
from agent.rules.grounding import point_facts
from schemas.briefing import KeyPoint
from schemas.compose import MAX_POINTS

# --- measures and disputes --------------------------------------------------------------------------

_UNIT = r"tok/s|tokens/s|%|％|×|倍|[xX](?![A-Za-z])|ms(?![A-Za-z])|s(?![A-Za-z])|秒|GB|GiB|TB|bit(?![A-Za-z])"
_FIGURE = re.compile(rf"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*({_UNIT})")
_SCORE = re.compile(
    r"(CVSS(?:\s*v?[34](?:\.\d)?)?|κ|kappa|F1|AUC)\s*(?:评分|得分|分数|base score|score)?\s*[:：=为是]?\s*"
    r"(\d{1,3}(?:\.\d+)?)(?![\d.%×xX])",
    re.I,
)
_CLAUSE_END = re.compile(r"[，,。；;：:（(、\n]")
_FILLER = re.compile(
    r"(?:降低|提升|提高|下降|上升|增加|减少|缩短|缩小|加速|达到|约为|降|升|增|减|为|达|约|至|到|的|了|是|仅|只"
    r"|\b(?:by|up|down|to|of|is|at|about|around|cuts?|reduces?|reduced|improves?|improved|rises?|drops?)"
    r"|[\s+＋\-−~≈<>≤≥）)])+$",
    re.I,
)
_UNITS_ALIKE = {"x": "×", "X": "×", "倍": "×", "％": "%", "秒": "s"}


@dataclass(frozen=True)
class Measure:
    """A figure a text states, with what it measures: 'TTFT 降低 2.1×' -> ('ttft', '×', '2.1')."""

    label: str
    unit: str
    value: str


def measures(text: str) -> list[Measure]:
    """The figures of a text with a unit or a named score, each with the word it measures."""
    out = []
    for m in _FIGURE.finditer(text):
        if label := _label(text[: m.start()]):
            out.append(Measure(label, _UNITS_ALIKE.get(m[2], m[2]), _value(m[1])))
    for m in _SCORE.finditer(text):
        out.append(Measure(re.sub(r"\s.*", "", m[1]), "", _value(m[2])))
    return out


def _label(before: str) -> str:
    """The word a figure measures: the last word of its clause before it, past verbs and signs."""
    clause = _CLAUSE_END.split(before[-32:])[-1]
    clause = _FILLER.sub("", clause)
    m = re.search(r"[A-Za-z][A-Za-z0-9_-]*$", clause) or re.search(r"[\u4e00-\u9fff]{2,6}$", clause)
    return m[0] if m else ""


def _value(number: str) -> str:
    try:
        return f"{float(number.replace(',', '')):g}"
    except ValueError:
        return number


def _alike(a: str, b: str) -> bool:
    if a.isascii() or b.isascii():
        return a.lower() == b.lower()
    short, long = sorted((a.rstrip("量率值数"), b.rstrip("量率值数")), key=len)  # 吞吐量 is 吞吐
    return short == long or (len(short) >= 3 and short in long)


@dataclass(frozen=True)
class Figures:
    """What one document states for a measure: its document and the values, sorted."""

    doc: str
    values: tuple[str, ...]


@dataclass(frozen=True)
class NumberConflict:
    """Two documents on one subject give one measure values that share nothing: a fact the
    layout words for 三."""

    subject: str  # the group's title
    measure: str  # what is measured, as the first document writes it ('ttft', 'CVSS', '吞吐')
    unit: str
    sides: tuple[Figures, ...]  # every document that states the measure, two or more
    risk: str = "中"  # a disagreement between sources: worth a look, not an alarm

    def states(self, text: str) -> bool:
        """Whether a text states one of the disputed values of this measure."""
        values = {v for s in self.sides for v in s.values}
        return any(m.unit == self.unit and m.value in values and _alike(m.label, self.measure) for m in measures(text))


def number_conflicts(g: Group, title: str) -> list[NumberConflict]:
    """Each measure two of the group's documents give values sharing nothing, once, with every
    document that states it."""
    by_doc: dict[str, list[Measure]] = {}
    for c in g.members:
        texts = [n.text for p in c.claim.key_points for n in p.walk()]
        by_doc.setdefault(c.doc.path, []).extend(m for t in texts for m in measures(t))
    out: list[NumberConflict] = []
    for label, unit in dict.fromkeys((x.label, x.unit) for found in by_doc.values() for x in found):
        if any(_alike(c.measure, label) and c.unit == unit for c in out):
            continue
        sides = [
            Figures(doc, tuple(sorted(values)))
            for doc, found in by_doc.items()
            # a document with no figure of this measure gives no side
            if (values := {x.value for x in found if x.unit == unit and _alike(x.label, label)})
        ]
        if any(set(a.values).isdisjoint(b.values) for i, a in enumerate(sides) for b in sides[i + 1 :]):
            out.append(NumberConflict(title, label, unit, tuple(sides)))
    return out


# --- the pass -----------------------------------------------------------------------------------------


def edit(groups: Sequence[Group]) -> tuple[list[Group], list[Finding]]:
    """Every group edited: its points, its title, its credibility line, its disputes."""
    out: list[Group] = []
    findings: list[Finding] = []
    for g in groups:
        conflicts = number_conflicts(g, g.lead.claim.title)
        points, f = _points(g, conflicts)
        findings += f
        out.append(
            replace(g, title=_title(g, conflicts), points=tuple(points), reason=_reason(g), disputes=tuple(conflicts))
        )
    return out, findings


def _points(g: Group, conflicts: Sequence[NumberConflict]) -> tuple[list[Point], list[Finding]]:
    findings: list[Finding] = []
    kept: list[Point] = []
    reported = any(c.doc.kind != "queue" for c in g.members)
    # what the anchors of a supplement already say: a point stating nothing more is yesterday's news
    held = [c.anchor.text for c in g.members if c.relation == "supplement" and c.anchor]
    for c in g.members:
        if reported and c.doc.kind == "queue":  # a task about the subject; the reports state its facts
            why = "a work-queue task about a subject the reports state"
            findings += [_folded(Point(p, c.ref), why) for p in c.claim.key_points]
            continue
        for p in c.claim.key_points:
            unit = Point(p, c.ref)
            if any(d.states(n.text) for n in p.walk() for d in conflicts):
                why = "states a figure the sources dispute (raised in 三)"
                findings.append(Finding("merge", p.text[:40], c.doc.path, "figure withheld", why, ref=c.ref))
            elif held and _says_only(p, held):
                findings.append(_folded(unit, "its anchor already says every figure and flag of it"))
            elif into := next((k for k in kept if _plain(p) in _plain(k.point)), None):
                findings.append(_folded(unit, f"written word for word in {into.point.text[:40]!r}", into.ref))
            elif written := [k for k in kept if _plain(k.point) in _plain(p)]:  # it writes earlier points whole
                at = kept.index(written[0])
                for k in written:
                    findings.append(_folded(k, f"written word for word in {p.text[:40]!r}", c.ref))
                kept = [*kept[:at], unit, *(k for k in kept[at:] if k not in written)]
            elif _restates(p, kept):
                findings.append(_folded(unit, "every figure, flag, version and name of it a point before states"))
            else:
                kept.append(unit)
    for unit in kept[MAX_POINTS:]:
        why = f"beyond {MAX_POINTS} points (the floor keeps the strongest sources' first)"
        findings.append(Finding("merge", unit.point.text[:40], unit.ref.doc, "left out", why, ref=unit.ref))
    return kept[:MAX_POINTS], findings


def _restates(p: KeyPoint, kept: Sequence[Point]) -> bool:
    """Whether the kept points state every fact of `p` (its names too), each figure of the same
    measure ('TTFT 降低 40%' is not restated by '命中率 40%'). A point with no measured figure and no
    flag ('部分层跳过 FP8 量化' after a point naming FP8) is the editor's to weigh."""
    texts = [n.text for k in kept for n in k.point.walk()]
    return point_facts(p) <= {f for t in texts for f in facts(t)} and _says_only(p, texts)


def _says_only(p: KeyPoint, others: Sequence[str]) -> bool:
    """Whether the texts `others` state every flag, number and measured figure of `p`, and it states
    a flag or a measured figure: a year or a name alone ('2026 年', 'FP8') is no figure of the news."""
    own = [n.text for n in p.walk()]
    said, told = {f for t in own for f in facts(t)}, {f for t in others for f in facts(t)}
    mine = [m for t in own for m in measures(t)]
    if not mine and not any(f.startswith("--") for f in said):
        return False
    # every flag and number it names, a year aside ('关掉 --enable-prefix-caching 时返回 400' adds the 400)
    named = {f for f in said if f.startswith("--") or (any(ch.isdigit() for ch in f) and not is_year(f))}
    if not named <= told:
        return False
    known = [m for t in others for m in measures(t)]
    return all(any(m.unit == k.unit and m.value == k.value and _alike(m.label, k.label) for k in known) for m in mine)


def _plain(p: KeyPoint) -> str:
    """A point's words as a repeat is recognised: folded, without spaces or a closing full stop."""
    return re.sub(r"\s+", "", fold(" ".join(n.text for n in p.walk()))).lower().rstrip("。.")


def _folded(unit: Point, detail: str, into: ClaimRef | None = None) -> Finding:
    """The finding of a point dropped (for the point `into` that writes it, if one does)."""
    target = str(into) if into else ""
    return Finding("merge", unit.point.text[:40], unit.ref.doc, "point folded", detail, unit.ref, target)


def _title(g: Group, conflicts: Sequence[NumberConflict]) -> str:
    """The lead's title, unless it states a disputed figure: then another member's that does not,
    or the lead's subject alone."""
    titles = [c.claim.title for c in g.members]
    clean = [t for t in titles if not any(c.states(t) for c in conflicts)]
    return clean[0] if clean else subject_head(titles[0])


def _reason(g: Group) -> str:
    """The strongest source's first reason: its level is the group's, its words the line's."""
    best: Candidate = max(g.members, key=lambda c: (CRED_RANK.get(c.claim.credibility, 0), c.claim.stars, -c.order))
    first = re.split(r"[。；;]", best.claim.credibility_reason.strip(), maxsplit=1)[0].strip()
    return first or best.claim.credibility_reason.strip()
