"""Applying a briefing's E2 patch: only to the document it was proposed for, all at once, undoably.

The run record names the living document the run read (workspace, path, and the hash of its
text), so a patch is applied only where it was made: a living document edited since, a partial
briefing (its patch would leave out what was not read), or a briefing of another topic or
workspace is refused in one line. One writer at a time (a lock of the document's folder), the
write all or nothing with the previous version kept under `living/.history/<name>.<UTC
timestamp>.md` (`agent.plan.filesets`). A document that already holds the patch gets no change:
applying twice is harmless.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent.core.errors import PredigestError
from agent.plan.filesets import locked, recover, replace_set
from agent.plan.workspace import CONFIG_NAME, load_workspace
from agent.write.living import LivingDocError, read_living, text_hash
from agent.write.patch import Proposal, propose
from agent.write.trace import load_record
from schemas.documents import SourceDoc
from schemas.run import PatchLine, RunRecord

HISTORY = ".history"
PARTIAL_NO_PATCH = "a partial briefing's patch would leave out the documents not read"


class PatchRefused(PredigestError):
    """The patch is not for this living document as it is now; nothing was written."""


@dataclass(frozen=True)
class Target:
    """A briefing's patch against the living document as it is on disk now."""

    record: RunRecord
    living: Path
    proposal: Proposal
    partial: str = ""  # why the briefing's patch is incomplete, if it is
    edited: str = ""  # how the living document differs from the one the run read, if it does
    json_path: Path = Path()
    moved: str = ""  # the record was made in another workspace than the one it is patched in, if so

    @property
    def refusals(self) -> list[str]:
        """Why --apply would not write the patch: what `apply_patch` refuses, in its order (a
        document that already holds the patch has nothing to change, edited or not)."""
        edited = self.edited if self.proposal.changed else ""
        return [r for r in (self.partial, edited) if r]


def prepare(json_path: Path, *, workspace: Path | None = None, topic: str | None = None) -> Target:
    """The patch of `json_path`'s briefing; raises when it is of another topic or workspace."""
    record = load_record(json_path)
    ref, b = record.living, record.briefing
    if ref is None:
        raise PatchRefused(
            f"{json_path} records no living document, so its patch cannot be checked against one",
            hint="re-run the evening with this version of predigest",
        )
    if topic is not None and topic != b.topic:
        raise PatchRefused(f"{json_path} is a briefing of {b.topic!r}, not {topic!r}", hint="pass a briefing of it")
    root = _workspace(json_path, ref.workspace, workspace)
    loaded = load_workspace(root)
    living, rel = loaded.living_path(b.topic), loaded.living_rel(b.topic)
    if rel != ref.path:
        raise PatchRefused(
            f"{json_path} was made against {ref.path}, but the living document of {b.topic!r} in {root} is {rel}",
            hint=f"patch the briefing of this topic, or fix topics.{b.topic}.living in predigest.toml",
        )
    moved = ""
    if ref.workspace and root != Path(ref.workspace).resolve():
        moved = f"{json_path} was made in {ref.workspace}; patching the workspace it is in, {root}"
    return _against(json_path, record, living, rel, moved)


def _against(json_path: Path, record: RunRecord, living: Path, rel: str, moved: str = "") -> Target:
    """The patch of `record` against `living` as it reads now."""
    try:
        text = read_living(living.read_bytes(), rel)
    except OSError as e:
        raise LivingDocError(f"cannot read {living}: {e.strerror or e}", hint="check its permissions") from e
    partial = (
        f"{json_path} is a partial briefing ({len(record.unread)} source(s) not read): its patch would leave them out"
        if record.partial
        else ""
    )
    assert record.living is not None  # checked by `prepare`
    edited = (
        f"{rel} changed since the briefing was made (its hash is not the one the run recorded)"
        if text_hash(text) != record.living.sha256
        else ""
    )
    return Target(record, living, propose(record, text, rel), partial, edited, json_path, moved)


def _workspace(json_path: Path, recorded: str, given: Path | None) -> Path:
    """The workspace to patch: the one given, else the one the record lies in (a copied workspace
    is patched, never the one it was copied from), else the one the record names."""
    home = _home(json_path)
    if given is None and not recorded and home is None:
        raise PatchRefused(f"{json_path} does not say which workspace it was made in", hint="pass --workspace")
    root = (given or home or Path(recorded)).resolve()
    if recorded and given is not None and root not in (Path(recorded).resolve(), home):
        raise PatchRefused(
            f"{json_path} was made in the workspace {recorded}, not {given}",
            hint="patch it from its own workspace, or run the evening in this one",
        )
    return root


def _home(json_path: Path) -> Path | None:
    """The workspace a record lies in (the nearest folder above it with a predigest.toml), if any."""
    for folder in Path(json_path).resolve().parents:
        if (folder / CONFIG_NAME).is_file():
            return folder
    return None


def apply_patch(target: Target, on_written: Callable[[list[Path]], None] | None = None) -> Path | None:
    """Write the patch; the previous version goes to `.history/`. None when there is nothing to
    change (the document already holds the patch). Refuses, writing nothing, what `prepare`
    found wrong. One writer at a time: under the lock the document is read again, so a patch
    applied meanwhile by another process is seen (this one is then refused as an edit, never
    written over it). A living document that is a symbolic link is written through: its target
    is the document, the link stays."""
    if target.partial:
        raise PatchRefused(target.partial, hint="re-run the evening until every source is read, then patch")
    real = target.living.resolve()
    with locked(real.parent, target.living.name):
        rel = target.record.living.path if target.record.living else ""  # `prepare` refused a record without
        now = _against(target.json_path, target.record, target.living, rel, target.moved)
        if not now.proposal.changed:
            return None
        if now.edited:
            raise PatchRefused(
                now.edited, hint="re-run the evening against it, or take the lines from `predigest patch` by hand"
            )
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        history = target.living.parent / HISTORY / f"{target.living.stem}.{stamp}.md"
        n = 1
        while history.exists():
            history = history.with_name(f"{target.living.stem}.{stamp}-{n}.md")
            n += 1
        recover([real.parent, history.parent])
        replace_set({real: now.proposal.new, history: now.proposal.old}, real.parent, on_written or (lambda p: None))
    return history


def patch_lines(record: RunRecord, docs: Sequence[SourceDoc]) -> list[PatchLine]:
    """The patch the page shows, against the living document as the run read it: none for a
    partial briefing (its patch would leave out what was not read) or a document without
    sections (`predigest patch` says why)."""
    ref = record.living
    if record.partial or ref is None:
        return []
    text = next((d.text for d in docs if d.path == ref.path and d.read and d.text), None)
    if text is None:
        return []
    try:
        return propose(record, text, ref.path).diff_lines()
    except LivingDocError:
        return []


def proposed_diff(record: RunRecord, root: Path) -> str:
    """The diff `run --patch` writes beside the briefing: its record against the living document
    it was made from. Empty when there is nothing to change or the document has no sections
    (`diff_or_why` says which)."""
    return diff_or_why(record, root)[0]


def diff_or_why(record: RunRecord, root: Path) -> tuple[str, str]:
    """`proposed_diff`, or why there is none: a `.patch` is never an empty file with no reason."""
    if record.living is None:
        return "", "the run recorded no living document"
    path = record.living.path
    try:
        text = read_living((root / path).read_bytes(), path)
        diff = propose(record, text, path).diff()
    except OSError as e:
        return "", f"cannot read {path}: {e.strerror or e}"
    except LivingDocError as e:
        return "", e.message
    return diff, "" if diff else f"{path} already holds every line this briefing proposes"
