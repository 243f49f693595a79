"""The briefing as one static page, built from the run's JSON alone.

Each increment, key point and source opens its document in a side panel at the quote it rests on,
highlighted at its offsets and labelled with how it aligned; doubts sit where they stand (to-verify
items linked both ways, disputed figures marked, a supplement's new facts marked), and what the
rules removed is listed at the end with its quotes. The page embeds each document once, loads
nothing (no fonts, scripts or images from anywhere) and works without its script as a long page.

Everything here reads a `RunRecord`: `predigest view` rebuilds the page of any past run.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from agent.core.errors import PredigestError
from agent.core.labels import ZH
from agent.plan.outputs import write_set
from agent.write.templating import render
from agent.write.trace import load_record
from schemas.briefing import KeyPoint
from schemas.run import RunRecord, Span, TextMark

# arXiv IDs with or without the prefix; links go to the abstract page.
_ARXIV = re.compile(r"(?<![\w./])(?:arXiv[: ]?)?(\d{4}\.\d{4,5}(?:v\d+)?)(?![\w.]*\d)", re.I)
# A URL is linked when it has a scheme or a path; bare host names ("vllm.ai blog") are left as text.
_URL = re.compile(r"(?:https?://)?(?<![\w.@/-])(?:[a-z0-9-]+\.)+[a-z]{2,}(?::\d+)?/[^\s）)，,；;|<>\"']*", re.I)


@dataclass(frozen=True)
class Seg:
    """A stretch of text as the page shows it: plain, a link out, or a mark."""

    text: str
    href: str = ""
    cls: str = ""
    spans: str = ""
    title: str = ""


@dataclass(frozen=True)
class Trace:
    """A link that opens a document in the side panel with some of its spans highlighted."""

    doc: str  # element id of the document
    path: str
    spans: str  # space-separated span ids
    kinds: str  # how the quotes aligned, e.g. "exact ×3 · fuzzy 0.93"
    missing: int  # quotes that were not found


@dataclass(frozen=True)
class DocView:
    id: str
    path: str
    kind: str
    segs: list[Seg]


def view(json_path: Path, out: Path | None = None) -> Path:
    """Rebuild the page of a past run from its JSON; written beside it unless `out` is given, like
    the briefing (atomically, with the user's umask), only ever over another page."""
    record = load_record(json_path)
    path = Path(out or Path(json_path).with_suffix(".html"))
    if path.suffix.lower() not in (".html", ".htm") or path.is_dir():
        raise PredigestError(f"{path} is not an .html file name", hint="pass --out PAGE.html")
    write_set({path: render_page(record)}, force=True, guarded=path)
    return path


def render_page(record: RunRecord) -> str:
    spans = {s.id: s for s in record.spans}
    doc_ids = {d.path: f"doc-{i}" for i, d in enumerate(record.documents)}

    def trace(path: str, ids: list[str] | None = None) -> Trace | None:
        """A link to `path` at `ids` (or the document's top), None if the document is not embedded."""
        if path not in doc_ids:
            return None
        chosen = [spans[i] for i in ids or [] if i in spans]
        found = [s for s in chosen if s.kind != "none"]
        return Trace(doc_ids[path], path, " ".join(s.id for s in found), _kinds(found), len(chosen) - len(found))

    incs = {t.number: t for t in record.trace.increments}
    points = {n: {p.path: p for p in t.points} for n, t in incs.items()}
    return render(
        "briefing.html.j2",
        b=record.briefing,
        L=ZH,
        rec=record,
        docs=[
            DocView(doc_ids[d.path], d.path, d.kind, _doc_segs(d.text, [s for s in record.spans if s.doc == d.path]))
            for d in record.documents
        ],
        trace=trace,
        text=_inline,
        point_text=lambda p, pt: _inline(p.text, pt.marks if pt else []),
        incs=incs,
        points=points,
        verify={v.number: v for v in record.trace.verify},
        source_links={s.row: s.docs for s in record.trace.sources},
        removed=[(record.findings[r.finding], r.spans) for r in record.trace.removed],
        spans=spans,
        stars=lambda n: ZH.star * n,
        circled=ZH.circled,
        walk=_walk,
        claim_of=lambda it, path: next((c for c in it.claims if c.doc == path), None) if it else None,
        claim_doc=lambda it: it.claims[0].doc,
        source_href=_source_href,
    )


def _walk(points: list[KeyPoint], prefix: str = "") -> list[tuple[str, KeyPoint]]:
    """Top-level points with their positions; the template recurses with the prefix."""
    return [(f"{prefix}{i}", p) for i, p in enumerate(points)]


def _kinds(spans: list[Span]) -> str:
    """How a link's quotes aligned: 'exact ×3 · fuzzy 0.93'."""
    counts = Counter(s.kind for s in spans if s.role == "quote")
    parts = [f"{k} ×{counts[k]}" if counts[k] > 1 else k for k in ("exact", "folded") if counts[k]]
    parts += [f"fuzzy {s.score:.2f}" for s in spans if s.role == "quote" and s.kind == "fuzzy"]
    return " · ".join(parts)


def _doc_segs(text: str, spans: list[Span]) -> list[Seg]:
    """The document cut at every span boundary; each piece covered by spans becomes one mark
    carrying all their ids, so overlapping quotes highlight independently."""
    found = [s for s in spans if 0 <= s.start < s.end <= len(text)]
    cuts = sorted({0, len(text), *(s.start for s in found), *(s.end for s in found)})
    segs = []
    for a, z in itertools.pairwise(cuts):
        over = [s for s in found if s.start <= a and z <= s.end]
        if not over:
            segs.append(Seg(text[a:z]))
            continue
        cls = {("q k-" + s.kind) if s.role == "quote" else s.role for s in over}
        segs.append(Seg(text[a:z], cls=" ".join(sorted(cls)), spans=" ".join(s.id for s in over)))
    return segs


def _inline(text: str, marks: list[TextMark] | None = None) -> list[Seg]:
    """Text with its marks (a supplement's facts, disputed figures) and its arXiv IDs and URLs linked."""
    out: list[Seg] = []
    pos = 0
    for m in marks or []:
        out += _links(text[pos : m.start])
        disputed = f"disputed: see {ZH.verify_item} {ZH.circled(m.verify or 0)}"
        title = "adds to the anchor" if m.role == "fact" else disputed
        href = f"#verify-{m.verify}" if m.verify else ""
        out.append(Seg(text[m.start : m.end], href=href, cls=m.role, title=title))
        pos = m.end
    return out + _links(text[pos:])


def _links(text: str) -> list[Seg]:
    out: list[Seg] = []
    pos = 0
    hits = sorted([*_ARXIV.finditer(text), *_URL.finditer(text)], key=lambda m: m.start())
    for m in hits:
        if m.start() < pos:
            continue
        if pos < m.start():
            out.append(Seg(text[pos : m.start()]))
        out.append(Seg(m.group(), href=_href(m)))
        pos = m.end()
    if pos < len(text) or not out:
        out.append(Seg(text[pos:]))
    return out


def _href(m: re.Match[str]) -> str:
    if m.re is _ARXIV:
        return f"https://arxiv.org/abs/{m[1]}"
    url = m.group()
    return url if re.match(r"https?://", url, re.I) else f"https://{url}"


def _source_href(ref: str) -> str:
    """Where a credited source that is not a workspace document links: arXiv abs page or the URL."""
    if m := _ARXIV.search(ref):
        return f"https://arxiv.org/abs/{m[1]}"
    if m := _URL.fullmatch(ref.strip()):
        return _href(m)
    return ""
