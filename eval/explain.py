"""Why a gold item was missed: the stage of the pipeline that lost it, read from the run itself.

The rules already explain every decision as a finding; this module only connects a gold item
to the claim of the model's answers that was about it, and that claim to its findings
(`agent.runlog.claim_fate`). So a missed increment reads "not extracted" (no answer has a claim
at its file and §, with its arXiv ID, or titled like it), "document failed", "ungrounded",
"covered by anchor X", "merged into Y", "demoted by select", "past the limit", or "became an
increment the matching did not pair". Pure: it reads a finished `CaseRun` and writes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agent.core.arxiv import find_ids
from agent.core.text import fold, similarity
from agent.rules.claims import with_refs
from agent.runlog import claim_fate
from agent.write.trace import finding_record
from eval.metrics import TITLE_THRESHOLD, file_refs, inc_label, increment_arxiv, is_file_ref
from eval.runner import CaseRun
from schemas.briefing import Briefing, Increment
from schemas.extraction import Claim
from schemas.run import FindingRecord
from schemas.runlog import ItemFate

_NEAR = 0.3  # a claim of the credited document this alike is "about" the gold item even at another §


@dataclass(frozen=True)
class _Said:
    """One claim the model returned, with the document it came from and its reference."""

    doc: str
    claim: Claim
    ref: str

    @property
    def arxiv(self) -> set[str]:
        return {m.id.key for a in self.claim.arxiv for m in find_ids(a.arxiv_id)}


def fates(run: CaseRun) -> list[ItemFate]:
    """Every gold increment (matched or missed, with why) and every missed new arXiv ID and
    to-verify item of one row; [] when the row did not get as far as scoring."""
    gold, output, card, outcome = run.gold, run.output, run.card, run.outcome
    if gold is None or output is None or card is None or outcome is None:
        return []
    said = [
        _Said(r.request.doc_path, c, str(ref))
        for r in run.results
        if r.extraction
        for ref, c in with_refs(r.request.doc_path, r.request.chunk, r.extraction.claims)
    ]
    failed = {r.request.doc_path: r.record.error for r in run.results if r.extraction is None}
    asked = {r.request.doc_path for r in run.results}
    findings = [finding_record(f) for f in outcome.findings]
    m = card.matching
    paired = {p.gold: p for p in m.pairs}
    gold_of_out = {p.out: p.gold for p in m.pairs}
    # the output increment each claim became a part of (the layout keeps select's order)
    selected = outcome.composed.outcome.selection.increments
    increment_of = {str(c.ref): i for i, grp in enumerate(selected) for c in grp.members}
    out: list[ItemFate] = []
    for gi, g in enumerate(gold.increments):
        if gi in paired:
            o, why = output.increments[paired[gi].out], ", ".join(paired[gi].reasons)
            out.append(_fate("increment_recall", inc_label(g), "matched", f"↔ {inc_label(o)} ({why})", matched=True))
            continue
        out.append(_missed_increment(g, said, failed, asked, findings, increment_of, gold, gold_of_out))
    scores = run.scores
    for key in scores["new_arxiv_f1"].missed if "new_arxiv_f1" in scores else ():
        out.append(_missed_arxiv(key, said, findings))
    unraised = "no to-verify item of the output is alike (no model doubt, figure conflict or carried item)"
    for title in scores["to_verify_recall"].missed if "to_verify_recall" in scores else ():
        out.append(_fate("to_verify_recall", title, "not raised", unraised))
    return out


def _about(g: Increment, s: _Said) -> tuple[int, float] | None:
    """How strongly a claim is about a gold increment: (strong signals, title similarity), or None."""
    # a gold source without a § still places a claim without one (unlike the matching's file+§)
    sections = {(r.ref.strip().removeprefix("./"), fold(r.section)) for r in g.sources if is_file_ref(r.ref)}
    strong = int((s.doc, fold(s.claim.section_ref)) in sections) + int(bool(s.arxiv & increment_arxiv(g)))
    sim = similarity(g.title, s.claim.title)
    if strong or sim >= TITLE_THRESHOLD or (s.doc in file_refs(g) and sim >= _NEAR):
        return strong, sim
    return None


def _missed_increment(
    g: Increment,
    said: Sequence[_Said],
    failed: dict[str, str],
    asked: set[str],
    findings: Sequence[FindingRecord],
    increment_of: dict[str, int],
    gold: Briefing,
    gold_of_out: dict[int, int],
) -> ItemFate:
    label = inc_label(g)
    scored = [(score, s) for s in said if (score := _about(g, s)) is not None]
    docs = file_refs(g)
    if not scored:
        broken = [d for d in docs if d in failed]
        if broken:
            return _fate("increment_recall", label, "document failed", f"{broken[0]}: {failed[broken[0]]}")
        where = ", ".join(f"{r.ref} {r.section}".strip() for r in g.sources) or "its sources"
        unasked = [d for d in docs if d not in asked]
        why = f" ({', '.join(unasked)} not among the evening's requests)" if unasked else ""
        return _fate(
            "increment_recall",
            label,
            "not extracted",
            f"no claim of the model's answers at {where}, with its arXiv IDs, or titled like it{why}",
        )
    _, best = max(scored, key=lambda x: x[0])
    fate = claim_fate(findings, best.ref)
    claim = f"claim {best.claim.title!r} ({best.doc} {best.claim.section_ref})".replace(" )", ")")
    if fate.stage == "increment":
        oi = increment_of.get(best.ref)
        other = gold_of_out.get(oi) if oi is not None else None
        why = (
            f"paired with gold {inc_label(gold.increments[other])} instead"
            if other is not None
            else "not alike enough to pair (file+§, arXiv or title)"
        )
        return _fate("increment_recall", label, "unpaired increment", f"{claim} became an increment, {why}")
    return _fate("increment_recall", label, _stage(fate.stage), f"{claim}: {fate.detail}")


def _fate(metric: str, item: str, stage: str, detail: str, *, matched: bool = False) -> ItemFate:
    """A gold item of `metric` the output lacks (or, `matched`, has), and the stage that decided it."""
    return ItemFate(metric=metric, item=item, matched=matched, stage=stage, detail=detail)  # type: ignore[arg-type]


def _stage(decided: str) -> str:
    """A claim's fate as a stage of the report; a fate it has no name for reads "not extracted"."""
    return decided if decided in _STAGES else "not extracted"


_STAGES = {"ungrounded", "covered", "merged", "demoted by select", "past the limit", "dropped by select", "adjacent"}


def _missed_arxiv(key: str, said: Sequence[_Said], findings: Sequence[FindingRecord]) -> ItemFate:
    citing = [s for s in said if key in s.arxiv]
    if not citing:
        return _fate("new_arxiv_f1", key, "not extracted", "no claim of the model's answers cites it")
    s = citing[0]
    rejected = [f for f in findings if f.rule == "arxiv" and f.ref == s.ref and key in f.detail]
    if rejected:
        return _fate("new_arxiv_f1", key, "ungrounded", f"claim {s.claim.title!r}: id rejected: {rejected[0].detail}")
    fate = claim_fate(findings, s.ref)
    if fate.stage == "increment":
        return _fate(
            "new_arxiv_f1",
            key,
            "covered",
            f"in the increment {s.claim.title!r}, but anchored before: listed as continued",
        )
    return _fate("new_arxiv_f1", key, _stage(fate.stage), f"claim {s.claim.title!r} ({s.doc}): {fate.detail}")
