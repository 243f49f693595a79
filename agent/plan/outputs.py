"""Where the briefing goes, checked before the first call, and how its files are put down.

The three files of a run (`.md`, `.json`, `.calls.jsonl`) are one unit, written by one writer at
a time and replaced all or nothing, even across a kill (`agent.plan.filesets`). An output path
that is one of the workspace's inputs (a report, a card, a baseline, the living document) is
refused whatever `--force` says.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agent.core.errors import OutputExists, PredigestError, shown
from agent.core.labels import ZH
from agent.plan.filesets import locked, recover, replace_set
from agent.plan.ingest import is_run_output
from agent.plan.workspace import Workspace
from schemas.documents import SourceDoc


def out_path_for(ws: Workspace, out: Path | None, date: dt.date, topic: str) -> Path:
    """`--out x.md` is the file; any other `--out` is a folder (existing or not) to write into;
    no `--out` is the workspace's own inbox folder, where tomorrow's run reads it as a baseline."""
    name = f"{date.isoformat()}-{topic}-e1prep.md"
    if out is None:
        return ws.own_inbox() / name
    path = Path(out).expanduser().absolute()
    return path if path.suffix == ".md" else path / name


def check_out(out: Path, ws: Workspace, docs: Sequence[SourceDoc], own: Path, *, force: bool) -> None:
    """Refuse, before anything is spent, an output that would replace an input, a file of another
    kind, or an existing briefing without --force; and a folder that cannot be written. Every
    Markdown file of the workspace is some evening's input, except tonight's own briefing `own`;
    what a run wrote beside a briefing (its record, its calls) is an output, replaced with it."""
    check_reachable(out, hint="pick another --out")
    targets = [out.with_suffix(".json"), out.with_suffix(".calls.jsonl"), out]
    inputs = {real_path(ws.root / d.path) for d in docs if not is_run_output(d.name)} - {real_path(own)}
    for t in targets:
        if (real := real_path(t)) in inputs:
            raise PredigestError(
                f"the briefing's file {t} would replace an input of the workspace ({real.relative_to(ws.root)})",
                hint="write the briefing somewhere else, e.g. --out out/",
            )
    if out.is_dir():
        raise PredigestError(f"{shown(out)} is a folder, not a briefing file", hint="pass the folder itself as --out")
    if out.exists():
        if not _looks_like_briefing(out):
            raise PredigestError(
                f"{shown(out)} exists and is not a briefing: refusing to replace it",
                hint="choose another --out; predigest only replaces its own briefings",
            )
        if not force:
            raise OutputExists(
                f"{shown(out)} already exists and is not this evening's briefing as a run left it",
                hint="pass --force to replace it, or --out for another path",
            )
    check_writable(out.parent, hint="pick another --out")


def check_writable(folder: Path, *, hint: str) -> None:
    """Refuse, before anything is spent, a folder no file can be created in (or the nearest one
    above it that exists, where the missing ones will be made). Tried with a temporary file:
    `os.access` says yes to root on /proc and on a read-only mount."""
    check_reachable(folder, hint=hint)
    near = _nearest_existing(folder)
    why = "not a folder"
    if near.is_dir():
        try:
            fd, probe = tempfile.mkstemp(prefix=".predigest-probe-", dir=near)
        except OSError as e:
            why = e.strerror or str(e)
        else:
            os.close(fd)
            os.unlink(probe)
            return
    raise PredigestError(f"cannot write into {folder} ({near} is not a writable folder: {why})", hint=hint)


def check_page_free(page: Path, *, force: bool) -> None:
    """A page is written over only with --force: the file of that name may be the user's own."""
    if page.is_dir():
        raise PredigestError(f"{page} is a folder, not a page", hint="pass --out a file name ending in .html")
    if page.exists() and not force:
        raise OutputExists(f"{page} already exists", hint="pass --force to replace it, or --out for another path")


def check_page(path: Path | None, *, force: bool) -> None:
    """A page to be written at the end (`eval --html`), checked before the first case runs; an
    existing file is replaced only with --force, as `run --html` and `view` do."""
    if path is None:
        return
    check_reachable(path, hint="pass --html a path you can write")
    if path.is_dir():
        raise PredigestError(f"--html {path} is a folder", hint="pass a file name, e.g. --html eval.html")
    if path.exists() and not force:
        raise OutputExists(f"{path} already exists", hint="pass --force to replace it, or --html another path")
    check_writable(path.absolute().parent, hint="pass --html a path you can write")


def check_reachable(path: Path, *, hint: str) -> None:
    """Refuse a path a symbolic link on its way sends round in a loop: `exists()` cannot see such a
    path, so the other checks would let it through, and the write would fail after the calls."""
    try:
        path.stat()
    except OSError as e:  # a path that does not exist yet is what the other checks are for
        if e.errno == errno.ELOOP:
            raise PredigestError(f"cannot write to {path}: a symbolic link on its way loops", hint=hint) from None


def real_path(path: Path) -> Path:
    """Where a path really leads; a symlink loop leads nowhere, so it stands for itself."""
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path.absolute()


def _looks_like_briefing(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8") as f:
            head = f.readline()
    except (OSError, UnicodeDecodeError):
        return False
    return ZH.title_kind in head


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def write_set(
    files: Mapping[Path, str | None],
    *,
    force: bool,
    guarded: Path,
    on_written: Callable[[list[Path]], None] | None = None,
) -> None:
    """Write every file of `files` or none (None: remove that file with the set), one writer of the
    folder at a time (`filesets`). `guarded` (the briefing) is never replaced without `force`, even
    if it appeared while the run was working; its folder holds the lock and the journal, and what a
    killed writer left there is put right first. `on_written` hears of the files once they stand."""
    folder = guarded.parent
    with locked(folder, f"into {folder}"):
        recover([folder, *(p.parent for p in files if p.parent != folder)])
        if not force and guarded.exists():
            raise OutputExists(f"{guarded} appeared while the run was writing", hint="pass --force to replace it")
        try:
            replace_set(files, folder, on_written or (lambda paths: None))
        except OSError as e:  # a full disk, a folder gone read-only: the previous set is back whole
            raise PredigestError(
                f"cannot write {next(iter(files))}: {e}; the previous files are unchanged",
                hint="check the folder is writable and the disk has room",
            ) from e
