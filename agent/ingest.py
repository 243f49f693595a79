"""Workspace → SourceDocs: every file placed in time, classified, and judged in or out.

The window is (date-1 22:00, date 22:00] in the workspace timezone, so the evening's own 22:00
queue snapshot belongs to it and every file belongs to exactly one evening. A file's time comes
from its name; a date-only name counts as inside its own date's window.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

from agent.errors import WorkspaceError
from agent.workspace import Workspace
from schemas.documents import DocKind, SourceDoc

_DATED = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})(?:-(?P<hhmm>\d{4}))?(?:-(?P<slug>.+))?\.md$")
_CARD = re.compile(r"^(?P<hhmm>\d{4})-(?P<yymm>\d{4})[-.](?P<num>\d{4,5})\.md$")
_FRONT_DATE = re.compile(r"^date:\s*[\"']?(\d{4}-\d{2}-\d{2})", re.M)
BRIEFING_SUFFIX = "-e1prep"


@dataclass(frozen=True)
class Window:
    start: dt.datetime  # exclusive
    end: dt.datetime  # inclusive
    date: dt.date

    def contains(self, ts: dt.datetime) -> bool:
        return self.start < ts <= self.end

    def __str__(self) -> str:
        return f"{self.start:%Y-%m-%d %H:%M} ~ {self.end:%Y-%m-%d %H:%M}"


def evening_window(ws: Workspace, date: dt.date) -> Window:
    hh, mm = (int(x) for x in ws.config.workspace.window_end.split(":"))
    end = dt.datetime.combine(date, dt.time(hh, mm), tzinfo=ws.tz)
    return Window(start=end - dt.timedelta(days=1), end=end, date=date)


def evening_of(ts: dt.datetime, window: Window) -> dt.date:
    """The evening a time belongs to: the date whose window (date-1 end, date end] holds it."""
    days_after = -((window.end - ts) // dt.timedelta(days=1))  # ceil((ts - end) / 1 day)
    return window.date + dt.timedelta(days=days_after)


def scan(ws: Workspace, topic: str, date: dt.date, *, with_text: bool = True) -> list[SourceDoc]:
    """Every Markdown file of the workspace, judged for `topic` on the evening of `date`."""
    ws.topic(topic)  # a missing topic is an error before anything is read
    window = evening_window(ws, date)
    w = ws.config.workspace
    docs: list[SourceDoc] = []
    for path in sorted(ws.inbox().glob("*/*.md")):
        docs.append(_inbox_doc(ws, path, topic, window))
    for path in sorted((ws.root / w.paper_cards_dir).rglob("*.md")):
        docs.append(_card_doc(ws, path, window))
    for path in sorted((ws.root / w.queue_dir).glob("*.md")):
        docs.append(_dated_doc(ws, path, "queue", window))
    living = ws.living_path(topic)
    if not living.is_file():
        raise WorkspaceError(
            f"the living document {living} is missing",
            hint=f"create it, or fix topics.{topic}.living in predigest.toml",
        )
    docs.append(
        SourceDoc(path=_rel(ws, living), kind="living", topic=topic, read=True, reason=f"living document of {topic}")
    )
    if with_text:
        docs = [_with_text(ws, d) if d.read else d for d in docs]
    return docs


SOURCE_KINDS = ("report", "paper_card", "queue", "adjacent")


def sources(docs: list[SourceDoc]) -> list[SourceDoc]:
    """The documents that get an extraction call: tonight's reports, cards, queue and adjacent briefings."""
    return [d for d in docs if d.read and d.kind in SOURCE_KINDS]


def unreadable(docs: list[SourceDoc]) -> list[SourceDoc]:
    """Tonight's sources that could not be read: the briefing names them rather than lose them."""
    return [d for d in docs if d.in_window and not d.read and d.reason.startswith(UNREADABLE)]


UNREADABLE = "unreadable:"


def _with_text(ws: Workspace, doc: SourceDoc) -> SourceDoc:
    """A source that is not UTF-8 is set aside with the reason, and the evening goes on; a
    baseline or the living document must be readable, or the anchors would be wrong."""
    try:
        return doc.model_copy(update={"text": _read(ws.root / doc.path)})
    except WorkspaceError as e:
        if doc.kind not in SOURCE_KINDS:
            raise
        return doc.model_copy(update={"read": False, "reason": f"{UNREADABLE} {e.message} — {e.hint}"})


def _inbox_doc(ws: Workspace, path: Path, topic: str, window: Window) -> SourceDoc:
    agent = path.parent.name
    m = _DATED.match(path.name)
    slug = (m.group("slug") or "") if m else ""
    if not m or not slug.endswith(BRIEFING_SUFFIX):
        return _dated_doc(ws, path, "report", window, agent=agent)
    btopic = slug.removesuffix(BRIEFING_SUFFIX)
    bdate = dt.date.fromisoformat(m.group("date"))
    base = {
        "path": _rel(ws, path),
        "agent": agent,
        "topic": btopic,
        "date_only": m.group("hhmm") is None,
        "timestamp": _stamp(ws, bdate, m.group("hhmm")),
    }
    if btopic == topic:
        if bdate < window.date:
            return SourceDoc(**base, kind="baseline", read=True, reason=f"earlier {topic} briefing ({bdate}): anchors")
        why = (
            "tonight's own briefing: an output, not an input" if bdate == window.date else "a later evening's briefing"
        )
        return SourceDoc(**base, kind="baseline", reason=why)
    if bdate == window.date:
        return SourceDoc(
            **base,
            kind="adjacent",
            in_window=True,
            read=True,
            reason=f"same-evening {btopic} briefing: adjacent reference",
        )
    return SourceDoc(**base, kind="adjacent", reason=f"{btopic} briefing of another evening ({bdate})")


def _dated_doc(ws: Workspace, path: Path, kind: DocKind, window: Window, agent: str = "") -> SourceDoc:
    m = _DATED.match(path.name)
    if not m:
        return SourceDoc(
            path=_rel(ws, path),
            kind=kind,
            agent=agent,
            reason="name has no YYYY-MM-DD[-HHMM] prefix: cannot place it in an evening",
        )
    date = dt.date.fromisoformat(m.group("date"))
    return _judge(ws, path, kind, window, date, m.group("hhmm"), agent)


def _card_doc(ws: Workspace, path: Path, window: Window) -> SourceDoc:
    m = _CARD.match(path.name)
    date = _folder_date(path.parent.name) or _front_matter_date(path)
    if not m or date is None:
        return SourceDoc(
            path=_rel(ws, path),
            kind="paper_card",
            reason="paper card without HHMM-YYMM-NNNNN name or a date (folder or front matter)",
        )
    return _judge(ws, path, "paper_card", window, date, m.group("hhmm"), "")


def _judge(
    ws: Workspace, path: Path, kind: DocKind, window: Window, date: dt.date, hhmm: str | None, agent: str
) -> SourceDoc:
    ts = _stamp(ws, date, hhmm)
    if hhmm is None:
        inside = date == window.date
        why = (
            "date-only name: counts as inside its date's window"
            if inside
            else f"date-only name of {date}: another evening"
        )
    else:
        inside = window.contains(ts)
        why = (
            "inside the window"
            if inside
            else f"{ts:%m-%d %H:%M} is {'before' if ts <= window.start else 'after'} the window: "
            f"it belongs to the evening of {evening_of(ts, window)}"
        )
    return SourceDoc(
        path=_rel(ws, path),
        kind=kind,
        agent=agent,
        timestamp=ts,
        date_only=hhmm is None,
        in_window=inside,
        read=inside,
        reason=why,
    )


def _stamp(ws: Workspace, date: dt.date, hhmm: str | None) -> dt.datetime:
    t = dt.time(int(hhmm[:2]), int(hhmm[2:])) if hhmm else dt.time(0, 0)
    return dt.datetime.combine(date, t, tzinfo=ws.tz)


def _folder_date(name: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(name)
    except ValueError:
        return None


def _front_matter_date(path: Path) -> dt.date | None:
    m = _FRONT_DATE.search(_read(path)[:2000])
    return dt.date.fromisoformat(m.group(1)) if m else None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise WorkspaceError(
            f"not UTF-8 text ({e.reason} at byte {e.start}): {path.name}",
            hint="re-save it as UTF-8, or move it out of the workspace",
        ) from e


def _rel(ws: Workspace, path: Path) -> str:
    return path.resolve().relative_to(ws.root).as_posix()
