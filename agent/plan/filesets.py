"""One writer at a time, and a set of files replaced all or nothing, even across a kill.

Linux only (POSIX `flock` on a folder, `rename` within one file system). A set is written under
an exclusive lock of its folder, in this order: a temporary copy beside each target, a hard-linked
backup of each file it replaces, a journal naming them all, the renames, and last the journal's
removal, which is the commit. Whatever stops the writer before the commit leaves the journal: a
Python exception (a full disk, a Ctrl-C) is rolled back at once, from the files themselves rather
than from the writer's bookkeeping (a Ctrl-C may land just after a rename); a kill is rolled back by
the next writer of the folder, which says so. After the commit only backups remain to delete, and a
next writer deletes what a kill left of them. Not meant to survive a power cut (nothing is fsynced).
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from agent.core.errors import PredigestError

JOURNAL = ".predigest-journal.json"
TMP = ".predigest-tmp"  # the suffix of a temporary copy: only files so named are ever cleaned
OLD = ".predigest-old"  # the suffix of a backup
LOCK_WAIT_S = 30.0  # a set is written in milliseconds: a writer holding the lock this long is stuck

log = logging.getLogger("predigest")


@dataclass(frozen=True)
class Entry:
    """One file of a set: where it goes, its new copy (None: the file is removed), its backup."""

    target: Path
    temp: Path | None
    backup: Path | None

    def applied(self) -> bool:
        """Whether the rename (or the removal) already happened: read from the disk, not the writer."""
        if self.temp is None:
            return not os.path.lexists(self.target)
        return not os.path.lexists(self.temp)


@contextmanager
def locked(folder: Path, what: str) -> Iterator[None]:
    """Hold the exclusive lock of `folder` (a lock of the folder itself: no lock file is left
    behind). A second writer waits for the first, up to LOCK_WAIT_S, then refuses in one line."""
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN) or time.monotonic() >= deadline:
                    raise PredigestError(
                        f"another predigest is writing {what} (waited {LOCK_WAIT_S:g} s); nothing was written",
                        hint="wait for it to finish and run again, or write somewhere else",
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def replace_set(files: Mapping[Path, str | None], folder: Path, on_written: Callable[[list[Path]], None]) -> None:
    """Put `files` down (None: remove that file) all or nothing; the caller holds `folder`'s lock.
    Raises what stopped it, after the previous set is back; `on_written` hears of a committed set,
    even when an interruption lands just after the commit."""
    journal = folder / JOURNAL
    entries: list[Entry] = []
    try:
        for path, text in files.items():
            temp = None if text is None else _written_beside(path, text, _mode_for(path))
            entries.append(Entry(path, temp, None))
            entries[-1] = _backed_up(entries[-1])
        _write_journal(journal, entries)
        for e in entries:
            if e.temp is not None:
                os.replace(e.temp, e.target)
            elif os.path.lexists(e.target):
                os.unlink(e.target)
        os.unlink(journal)  # the commit: from here on the new set stands
    except BaseException:
        if os.path.lexists(journal):
            _roll_back(entries, journal)
        elif entries and any(e.temp is not None and e.applied() for e in entries):
            on_written(written(entries))  # stopped after the commit: the new set is whole
            _drop(e.backup for e in entries)
        else:  # stopped before the journal stood: nothing was renamed
            _drop([journal.with_name(f"{JOURNAL}{TMP}"), *(p for e in entries for p in (e.temp, e.backup))])
        raise
    on_written(written(entries))
    _drop(e.backup for e in entries)


def written(entries: Sequence[Entry]) -> list[Path]:
    return [e.target for e in entries if e.temp is not None]


def recover(folders: Sequence[Path]) -> None:
    """What a killed writer left in `folders`: a journal is rolled back (the previous set comes
    back), stray copies and backups are removed; each said in one warning line. The caller holds
    the lock of the first folder, the one that holds the journal."""
    journal = folders[0] / JOURNAL
    if os.path.lexists(journal):
        try:
            entries = _read_journal(journal)
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise PredigestError(
                f"{journal} is left from a stopped write and cannot be read ({e})",
                hint="look at the files it names, then delete it",
            ) from None
        _roll_back(entries, journal)
        names = ", ".join(e.target.name for e in entries)
        log.warning(f"a write into {folders[0]} was stopped before it finished; the previous files are back ({names})")
    for folder in dict.fromkeys(folders):
        stray = sorted(p for p in folder.glob(".*") if p.name.endswith((TMP, OLD, f"{JOURNAL}{TMP}")))
        _drop(stray)
        if stray:
            log.warning(f"removed {len(stray)} file(s) a stopped write left in {folder}: {stray[0].name} …")


def _roll_back(entries: Sequence[Entry], journal: Path) -> None:
    """Every entry back as it was before the set, whichever of its renames happened; then the journal goes."""
    for e in entries:
        if e.applied():
            if e.backup is not None and os.path.lexists(e.backup):
                os.replace(e.backup, e.target)
            elif e.temp is not None and os.path.lexists(e.target):
                os.unlink(e.target)  # a file the set added
        elif e.temp is not None:
            os.unlink(e.temp)
    _drop(e.backup for e in entries)
    os.unlink(journal)


def _backed_up(e: Entry) -> Entry:
    if not os.path.lexists(e.target):
        return e
    backup = Path(f"{e.temp or _stray_name(e.target)}{OLD}")
    os.link(e.target, backup)
    return Entry(e.target, e.temp, backup)


def _stray_name(path: Path) -> str:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    os.unlink(name)
    return name


def _write_journal(journal: Path, entries: Sequence[Entry]) -> None:
    """The journal appears whole (a copy renamed into place) or not at all."""
    rel = lambda p: None if p is None else os.path.relpath(p, journal.parent)  # noqa: E731
    rows = [{"target": rel(e.target), "temp": rel(e.temp), "backup": rel(e.backup)} for e in entries]
    tmp = journal.with_name(f"{JOURNAL}{TMP}")
    tmp.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    os.replace(tmp, journal)


def _read_journal(journal: Path) -> list[Entry]:
    at = lambda p: None if p is None else journal.parent / p  # noqa: E731
    rows = json.loads(journal.read_text(encoding="utf-8"))
    return [Entry(journal.parent / r["target"], at(r["temp"]), at(r["backup"])) for r in rows]


def _drop(paths: Iterable[Path | None]) -> None:
    """Remove each file that exists; an interruption half way still removes the rest, then goes on."""
    rest = [p for p in paths if p is not None]
    while rest:
        p = rest.pop()
        try:
            if os.path.lexists(p):
                os.unlink(p)
        except BaseException:
            _drop(rest)
            raise


def _mode_for(path: Path) -> int:
    """A replaced file keeps its permissions (a living document the user made private stays so); a
    new one takes the user's umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def _written_beside(path: Path, text: str, mode: int) -> Path:
    """`text` in a new temporary file beside `path` (same folder: the rename into place is atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
    except BaseException:  # a half-written copy is not left behind
        os.unlink(tmp)
        raise
    return Path(tmp)
