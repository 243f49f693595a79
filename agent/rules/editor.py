"""The editor's desk: the evening as the composing model sees it, and the rules' checks of its answer.

After grounding, the arXiv check and dedupe (`agent.rules.chain.prepare`), the claims worth a line
(3★ and up) are listed under short ids (`C1`, …), with their documents (`D1`, …), the anchors they
relate to and what those already say (`A1`, …), and the figures two documents give differently
(`F1`, …). The model answers an `EveningComposition`; `Desk.check` is its validator, so every
violation goes back to the model in one re-ask, and `Desk.edited` turns a passed answer into the
groups the rest of the chain selects from. Wording, merging and summarising are the model's;
whether a figure, an ID or a claim is really there, and what is disputed, are checked here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from agent.core.arxiv import key_of
from agent.core.text import facts, is_year
from agent.plan.anchors import Anchor
from agent.rules.chain import Prepared
from agent.rules.claims import Candidate, DocResult, Edited, Finding, Group, Point
from agent.rules.edit import NumberConflict, number_conflicts
from schemas.briefing import KeyPoint
from schemas.compose import MAX_POINTS, MAX_TITLE, EveningComposition, Story
from schemas.extraction import VerifyNote

_URL = re.compile(r"https?://[^\s）)\]，,；;。]+")
# A figure, as the repeat check reads one: a number with a unit, a decimal that is no version, or
# a count of thousands. Bare small numbers ('3 个版本', '2 nodes') say too little to call a repeat.
# Flags and CVE IDs are facts too (`_figures`): what the eval's `facts_twice` counts, the check refuses.
_FIGURE = re.compile(
    r"(?!\d+\.\d+\.\d)[<>+\-]?(?:\d+(?:\.\d+)?(?:%|×|x|倍|ms|s|gb|gib|tb|bit|k|m|b)|\d+\.\d+|\d{4,})", re.I
)
_ID = re.compile(r"(?<![A-Za-z0-9])([CDAF]\d+)(?![A-Za-z0-9.])")
_DATED = re.compile(r"[（(][^）)]*\b\d{1,2}-\d{1,2}\b")
# How much of an anchor's text the prompt shows: enough for what it already holds, short enough to stay flat.
ANCHOR_TEXT = 400


@dataclass(frozen=True)
class Desk:
    """One topic's evening under the ids the prompt gives it."""

    prepared: Prepared
    claims: dict[str, Candidate]
    docs: dict[str, DocResult]
    anchors: dict[str, Anchor]
    disputes: dict[str, NumberConflict]

    @classmethod
    def of(cls, p: Prepared) -> Desk:
        """The claims worth a line (the secondary anchors' minimum and up), in the evening's order;
        the disputes are those the floor's merge found (`Group.disputes`), by subject."""
        shown = [c for c in p.kept if c.claim.stars >= p.scope.limits.secondary_min_stars]
        claims = {f"C{i}": c for i, c in enumerate(shown, 1)}
        docs = {f"D{i}": r for i, r in enumerate(p.scope.sources, 1)}
        anchored = list(dict.fromkeys(c.anchor for c in shown if c.anchor is not None))
        anchors = {f"A{i}": a for i, a in enumerate(anchored, 1)}
        found = [d for g in p.floor for d in g.disputes]
        return cls(p, claims, docs, anchors, {f"F{i}": d for i, d in enumerate(found, 1)})

    @cached_property
    def _around(self) -> set[str]:
        """What a relation or credibility line may name besides its claims: the living document and its
        sections (read once per evening, not once per story and re-ask)."""
        scope = self.prepared.scope
        return set().union(*(facts(t) for t in (*scope.registry.sections, scope.living)))

    # --- what the prompt shows ------------------------------------------------------------------

    def values(self) -> dict[str, str]:
        """The prompt's blocks: documents, anchors, claims, disputes, carried open items."""
        reg = self.prepared.scope.registry
        doc_id = {r.doc.path: i for i, r in self.docs.items()}
        anchor_id = {a: i for i, a in self.anchors.items()}
        return {
            "documents": "\n".join(_doc_line(i, r) for i, r in self.docs.items()) or "(none)",
            "anchors": "\n".join(_anchor_line(i, a) for i, a in self.anchors.items()) or "(none)",
            "claims": "\n\n".join(_claim_block(i, c, doc_id, anchor_id) for i, c in self.claims.items())
            or "(no claim tonight)",
            "disputes": "\n".join(self._dispute_line(i, d, doc_id) for i, d in self.disputes.items()) or "(none)",
            "open_items": "\n".join(f"- {o.item.title}" for o in reg.briefed_items) or "(none)",
            "living_lines": "\n".join(self._living_lines()) or "(the living document has no such line yet)",
            "max_points": str(MAX_POINTS),
            "max_title": str(MAX_TITLE),
        }

    def _living_lines(self, n: int = 3) -> list[str]:
        """A few of the living document's own entries, the style a story's living line follows: the
        last `n` top-level bullets that carry a date, as anchors are written."""
        lines = [ln.strip() for ln in self.prepared.scope.living.splitlines() if ln.startswith(("- ", "* "))]
        dated = [ln for ln in lines if _DATED.search(ln) and len(ln) <= 400]
        named = [ln for ln in dated if "**" in ln]  # an entry names its subject; an open item's line does not
        return (named or dated)[-n:]

    def _dispute_line(self, i: str, d: NumberConflict, doc_id: dict[str, str]) -> str:
        sides = "; ".join(f"{doc_id.get(s.doc, s.doc)} says {' / '.join(s.values)}{d.unit}" for s in d.sides)
        return f"{i} · {d.subject} · {d.measure}: {sides}"

    # --- the checks -------------------------------------------------------------------------------

    def check(self, answer: EveningComposition) -> list[str]:
        """Every way the answer breaks a rule, each said so the model can fix it."""
        problems: list[str] = []
        placed: dict[str, str] = {}  # claim id -> where the answer put it
        for n, story in enumerate(answer.stories, 1):
            problems += self._place(story.claims, f"story {n}", placed)
            problems += self._check_story(n, story)
        for lo in answer.left_out:
            problems += self._place([lo.claim], "left_out", placed)
        problems += [
            f"{i} is in no story and not in left_out: put it in one story or in left_out with why"
            for i in self.claims
            if i not in placed
        ]
        lined: set[str] = set()
        for d in answer.doc_lines:
            if d.doc not in self.docs:
                problems.append(f"doc_lines names {d.doc}, which is not a listed document")
            elif d.doc in lined:
                problems.append(f"doc_lines has two lines for {d.doc}; give one")
            lined.add(d.doc)
        problems += self.leaked_ids(answer)
        for q in answer.questions:
            if len(q.title) > MAX_TITLE:
                problems.append(f"question {q.title!r} is {len(q.title)} characters; at most {MAX_TITLE}")
            if not q.about or (stray := [i for i in q.about if i not in self.claims]):
                named = f"names {', '.join(stray)}, not listed claims" if q.about else "names no claim in `about`"
                problems.append(f"question {q.title!r} {named}")
        return problems

    def _place(self, ids: Sequence[str], where: str, placed: dict[str, str]) -> list[str]:
        out = []
        for i in ids:
            if i not in self.claims:
                out.append(f"{where} names {i}, which is not a listed claim")
            elif i in placed:
                out.append(f"{i} is in {placed[i]} and in {where}; a claim goes in one place")
            else:
                placed[i] = where
        return out

    def _check_story(self, n: int, story: Story) -> list[str]:
        where = f"story {n}"
        mine = [i for i in story.claims if i in self.claims]
        if not mine:
            return [f"{where} merges no listed claim"]
        out: list[str] = []
        if len(story.title) > MAX_TITLE:
            out.append(f"{where}'s title is {len(story.title)} characters; at most {MAX_TITLE}")
        if not story.key_points:
            out.append(f"{where} has no key point")
        if len(story.key_points) > MAX_POINTS:
            out.append(f"{where} has {len(story.key_points)} key points; at most {MAX_POINTS}: keep what matters")
        disputes = self._disputes_of(mine)
        known = _stated([self.claims[i] for i in mine])
        held = self._held(mine)
        figures: dict[str, int] = {}
        for k, p in enumerate(story.key_points, 1):
            at = f"{where} point {k}"
            if (said := {f for f in _figures(p.text) if not is_year(f)}) and said <= set(held):
                anchors = ", ".join(sorted({held[f] for f in said}))
                out.append(
                    f"{at} states only what {anchors} already says ({', '.join(sorted(said))}): "
                    "say what is new, or leave its claim out as covered"
                )
            if stray := [r for r in p.refs if r not in mine]:
                out.append(f"{at} cites {', '.join(stray)}, not among the story's claims {', '.join(mine)}")
            cited = [self.claims[r] for r in p.refs if r in mine]
            if not cited:
                out.append(f"{at} cites none of the story's claims")
            out += _unstated(at, p.text, _stated(cited) if cited else known, ", ".join(p.refs))
            out += _disputed(at, p.text, disputes)
            for f in _figures(p.text):
                if f in figures:
                    out.append(f"{at} states {f} again (point {figures[f]} states it): say each fact once")
                figures.setdefault(f, k)
        for what, text in (("title", story.title), ("living_line", story.living_line)):
            out += _unstated(f"{where}'s {what}", text, known, ", ".join(mine))
            out += _disputed(f"{where}'s {what}", text, disputes)
        # a relation names anchors, their dates, the living document and its sections; credibility the readers' reasons
        members = [self.claims[i] for i in mine]
        context = [story.section, *(f"{a.when} {a.label} {a.text}" for c in members if (a := c.anchor) is not None)]
        context += [
            f"{c.claim.relation_note} {c.claim.credibility_reason} {c.claim.suggested_section}" for c in members
        ]
        around = known | self._around | set().union(*(facts(t) for t in context))
        for what, text in (("relation", story.relation), ("credibility_reason", story.credibility_reason)):
            out += _unstated(f"{where}'s {what}", text, around, ", ".join(mine))
            out += _disputed(f"{where}'s {what}", text, disputes)
        return out

    def _held(self, ids: Sequence[str]) -> dict[str, str]:
        """The figures, flags and CVE IDs the anchors of these claims already say, each with its
        anchor's id: a point of a supplement that states nothing else repeats yesterday."""
        anchor_id = {a: i for i, a in self.anchors.items()}
        held: dict[str, str] = {}
        for c in (self.claims[i] for i in ids):
            if c.anchor is not None and c.anchor in anchor_id:
                held |= {f: anchor_id[c.anchor] for f in _figures(c.anchor.text) if f not in held}
        return held

    def leaked_ids(self, answer: EveningComposition) -> list[str]:
        """Our ids written into the briefing's text: a reader knows no `C3` or `D2`."""
        ids = {*self.claims, *self.docs, *self.anchors, *self.disputes}
        texts = [
            *(t for st in answer.stories for t in (st.title, st.relation, st.credibility_reason, st.living_line)),
            *(p.text for st in answer.stories for p in st.key_points),
            *(d.line for d in answer.doc_lines),
            *(t for q in answer.questions for t in (q.title, q.problem, q.suggestion)),
        ]
        found = sorted({m for t in texts for m in _ID.findall(t) if m in ids}, key=lambda i: (i[0], int(i[1:])))
        if not found:
            return []
        return [f"the text names {', '.join(found)}: ids are for refs only; name the document, anchor or subject"]

    def _disputes_of(self, ids: Sequence[str]) -> list[tuple[str, NumberConflict]]:
        """The listed disputes about these claims' subject, and any the story's own merge makes."""
        members = [self.claims[i] for i in ids]
        listed = [(i, d) for i, d in self.disputes.items() if _touches(d, members)]
        said = {(d.measure, d.unit) for _, d in listed}
        own = number_conflicts(Group(tuple(members)), members[0].claim.title)
        return listed + [("", d) for d in own if (d.measure, d.unit) not in said]

    # --- a passed answer, as the chain's groups ----------------------------------------------------

    def edited(self, answer: EveningComposition) -> Edited:
        """The stories as groups (members strongest first, the lead carrying the story's words and
        questions), the claims judged covered, each document's 五 line; a finding for each claim
        left out and each question about no story."""
        story_of = {i: n for n, s in enumerate(answer.stories) for i in s.claims}
        asked: dict[int, list[VerifyNote]] = {}
        findings: list[Finding] = []
        for q in answer.questions:
            note = VerifyNote(**q.model_dump(exclude={"about"}))
            n = next((story_of[i] for i in q.about if i in story_of), None)
            if n is None:
                findings.append(Finding("to-verify", q.title, "", "dropped", "about no story of the evening"))
            else:
                asked.setdefault(n, []).append(note)
        groups = [self._group(s, asked.get(n, [])) for n, s in enumerate(answer.stories)]
        covered: list[Candidate] = []
        for lo in answer.left_out:
            c = self.claims[lo.claim]
            if lo.why == "covered" and c.anchor is not None:
                covered.append(replace(c, relation="covered"))
            findings.append(Finding("compose", c.claim.title, c.doc.path, "left out", _WHY[lo.why], c.ref))
        for n, g in enumerate(groups, 1):
            for c in g.members[1:]:
                why = f"one story with {g.lead.claim.title!r} (story {n})"
                findings.append(Finding("compose", c.claim.title, c.doc.path, "merged", why, c.ref, str(g.lead.ref)))
        lines = {self.docs[d.doc].doc.path: d.line.strip() for d in answer.doc_lines if d.line.strip()}
        return Edited(groups, covered, lines, findings)

    def _group(self, story: Story, notes: list[VerifyNote]) -> Group:
        members = sorted((self.claims[i] for i in story.claims), key=lambda c: (-c.claim.stars, c.order))
        lead = members[0]
        # the readers' doubts stay the rules' to rank and fold; the editor's questions join them
        claim = lead.claim.model_copy(
            update={
                "title": story.title,
                "relation_note": story.relation,
                "suggested_section": story.section or lead.claim.suggested_section,
                "credibility_reason": story.credibility_reason,
                "to_verify": [*lead.claim.to_verify, *notes],
            }
        )
        points = tuple(
            Point(KeyPoint(text=p.text.strip()), self.claims[next(r for r in p.refs if r in self.claims)].ref)
            for p in story.key_points
        )
        disputes = tuple(number_conflicts(Group(tuple(members)), story.title))
        return Group(
            (replace(lead, claim=claim), *members[1:]),
            points=points,
            title=story.title.strip(),
            reason=story.credibility_reason.strip(),
            disputes=disputes,
            living=story.living_line.strip(),
            by_editor=True,
        )


_WHY = {
    "stated": "another story states it",
    "covered": "the anchor already holds it (the editor's reading)",
    "off_topic": "not this topic's (the editor's reading)",
    "weak": "too thin or too doubtful to report (the editor's reading)",
}


def _touches(d: NumberConflict, members: Sequence[Candidate]) -> bool:
    """Whether a listed dispute is about these claims: one of them states one of its values."""
    return any(d.states(n.text) for c in members for k in c.claim.key_points for n in k.walk())


def _stated(cands: Sequence[Candidate]) -> set[str]:
    """Everything the claims state that a point may repeat: facts of their titles, points and
    quotes, their arXiv keys and their links."""
    out: set[str] = set()
    for c in cands:
        texts = [c.claim.title, *(n.text for k in c.claim.key_points for n in k.walk()), *c.claim.evidence]
        out |= set().union(*(facts(t) for t in texts))
        out |= {k for a in c.claim.arxiv if (k := key_of(a.arxiv_id))}
        out |= {u.rstrip("/") for u in c.claim.urls}
        out |= {u.rstrip("/") for t in texts for u in _URL.findall(t)}
    return out


def _unstated(at: str, text: str, known: set[str], cited: str) -> list[str]:
    said = facts(text) | {u.rstrip("/") for u in _URL.findall(text)}
    if extra := sorted(said - known):
        return [f"{at} states {', '.join(extra)}, which the claims it rests on ({cited}) do not: use their figures"]
    return []


def _disputed(at: str, text: str, disputes: Sequence[tuple[str, NumberConflict]]) -> list[str]:
    out = []
    for i, d in disputes:
        if d.states(text):
            named = f" ({i})" if i else ""
            out.append(
                f"{at} states a value of {d.measure}{named}, which the documents give differently: "
                "say it is disputed, without a value"
            )
    return out


def _figures(text: str) -> set[str]:
    return {f for f in facts(text) if _FIGURE.fullmatch(f) or f.startswith("--") or f.upper().startswith("CVE-")}


def _doc_line(i: str, r: DocResult) -> str:
    if r.extraction is None:
        return f"{i} {r.doc.path} ({r.doc.kind}): not read — {r.error}"
    x = r.extraction
    skipped = "; ".join(f"{s.subject} — {s.reason}" for s in x.skipped)
    rest = f" · left by the reader: {skipped}" if skipped else ""
    return f"{i} {r.doc.path} ({r.doc.kind}, relevance {x.relevance}: {x.relevance_reason}) · held: {x.held}{rest}"


def _anchor_line(i: str, a: Anchor) -> str:
    known = " ".join(a.text.split())
    known = known if len(known) <= ANCHOR_TEXT else known[:ANCHOR_TEXT] + " …"
    return f"{i} · {a.label} · first anchored {a.when} ({a.source}) · already says: {known or a.label}"


def _claim_block(i: str, c: Candidate, doc_id: dict[str, str], anchor_id: dict[Anchor, str]) -> str:
    x = c.claim
    rel = c.relation if c.anchor is None else f"{c.relation} of {anchor_id.get(c.anchor, c.anchor.label)}"
    lines = [
        f"{i} · {doc_id.get(c.doc.path, c.doc.path)} {x.section_ref} · {x.stars}★ · credibility {x.credibility} "
        f"({x.credibility_reason}) · {rel} · section {x.suggested_section}",
        f"  title: {x.title}",
        *(f"  {'  ' * depth}- {n.text}" for k in x.key_points for depth, n in _walk(k)),
    ]
    if x.arxiv:
        lines.append("  arXiv: " + "; ".join(f"{a.arxiv_id} {a.title}" for a in x.arxiv))
    if x.urls:
        lines.append("  links: " + " ".join(x.urls))
    if x.relation_note:
        lines.append(f"  relation (reader's note): {x.relation_note}")
    lines += [f"  doubt ({v.risk}): {v.title} — {v.problem}" for v in x.to_verify]
    return "\n".join(lines)


def _walk(p: KeyPoint, depth: int = 0) -> list[tuple[int, KeyPoint]]:
    return [(depth, p), *(x for child in p.children for x in _walk(child, depth + 1))]
