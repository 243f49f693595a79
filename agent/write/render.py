"""Briefing → Markdown in the seed's format. Pure: same model, same bytes.

Every label comes from `agent.core.labels`; the layout (block order, tables, numbering, ⭐ and
circled digits) is fixed here and read back by `agent.plan.parse`.
"""

from __future__ import annotations

from agent.core.labels import ZH, Labels
from agent.plan.parse import split_note
from schemas.briefing import Briefing, Increment, KeyPoint

INDENT = "  "


def render(b: Briefing, labels: Labels = ZH) -> str:
    """The whole briefing as Markdown text, ending with a newline."""
    L = labels
    out: list[str] = [f"{b.topic}{L.title_sep}{L.title_kind}({b.date.isoformat()})", L.summary]
    out += _summary(b, L)
    out.append(L.sources)
    out += _table(
        [c.format(topic=b.topic) for c in L.sources_cols],
        [[r.directory, _paren(r.key_file, r.held), r.relevance] for r in b.sources],
    )
    out.append(L.increments)
    for inc in b.increments:
        out += _increment(inc, L)
    out.append(L.to_verify)
    for v in b.to_verify:
        tags = [f"{v.risk}{L.risk_suffix}" if v.risk else "", f"{L.carried} {v.carried_from}" if v.carried_from else ""]
        inner = "，".join(t for t in tags if t)
        out.append(f"{L.verify_item} {L.circled(v.number)}：{_one(v.title)}" + (f"（{inner}）" if inner else ""))
        out.append(f"- {L.problem}：{_one(v.problem)}")
        out.append(f"- {L.suggestion}：{_one(v.suggestion)}")
    out.append(L.arxiv_table)
    out += _table(
        [c.format(topic=b.topic) for c in L.arxiv_cols],
        [[r.arxiv_id, r.title, r.credibility, r.relation] for r in b.arxiv_rows],
    )
    out.append(L.no_increment)
    if b.no_increment_intro:
        out.append(_one(b.no_increment_intro))
    out += [_no_increment_line(_one(n.source), _one(n.note)) for n in b.no_increment]
    out.append(L.priorities)
    out += _table(list(L.priority_cols), [[p.level, p.content, p.action] for p in b.priorities])
    if b.footer:
        out.append(b.footer.strip())
    return "\n".join(out) + "\n"


def _no_increment_line(source: str, note: str) -> str:
    """A source said without a note stays one ("- inbox/x.md"), not one with an empty note
    ("- inbox/x.md："), unless the reader of 五 would split the bare source at a separator."""
    if note or split_note(source)[1]:
        return f"- {source}：{note}"
    return f"- {source}"


def _summary(b: Briefing, L: Labels) -> list[str]:
    s = b.summary
    inner = [x for x in (s.count_note, f"{s.window} {L.window_suffix}" if s.window else "") if x]
    paren = f"（{'；'.join(inner)}）" if inner else ""
    lines = [f"- {L.count}：{s.increment_count} {L.count_unit}{paren}"]
    if s.headlines:
        lines.append(f"- {L.headlines}：" + " ".join(f"{L.circled(i)} {_one(h)}" for i, h in enumerate(s.headlines, 1)))
    ids = f"（{' / '.join(s.new_arxiv)}）" if s.new_arxiv else ""
    lines.append(
        f"- {L.arxiv_tally}：{L.arxiv_new} {len(s.new_arxiv)} {L.arxiv_new_unit}{ids}"
        f"；{L.arxiv_continued} {s.continued_arxiv} {L.arxiv_new_unit}"
    )
    return lines


def _increment(inc: Increment, L: Labels) -> list[str]:
    refs = L.list_sep.join(f"{s.ref} {s.section}" if s.section else s.ref for s in inc.sources)
    lines = [f"{L.increment} {inc.number}：{_one(inc.title)}（{L.star * inc.stars}）", f"{L.source}：{refs}"]
    if inc.arxiv_line:
        lines.append(f"{L.arxiv}：{_one(inc.arxiv_line)}")
    lines.append(f"{L.key_points}：")
    for kp in inc.key_points:
        lines += _point(kp, depth=0, index=0)
    cred = inc.credibility
    lines.append(f"{L.credibility}：{_paren(cred.level, cred.reason)}")
    lines.append(f"{L.relation}：{_one(inc.relation)}")
    lines.append(f"{L.section}：{_one(inc.suggested_section)}")
    return lines


def _point(kp: KeyPoint, depth: int, index: int) -> list[str]:
    # Top-level points are always bullets: an unindented "1." reads as a step of the bullet
    # above it (that is how the seed writes steps), so only children may be numbered.
    marker = f"{index}." if kp.numbered and depth > 0 else "-"
    lines = [f"{INDENT * depth}{marker} {_one(kp.text)}"]
    for i, child in enumerate(kp.children, 1):
        lines += _point(child, depth + 1, i)
    return lines


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    def row(cells: list[str]) -> str:
        return "| " + " | ".join(_one(c).replace("|", "\\|") for c in cells) + " |"

    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]


def _paren(head: str, inner: str) -> str:
    return f"{_one(head)}（{_one(inner)}）" if inner else _one(head)


def _one(text: str) -> str:
    """One line: the format has no multi-line fields, so newlines fold to spaces."""
    return " ".join(text.split())
