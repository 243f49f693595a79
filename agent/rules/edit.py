"""An editor's pass over each merged subject: each fact once, no disputed figure stated, one
credibility line.

- A key point whose every figure, flag, version and name the group's other points state, and
  most of its words (or of those beyond the title's), is folded into them; poorest first, so of
  two points saying one thing the fuller stays. A point naming in code a package, an API or a
  file that nothing else names stays.
- A later source's point that opens by restating earlier points ('破坏性变更：移除 A 与 B，改用 C'
  after a point on A and one on B) keeps only what it adds ('改用 C'), after the point it
  continues; the points it restates are not folded into it.
- When two documents give different values for one measure of the subject (TTFT 2.1× vs 1.6×,
  CVSS 8.8 vs 7.1), neither value is stated: the points that state one are withheld, and the
  dispute goes to 三 (`agent.rules.verify`), which names both documents and both values.
- The credibility line is the strongest source's level and its first reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from agent.core.text import facts, fold
from agent.rules.claims import CRED_RANK, Candidate, ClaimRef, Finding, Group, Point
from agent.rules.grounding import point_facts
from agent.rules.merge import subject_head
from schemas.briefing import KeyPoint

FOLD_WITH_FACTS = 0.6  # share of a point's wording the others must also cover, when they state all its facts
FOLD_WORDING_ONLY = 0.65  # a point with no figure, flag or name: the share one other point must cover


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
        g = replace(g, title=_title(g, conflicts))  # the points are weighed against the title printed
        points, f = _points(g, conflicts)
        findings += f
        out.append(replace(g, points=tuple(points), reason=_reason(g), disputes=tuple(conflicts)))
    return out, findings


def _points(g: Group, conflicts: Sequence[NumberConflict]) -> tuple[list[Point], list[Finding]]:
    findings: list[Finding] = []
    units: list[Point] = []
    reported = any(c.doc.kind != "queue" for c in g.members)
    for c in g.members:
        if reported and c.doc.kind == "queue":  # a task about the subject; the reports state its facts
            why = "a work-queue task about a subject the reports state"
            findings += [_folded(g, Point(p, c.ref), why) for p in c.claim.key_points]
            continue
        for p in c.claim.key_points:
            kept = _without(p, conflicts)
            if kept is None:
                why = "states a figure the sources dispute (raised in 三)"
                findings.append(Finding("merge", p.text[:40], c.doc.path, "figure withheld", why, ref=c.ref))
            else:
                units.append(Point(kept, c.ref))
    points, findings = _fold(units, g, findings)
    return _trim(points, g, findings)


def _without(p: KeyPoint, conflicts: Sequence[NumberConflict]) -> KeyPoint | None:
    """The point without the clauses and steps that state a disputed value; None when nothing
    of it is left."""
    clauses = _clauses(p.text)
    kept = [c for i, c in enumerate(clauses) if i % 2 == 1 or not any(d.states(c) for d in conflicts)]
    text = "".join(kept).strip("，,；; ") if len(kept) < len(clauses) else p.text
    text = re.sub(r"[，,；;]\s*(?=[，,；;])", "", text)  # a separator left beside a removed clause
    children = [k for child in p.children if (k := _without(child, conflicts)) is not None]
    if not text or (text != p.text and not children and not facts(text) and len(text) < 8):
        return None
    if text == p.text and children == p.children:
        return p
    return p.model_copy(update={"text": text, "children": children})


def _fold(units: list[Point], g: Group, findings: list[Finding]) -> tuple[list[Point], list[Finding]]:
    """Drop each point the others already state, weighing the poorest first."""
    facts = [point_facts(u.point) for u in units]
    grams = [_grams(u.point) for u in units]
    named = _names(g.headline)  # the title names the subject; it states no figure
    title = _grams(KeyPoint(text=g.headline))
    code = [_code_names(u.point) for u in units]
    written = [fold(" ".join(n.text for n in u.point.walk())).lower() for u in units]
    alive = list(range(len(units)))
    holds: set[int] = set()  # points something was folded into: what they absorbed must stay stated
    # a later point that opens by restating earlier ones keeps only what it adds (`_trim`): the
    # points it restates are not folded into it
    sums = {j for j in range(1, len(units)) if _continuation(units[j].point, units[:j]) is not None}

    def richness(i: int) -> tuple[int, int, int]:
        """What a point says beyond the title: a restatement of the title is weighed first."""
        return (len(facts[i] - named), len(grams[i] - title), -i)

    for i in sorted(alive, key=richness):
        # not against a poorer point that says no more than it: of two saying one thing, the fuller stays
        others = [
            j
            for j in alive
            if j != i and not (richness(j) < richness(i) and facts[j] <= facts[i]) and not (j in sums and j > i)
        ]
        if i in holds or not others:
            continue
        known = [named, *(facts[j] for j in others)]
        if not _code_named(code[i], [fold(g.headline).lower(), *(written[j] for j in others)]):
            continue  # it names a package, an API or a file nothing else names: it says something new
        if not _said_by(facts[i], grams[i], known, [grams[j] for j in others], title):
            continue
        alive.remove(i)
        into = max(others, key=lambda j: (facts[i] <= facts[j], len(grams[i] & grams[j]), richness(j)))
        holds.add(into)
        findings.append(_folded(g, units[i], f"stated by {units[into].point.text[:40]!r}", units[into].ref))
    return [units[i] for i in alive], findings


def _folded(g: Group, unit: Point, detail: str, into: ClaimRef | None = None) -> Finding:
    """The finding of a point folded (into the point `into` that states it, if one does)."""
    target = str(into) if into else ""
    return Finding("merge", unit.point.text[:40], unit.ref.doc, "point folded", detail, unit.ref, target)


def _trim(points: list[Point], g: Group, findings: list[Finding]) -> tuple[list[Point], list[Finding]]:
    """Within the points kept, drop a nested step or a later clause of a sentence whose every fact
    another statement also states, in much the same words ('记忆库体积缩小 58%' / '记忆库缩小 58%';
    not '新增 B300 支持' beside '+35% on B300'). A point's first clause carries its subject and stays."""
    told = Counter[str](_names(g.headline))  # the title names; it states no figure
    told.update(f for p in points for n in p.point.walk() for f in facts(n.text))  # told once per text stating it
    out: list[Point] = []
    tails: dict[int, list[Point]] = {}  # what later points add to out[i], in their order
    grams = [_grams(p.point) for p in points]
    for i, p in enumerate(points):
        trimmed = _trim_node(p.point, told, grams[:i] + grams[i + 1 :])
        if trimmed is None or trimmed.model_dump() != p.point.model_dump():
            findings.append(_folded(g, p, "a part stated twice"))
        if trimmed is None:
            continue
        if (cont := _continuation(trimmed, out)) is None:
            out.append(Point(trimmed, p.ref))
            continue
        after, rest_of_it = cont
        told.subtract(facts(_clauses(trimmed.text)[0]))
        detail = "its opening clause stated by the points before it; the rest follows the one it continues"
        findings.append(_folded(g, p, detail, out[after].ref))
        tails.setdefault(after, []).append(Point(rest_of_it, p.ref))
    return [q for i, p in enumerate(out) for q in (p, *tails.get(i, ()))], findings


def _continuation(node: KeyPoint, earlier: Sequence[Point]) -> tuple[int, KeyPoint] | None:
    """For a point that opens by restating earlier points and then adds to them ('破坏性变更：移除
    `--swap-space` 与 `--preemption-mode swap`，改用 `--kv-offload-gb`'): the index of the earlier point
    its opening continues, and the point without that opening. None when the opening says something
    new or nothing new follows. Only earlier points count: of two restating each other, the first stays."""
    clauses = _clauses(node.text)
    head = facts(clauses[0])
    if len(clauses) < 3 or not head or not earlier or _CONDITION.search(clauses[0]):
        return None  # a condition ('若仍传 `--swap-space`，…') is not a restatement: what follows needs it
    stated = [facts(" ".join(n.text for n in e.point.walk())) for e in earlier]
    # a summary restates several points at once: the words of those stating its facts, together
    said_before = set().union(*(_grams(e.point) for e, said in zip(earlier, stated, strict=True) if said & head))
    if not head <= set().union(*stated) or not _covered(clauses[0], [said_before]):
        return None
    tail = "".join(clauses[2:]).strip().rstrip("，,；; ")
    if not facts(tail) - set().union(*stated):
        return None
    after = max(range(len(earlier)), key=lambda j: (len(head & stated[j]), -j))
    return after, node.model_copy(update={"text": tail})


def _trim_node(node: KeyPoint, told: Counter[str], others: Sequence[set[str]]) -> KeyPoint | None:
    """The node without what is said twice (`others`: each other point's bigrams); None for a
    heading ('结果：') whose steps all went."""
    clauses = _clauses(node.text)
    kept = [clauses[0]]
    for i in range(2, len(clauses), 2):  # the split keeps each separator before its clause
        if not _told_twice(clauses[i], told, others):
            kept += [clauses[i - 1], clauses[i]]
    text = "".join(kept)
    if len(kept) < len(clauses):  # a sentence that lost its last clauses still ends as it did
        text = text.rstrip("，,；; ")
        text += "。" if node.text.rstrip().endswith("。") and not text.endswith("。") else ""
    children = []
    for child in node.children:
        if _told_twice(" ".join(x.text for x in child.walk()), told, others):
            continue
        if (kept_child := _trim_node(child, told, others)) is not None:
            children.append(kept_child)
    if node.children and not children and not facts(text):
        return None
    if text == node.text and children == node.children:
        return node
    return node.model_copy(update={"text": text, "children": children})


def _told_twice(text: str, told: Counter[str], others: Sequence[set[str]]) -> bool:
    """Whether every fact of `text` is told twice and its words restate another point: then it
    goes, and its facts count as told once less."""
    said = facts(text)
    if said and all(told[s] >= 2 for s in said) and _covered(text, others):
        told.subtract(said)
        return True
    return False


def _covered(text: str, others: Sequence[set[str]]) -> bool:
    """Most of `text`'s wording is in one of `others` (each a point's bigrams). One point, not all
    together: words scattered over several ('显式写 `--preemption-mode recompute` 的脚本不受影响') say
    what none of them says."""
    grams = _grams(KeyPoint(text=text))
    return bool(grams) and any(len(grams & o) / len(grams) >= FOLD_WITH_FACTS for o in others)


_SEPARATOR = re.compile(r"[，；;]|,(?!\d{3})")
_CONDITION = re.compile(r"^\s*(?:若|如果|假如|假设|当|除非|只有|仅当|一旦|(?:if|when|unless|once)\b)|时\s*$", re.I)


def _clauses(text: str) -> list[str]:
    """[clause, separator, clause, …], split at commas and semicolons outside brackets and code
    spans: '（文本或 token ids，可选）' and '`a, b`' are one clause's parts."""
    out, start, depth, code = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch == "`":
            code = not code
        elif ch in "（(" and not code:
            depth += 1
        elif ch in "）)" and not code:
            depth = max(depth - 1, 0)
        elif not code and not depth and _SEPARATOR.match(text, i):
            out += [text[start:i], ch]
            start = i + 1
    if depth or code:  # an opener never closed: split as if it were plain text
        return re.split(f"({_SEPARATOR.pattern})", text)
    return [*out, text[start:]]


def _names(title: str) -> set[str]:
    """What a title names (versions, flags, IDs), not its figures: a figure in the title alone
    would be a fact the increment's points no longer state."""
    return {f for f in facts(title) if not _FIGURE_FACT.fullmatch(f)}


# A figure, not a dotted version ("0.23.0" names a release; "1.9" and "16,200" measure something).
_FIGURE_FACT = re.compile(r"(?!\d+\.\d+\.\d)[<>≤≥+\-]?\d[\d.,]*(?:%|×|x|倍|ms|s|k|m|b|t|gb|gib|tb|bit)?", re.I)


def _code_names(p: KeyPoint) -> list[str]:
    """The names a point writes as code (`Microsoft.Agents.AI`), folded; a code span with spaces
    is a command or a message, which its facts speak for."""
    return [fold(c).lower() for n in p.walk() for c in _CODE_NAME.findall(n.text)]


def _code_named(names: list[str], elsewhere: list[str]) -> bool:
    """Whether `elsewhere` (the title and other points, folded and lowercased) writes each of
    `names` whole (`cp` is not in 'mcp'); only Latin letters and digits continue a name, since
    folded text has no space before the Chinese beside it."""
    return all(
        any(re.search(rf"(?<![A-Za-z0-9_.-]){re.escape(c)}(?![A-Za-z0-9_-])", e) for e in elsewhere) for c in names
    )


_CODE_NAME = re.compile(r"`([^`\s]+)`")


def _said_by(
    facts: set[str], grams: set[str], other_facts: Iterable[set[str]], other_grams: list[set[str]], title: set[str]
) -> bool:
    """Every fact of a point stated by the others (or the title), and most of its words, or of its
    words beyond the title's ('mcp（Python SDK）影响 1.19.0–1.24.1' under 'MCP Python SDK …'). A
    point with no fact must be in the words of one other point; one saying nothing beyond the
    title repeats it."""
    if not facts <= set().union(*other_facts):
        return False
    rest = grams - title
    if not rest:
        return True

    def share(o: set[str]) -> float:
        return max(len(grams & o) / len(grams), len(rest & o) / len(rest))

    if facts:
        return share(set().union(*other_grams)) >= FOLD_WITH_FACTS
    return any(share(o) >= FOLD_WORDING_ONLY for o in other_grams)


def _grams(p: KeyPoint) -> set[str]:
    text = re.sub(r"\s+", "", fold(" ".join(x.text for x in p.walk()))).rstrip("。.")
    return {text[i : i + 2] for i in range(len(text) - 1)} or ({text} if text else set())


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
