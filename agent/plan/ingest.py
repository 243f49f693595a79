"""Workspace → SourceDocs: every file placed in time, classified, and judged in or out.

The window is (date-1 22:00, date 22:00] in the workspace timezone, so the evening's own 22:00
queue snapshot belongs to it and every file belongs to exactly one evening. A file's time comes
from its name; a date-only name counts as inside its own date's window.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from agent.core.errors import WorkspaceError, shown
from agent.plan.workspace import Workspace
from schemas.documents import DocKind, SourceDoc

_DATED = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})(?:-(?P<hhmm>\d{4}))?(?:-(?P<slug>.+))?\.md$")
_CARD = re.compile(r"^(?P<hhmm>\d{4})-(?P<yymm>\d{4})[-.](?P<num>\d{4,5})\.md$")
_FRONT_DATE = re.compile(r"^date:\s*[\"']?(\d{4}-\d{2}-\d{2})", re.M)
# A briefing is `DATE[-HHMM]-TOPIC-e1prep.md`, the topic never empty: read as `_DATED` would,
# the briefing of a topic named "2026" was a report written at 20:26 (and lost as a baseline).
_BRIEFING = re.compile(r"^(?P<date>\d{4}-\d{2}-\d{2})(?:-(?P<hhmm>\d{4}))?-(?P<topic>.+)-e1prep\.md$")
# what a run writes beside its briefing (the run record, its calls, the page): outputs, never inputs
_RUN_OUTPUT = re.compile(r"^\d{4}-\d{2}-\d{2}(?:-\d{4})?-.+-e1prep\.(?:json|calls\.jsonl|html)$")
RUN_OUTPUT = "a run's output (the record beside a briefing), not an input"
# Bytes one document may have to be read at all. A model reads at most [llm] max_parts × chunk_tokens
# of a document (12 × 6000 tokens, about 250 KB of text) and the rest is reported unread; a file
# several times that is a dump (a log, an export), not a report, and reading it whole would cost
# the offline extractor minutes for an evening's one file.
MAX_DOC_BYTES = 2_000_000


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


def scan(ws: Workspace, topic: str, date: dt.date, *, own_tonight: bool = True) -> list[SourceDoc]:
    """Every Markdown file of the workspace, judged for `topic` on the evening of `date`.

    `own_tonight=False` leaves out the briefings our own runs wrote that evening for other topics
    (read as adjacent otherwise): an eval case is the evening as committed, and a demo run into
    the workspace's inbox must not change what another case asks."""
    ws.topic(topic)  # a missing topic is an error before anything is read
    window = evening_window(ws, date)
    w = ws.config.workspace
    docs: list[SourceDoc] = []
    _check_inbox(ws)
    homes = _real_homes(ws)
    seen: dict[Path, str] = {}  # the files taken so far, by their real path
    unlistable: dict[Path, str] = {}
    for path in _files(ws.inbox(), depth=2, unlistable=unlistable):
        if path in unlistable:
            docs.append(_unlistable_doc(ws, path, "report", unlistable[path]))
            continue
        if is_run_output(path.name):
            docs.append(_run_output_doc(ws, path, topic))
            continue
        doc = _checked(ws, path, homes, seen, "report", window) or _inbox_doc(ws, path, topic, window)
        docs.append(doc if own_tonight or not _own_tonight(ws, doc) else _left_out(doc))
    for path in _files(ws.root / w.paper_cards_dir, depth=None, unlistable=unlistable):
        if path in unlistable:
            docs.append(_unlistable_doc(ws, path, "paper_card", unlistable[path]))
            continue
        docs.append(_checked(ws, path, homes, seen, "paper_card", window) or _card_doc(ws, path, window))
    for path in _files(ws.root / w.queue_dir, depth=1):
        docs.append(_checked(ws, path, homes, seen, "queue", window) or _dated_doc(ws, path, "queue", window))
    docs.append(_living_doc(ws, topic))
    return [_with_text(ws, d) if d.read else d for d in docs]


def _living_doc(ws: Workspace, topic: str) -> SourceDoc:
    """The topic's living document, which every evening needs: its anchors and its sections."""
    living = ws.living_path(topic)
    if not living.is_file():
        raise WorkspaceError(
            f"the living document {shown(living)} (set by {ws.set_by(f'topics.{topic}.living')}) is missing",
            hint=f"create it, or fix topics.{topic}.living in predigest.toml",
        )
    why = f"living document of {topic}"
    return SourceDoc(path=ws.living_rel(topic), kind="living", topic=topic, read=True, reason=why)


SOURCE_KINDS = ("report", "paper_card", "queue", "adjacent")


def sources(docs: list[SourceDoc]) -> list[SourceDoc]:
    """The documents that get an extraction call: tonight's reports, cards, queue and adjacent briefings."""
    return [d for d in docs if d.read and d.kind in SOURCE_KINDS]


def unreadable(docs: list[SourceDoc]) -> list[SourceDoc]:
    """Tonight's sources that could not be read: the briefing names them rather than lose them."""
    return [d for d in docs if d.in_window and not d.read and d.reason.startswith(UNREADABLE)]


UNREADABLE = "unreadable:"


def _with_text(ws: Workspace, doc: SourceDoc) -> SourceDoc:
    """A source that cannot be read (not UTF-8, no permission) is set aside with the reason, and
    the evening goes on; an empty one costs no call. A baseline or the living document must be
    readable, or the anchors would be wrong."""
    try:
        text = _read(ws.root / doc.path)
    except WorkspaceError as e:
        if doc.kind not in SOURCE_KINDS:
            raise
        return doc.model_copy(update={"read": False, "reason": f"{UNREADABLE} {e.message} — {e.hint}"})
    if not text.strip() and doc.kind in SOURCE_KINDS:
        return doc.model_copy(update={"read": False, "reason": f"{UNREADABLE} empty file (no call made)"})
    return doc.model_copy(update={"text": text})


# --- every file under the inbox is read or listed with its reason -----------------------------------


def _check_inbox(ws: Workspace) -> None:
    """An inbox that is missing or cannot be listed is an error: read as empty, the evening would
    be "quiet" and the items carried from the last briefing would age out for nothing."""
    inbox = ws.inbox()
    hint = "fix [workspace] inbox_dir in predigest.toml, or the folder's permissions"
    if not inbox.is_dir():
        what = "is not a folder" if inbox.exists() else "does not exist"
        setting = ws.set_by("workspace.inbox_dir")
        raise WorkspaceError(f"the inbox folder {shown(inbox)} (set by {setting}) {what}", hint=hint)
    try:
        with os.scandir(inbox) as entries:
            next(entries, None)
    except OSError as e:
        raise WorkspaceError(f"the inbox folder {inbox} cannot be read: {e.strerror or e}", hint=hint) from e


def _unlistable_doc(ws: Workspace, path: Path, kind: DocKind, why: str) -> SourceDoc:
    """A folder of the inbox that cannot be listed may hold tonight's reports: it is named in the
    briefing (五) and makes the evening partial, rather than its reports going unmentioned."""
    return SourceDoc(
        path=_rel(ws, path),
        kind=kind,
        agent=_shown(path.name) if kind == "report" else "",
        in_window=True,
        reason=f"{UNLISTABLE} {why} — what it holds was not read",
    )


UNLISTABLE = "unreadable: a folder that cannot be listed:"


def _files(folder: Path, depth: int | None, unlistable: dict[Path, str] | None = None) -> list[Path]:
    """Every entry `depth` levels below `folder` (any depth when None), files or not, without
    following symlinked folders below it (a loop must not hang the scan). A folder below `folder`
    that cannot be listed is returned as an entry, and why in `unlistable`."""
    if not folder.is_dir():
        return []
    found: list[Path] = []
    level = [folder]
    n = 0
    while level and (depth is None or n < depth):
        n += 1
        nxt: list[Path] = []
        for d in level:
            try:
                entries = sorted(d.iterdir())
            except OSError as e:
                if d != folder and unlistable is not None:
                    unlistable[d] = e.strerror or str(e)
                    found.append(d)
                continue
            for e in entries:
                if e.name.startswith("."):
                    continue
                last = depth is not None and n == depth
                if e.is_dir() and not e.is_symlink() and not e.name.endswith(".md") and not last:
                    nxt.append(e)
                else:
                    found.append(e)
        level = nxt
    return found


def _real_homes(ws: Workspace) -> list[Path]:
    """Where a file may really live: the workspace, and each of its folders wherever a symlink puts it."""
    w = ws.config.workspace
    dirs = [ws.root, ws.inbox(), ws.root / w.paper_cards_dir, ws.root / w.queue_dir, ws.root / w.living_dir]
    return [d.resolve() for d in dirs if d.exists()]


def _checked(
    ws: Workspace, path: Path, homes: list[Path], seen: dict[Path, str], kind: DocKind, window: Window
) -> SourceDoc | None:
    """A `SourceDoc` that says why this entry is not read, or None when it is a plain Markdown file."""
    why = _problem(path, homes, seen, _rel(ws, path))
    if why is None:
        return None
    # placed in time by its name where it has one, so that one inside the window is named in the briefing
    stand_in = path.with_name(Path(path.name).stem + ".md") if path.suffix != ".md" else path
    if kind == "paper_card":
        m = _CARD.match(stand_in.name)
        date = _date(path.parent.name)
        hhmm = m.group("hhmm") if m else None
        placed = _judge(ws, path, kind, window, date, hhmm, "") if hhmm and date and _clock(hhmm) else None
    else:
        placed = _dated_doc(ws, stand_in, kind, window, agent=path.parent.name if kind == "report" else "")
    in_window = bool(placed and placed.in_window)
    return SourceDoc(
        path=_rel(ws, path),
        kind=kind,
        agent=_shown(path.parent.name) if kind == "report" else "",
        timestamp=placed.timestamp if placed else None,
        in_window=in_window,
        reason=why,
    )


def _problem(path: Path, homes: list[Path], seen: dict[Path, str], rel: str) -> str | None:
    if _shown(str(path)) != str(path):  # its shown name is not its name: it could not be opened by it
        return f"{UNREADABLE} its name is not UTF-8 (shown with \ufffd) — rename it and run again"
    link = path.is_symlink()
    if link:
        try:
            target = path.resolve(strict=True)
        except FileNotFoundError:
            return f"{UNREADABLE} dangling symlink (not followed)"
        except (RuntimeError, OSError):
            return f"{UNREADABLE} symlink loop (not followed)"
        if not any(target.is_relative_to(h) for h in homes):
            return f"{UNREADABLE} symlink out of the workspace (not followed)"
    if path.is_dir():
        return f"{UNREADABLE} a folder, not a file"
    if path.suffix.lower() != ".md":
        return f"{UNREADABLE} not a Markdown file ({path.suffix or 'no suffix'})"
    if (size := _size(path)) > MAX_DOC_BYTES:
        return f"{UNREADABLE} too large to read ({_mb(size)}, over the limit of {_mb(MAX_DOC_BYTES)}; no call made)"
    real = path.resolve()
    if real in seen:
        return f"duplicate: the same file as {seen[real]} (read once)"
    seen[real] = rel
    return None


def _size(path: Path) -> int:
    """0 for a file that cannot be looked at: reading it says why, in its own words."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mb(size: int) -> str:
    return f"{size / 1_000_000:.1f} MB"


def is_run_output(name: str) -> bool:
    """A briefing's `.json`, `.calls.jsonl` or `.html`: what a run wrote, never a report to read."""
    return bool(_RUN_OUTPUT.match(name))


def _run_output_doc(ws: Workspace, path: Path, topic: str) -> SourceDoc:
    """Listed by `predigest inbox` so nothing there goes unexplained; not unreadable, so no
    briefing names it in 一 or 五, and not an input, so a re-run may replace it."""
    stem = next(_shown(path.name).removesuffix(s) for s in (".calls.jsonl", ".json", ".html") if path.name.endswith(s))
    m = _BRIEFING.match(stem + ".md")
    btopic = m.group("topic") if m else ""
    return SourceDoc(
        path=_rel(ws, path),
        kind="baseline" if btopic == topic else "adjacent",
        agent=_shown(path.parent.name),
        topic=btopic,
        reason=RUN_OUTPUT,
    )


def _own_tonight(ws: Workspace, doc: SourceDoc) -> bool:
    return doc.kind == "adjacent" and doc.read and doc.agent == ws.config.workspace.agent


def _left_out(doc: SourceDoc) -> SourceDoc:
    why = f"same-evening {doc.topic} briefing of our own runs: not part of the committed evening"
    return doc.model_copy(update={"read": False, "in_window": False, "reason": why})


def _inbox_doc(ws: Workspace, path: Path, topic: str, window: Window) -> SourceDoc:
    agent = path.parent.name
    m = _BRIEFING.match(path.name)
    if not m:
        return _dated_doc(ws, path, "report", window, agent=agent)
    btopic = m.group("topic")
    bdate = _date(m.group("date"))
    if bdate is None or not _clock(m.group("hhmm")):
        return _unplaced(ws, path, "baseline" if btopic == topic else "adjacent", agent, _impossible(m))
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
        return _unplaced(ws, path, kind, agent, "the name has no YYYY-MM-DD[-HHMM] prefix")
    date = _date(m.group("date"))
    if date is None or not _clock(m.group("hhmm")):
        return _unplaced(ws, path, kind, agent, _impossible(m))
    return _judge(ws, path, kind, window, date, m.group("hhmm"), agent)


UNPLACED = "not placed in an evening:"


def _unplaced(ws: Workspace, path: Path, kind: DocKind, agent: str, why: str) -> SourceDoc:
    return SourceDoc(path=_rel(ws, path), kind=kind, agent=agent, reason=f"{UNPLACED} {why}")


def _date(text: str) -> dt.date | None:
    """The date a name or front matter gives, or None when there is no such day (2026-02-30, 0000-00-00)."""
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def _clock(hhmm: str | None) -> bool:
    """Whether an HHMM is a time of day (2400, 2460 and 9999 are not); no time at all is fine."""
    return hhmm is None or (int(hhmm[:2]) < 24 and int(hhmm[2:]) < 60)


def _impossible(m: re.Match[str]) -> str:
    if _date(m.group("date")) is None:
        return f"the name's date {m.group('date')} is not a day of the calendar"
    return _no_such_time(m.group("hhmm"))


def _no_such_time(hhmm: str) -> str:
    return f"the name's time {hhmm[:2]}:{hhmm[2:]} is not a time of day"


def _card_doc(ws: Workspace, path: Path, window: Window) -> SourceDoc:
    m = _CARD.match(path.name)
    folder = _date(path.parent.name)
    front = "" if folder else _front_matter_date(path)
    date = folder or _date(front)
    if m and not _clock(m.group("hhmm")):
        return _unplaced(ws, path, "paper_card", "", _no_such_time(m.group("hhmm")))
    if m and front and date is None:
        return _unplaced(ws, path, "paper_card", "", f"the front matter's date {front} is not a day of the calendar")
    if not m or date is None:
        why = "a paper card without an HHMM-YYMM-NNNNN name or a date (folder or front matter)"
        return _unplaced(ws, path, "paper_card", "", why)
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
            f"it belongs to the evening of {_evening_named(ts, window)}"
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


def _evening_named(ts: dt.datetime, window: Window) -> str:
    try:
        return evening_of(ts, window).isoformat()
    except OverflowError:  # 9999-12-31 after the window's end: the evening after the calendar's last day
        return "a day after 9999-12-31"


def _stamp(ws: Workspace, date: dt.date, hhmm: str | None) -> dt.datetime:
    t = dt.time(int(hhmm[:2]), int(hhmm[2:])) if hhmm else dt.time(0, 0)
    return dt.datetime.combine(date, t, tzinfo=ws.tz)


def _front_matter_date(path: Path) -> str:
    """The `date:` of a card's front matter as written ("" when there is none)."""
    try:
        head = _read(path)[:2000]
    except WorkspaceError:
        return ""
    m = _FRONT_DATE.search(head)
    return m.group(1) if m else ""


def _read(path: Path) -> str:
    """The file's text, without a UTF-8 byte-order mark (an editor's, not the author's)."""
    try:
        return path.read_text(encoding="utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise WorkspaceError(
            f"not UTF-8 text ({e.reason} at byte {e.start}): {path.name}",
            hint="re-save it as UTF-8, or move it out of the workspace",
        ) from e
    except OSError as e:
        raise WorkspaceError(
            f"cannot read {path.name}: {e.strerror or e}", hint="check its permissions, or move it out of the workspace"
        ) from e


def _rel(ws: Workspace, path: Path) -> str:
    """The path as found under the workspace (not where a symlink leads), as text (`_shown`)."""
    try:
        return _shown(path.relative_to(ws.root).as_posix())
    except ValueError:
        return _shown(path.resolve().relative_to(ws.root).as_posix())


def _shown(name: str) -> str:
    """A file name as text: bytes that are not UTF-8, which Python keeps as lone surrogates that no
    JSON, record or terminal can carry (a run crashed after paying for its calls), become U+FFFD."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
