"""One writer at a time, and a set of files that is the old one or the new one whatever stops it.

Issue #42's writers rows: a Ctrl-C at any instant of a briefing's or a living document's write
(simulated: the Nth rename or removal in the folder happens, then KeyboardInterrupt is raised, as
a signal landing just after it would), a kill -9 at any instant (a child process that ends itself
with os._exit after the Nth operation), two writers at once, a living document that is a link.
Each checks the files on disk and what the one line says about them.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.pipeline import Settings, run
from tests.paths import ROOT, copy_world, predigest

DAY = "2026-09-22"
STEM = f"{DAY}-inference-e1prep"
LIVING = "living/inference.md"
OLD = "\n<!-- old -->\n"  # marks each file of the previous set, so old and new can be told apart


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo evening run once, replayed: its workspace and its set under `out/`."""
    base = tmp_path_factory.mktemp("demo")
    ws = copy_world(base / "world")
    run(Settings(workspace=ws, topic="inference", date=dt.date(2026, 9, 22), out=base / "out", backend="replay"))
    return base


@pytest.fixture
def world(demo: Path, tmp_path: Path) -> Path:
    ws = tmp_path / "world"
    shutil.copytree(demo / "world", ws, symlinks=True)
    return ws


@pytest.fixture
def old_set(demo: Path, tmp_path: Path) -> Path:
    """A previous run's set in `out/`, each file marked as the old one."""
    out = tmp_path / "out"
    shutil.copytree(demo / "out", out)
    for p in out.iterdir():
        p.write_text(p.read_text(encoding="utf-8") + OLD, encoding="utf-8")
    return out


def _record_in(ws: Path, demo: Path, where: Path) -> Path:
    """The demo's run record, said to be made in `ws`, written at `where`."""
    record = json.loads((demo / "out" / f"{STEM}.json").read_text(encoding="utf-8"))
    record["living"]["workspace"] = str(ws.resolve())
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return where


def _stop_after(monkeypatch: pytest.MonkeyPatch, op: str, n: int, under: Path, then: Callable[[], None]) -> None:
    """The Nth `os.<op>` of a path under `under` happens, then `then()` runs (raises, exits, waits)."""
    real, seen = getattr(os, op), {"n": 0}

    def stopping(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        path = str(args[0])
        if path.startswith(str(under)) and ".predigest-probe-" not in path:
            seen["n"] += 1
            if seen["n"] == n:
                then()

    monkeypatch.setattr(os, op, stopping)


def _ctrl_c() -> None:
    raise KeyboardInterrupt


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _hidden(folder: Path) -> list[str]:
    return [name for name in _files(folder) if any(part.startswith(".") for part in Path(name).parts)]


# --- a Ctrl-C at any instant: the old set or the new, and the line says which ----------------------

INSTANTS = [(op, n) for op in ("replace", "unlink") for n in range(1, 5)]


@pytest.mark.parametrize(("op", "n"), INSTANTS, ids=[f"{op}-{n}" for op, n in INSTANTS])
def test_a_ctrl_c_at_any_instant_of_a_run_leaves_one_set_and_says_which(
    op: str, n: int, world: Path, old_set: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _stop_after(monkeypatch, op, n, old_set, _ctrl_c)
    r = predigest(
        "run", str(world), "-t", "inference", "-d", DAY, "--backend", "replay", "--out", f"{old_set}/", "--force"
    )
    monkeypatch.undo()
    assert r.returncode == 130, r.stderr
    files = _files(old_set)
    assert not _hidden(old_set), files.keys()
    marked = {name: data.endswith(OLD.encode()) for name, data in files.items()}
    assert len(marked) == 3 and len(set(marked.values())) == 1, marked  # all old or all new, never a mix
    if all(marked.values()):
        assert "interrupted: nothing was written" in r.stderr, r.stderr
    else:
        assert f"interrupted: {old_set / STEM}.md was written in full" in r.stderr, r.stderr


APPLY_INSTANTS = [("replace", n) for n in range(1, 4)] + [("unlink", n) for n in range(1, 3)]


@pytest.mark.parametrize(("op", "n"), APPLY_INSTANTS, ids=[f"{op}-{n}" for op, n in APPLY_INSTANTS])
def test_a_ctrl_c_at_any_instant_of_an_apply_leaves_one_document_and_says_which(
    op: str, n: int, world: Path, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = _record_in(world, demo, tmp_path / f"{STEM}.json")
    before = (world / LIVING).read_bytes()
    _stop_after(monkeypatch, op, n, world / "living", _ctrl_c)
    r = predigest("patch", str(record), "--apply")
    monkeypatch.undo()
    assert r.returncode == 130, r.stderr
    assert not [p for p in _hidden(world / "living") if not p.startswith(".history/inference.")], _files(world)
    history = sorted((world / "living" / ".history").glob("*.md"))
    if (world / LIVING).read_bytes() == before:
        assert not history and "interrupted: nothing was written" in r.stderr, r.stderr
    else:  # patched: the previous version is kept
        assert [h.read_bytes() for h in history] == [before]
        assert f"interrupted: {(world / LIVING).resolve()} was written in full" in r.stderr, r.stderr


# --- a kill -9 at any instant: the next writer puts the folder right and says so ------------------

KILL = """
import os, sys
from pathlib import Path
from agent.plan.outputs import write_set
folder, op, n = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
real, seen = getattr(os, op), [0]
def dying(*args, **kwargs):
    real(*args, **kwargs)
    if str(args[0]).startswith(str(folder)):
        seen[0] += 1
        if seen[0] == n:
            os._exit(9)
setattr(os, op, dying)
names = ["a.md", "a.json", "a.calls.jsonl"]
write_set({folder / name: "new " + name for name in names}, force=True, guarded=folder / names[0])
"""


@pytest.mark.parametrize(("op", "n"), INSTANTS, ids=[f"{op}-{n}" for op, n in INSTANTS])
def test_what_a_killed_writer_left_is_put_right_by_the_next_and_said(
    op: str, n: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from agent.plan.outputs import write_set

    folder = tmp_path / "out"
    folder.mkdir()
    names = ["a.md", "a.json", "a.calls.jsonl"]
    for name in names:
        (folder / name).write_text("old " + name, encoding="utf-8")
    subprocess.run([sys.executable, "-c", KILL, str(folder), op, str(n)], cwd=ROOT, check=False)
    left = _hidden(folder)
    with caplog.at_level("WARNING", logger="predigest"):
        write_set({folder / name: "newer " + name for name in names}, force=True, guarded=folder / names[0])
    assert _files(folder) == {name: f"newer {name}".encode() for name in names}  # whole, nothing hidden stays
    if left:  # what the kill left is named, not silently swept
        assert any(str(folder) in m for m in caplog.messages), (left, caplog.messages)


# --- two writers at once --------------------------------------------------------------------------


def test_a_second_writer_waits_for_the_first_and_writes_its_set_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second run into the same folder, started while the first is between its renames, waits
    for it: the folder ends with the second's set, whole (today: torn, part one's and part two's)."""
    from agent.plan.outputs import write_set

    folder = tmp_path / "out"
    names = ["a.md", "a.json", "a.calls.jsonl"]
    second: list[BaseException] = []

    def run_second() -> None:
        try:
            write_set({folder / n: f"two {n}" for n in names}, force=True, guarded=folder / names[0])
        except BaseException as e:
            second.append(e)

    def start_second() -> None:
        if threading.current_thread() is threading.main_thread():
            thread = threading.Thread(target=run_second)
            thread.start()
            time.sleep(0.5)  # time enough for the second to write everything, if nothing stops it
            threads.append(thread)

    threads: list[threading.Thread] = []
    _stop_after(monkeypatch, "replace", 2, folder, start_second)
    write_set({folder / n: f"one {n}" for n in names}, force=True, guarded=folder / names[0])
    threads[0].join(10)
    monkeypatch.undo()
    assert not second, second
    assert _files(folder) == {n: f"two {n}".encode() for n in names}


@contextmanager
def _held(folder: Path) -> Iterator[None]:
    """The folder's writer lock, held as another predigest process would hold it."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def test_a_run_refuses_in_one_line_when_another_holds_the_folder_too_long(
    world: Path, old_set: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent.plan.filesets.LOCK_WAIT_S", 0.3)
    before = _files(old_set)
    with _held(old_set):
        r = predigest(
            "run", str(world), "-t", "inference", "-d", DAY, "--backend", "replay", "--out", f"{old_set}/", "--force"
        )
    assert r.returncode == 2 and r.stderr.splitlines()[-1].startswith("error: "), r.stderr
    assert f"error: another predigest is writing into {old_set}" in r.stderr, r.stderr
    assert _files(old_set) == before


def test_an_apply_refuses_in_one_line_when_another_holds_the_document(
    world: Path, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("agent.plan.filesets.LOCK_WAIT_S", 0.3)
    record = _record_in(world, demo, tmp_path / f"{STEM}.json")
    before = (world / LIVING).read_bytes()
    with _held(world / "living"):
        r = predigest("patch", str(record), "--apply")
    assert r.returncode == 2 and "error: another predigest is writing inference.md" in r.stderr, r.stderr
    assert (world / LIVING).read_bytes() == before


def test_two_applies_at_once_never_lose_a_patch(world: Path, demo: Path, tmp_path: Path) -> None:
    """Both briefings were made against the same document; the second is applied after the first
    wrote (both prepared before either wrote, as two processes would): it is refused as an edit or
    finds nothing to change, and the first's lines stay, its previous version kept."""
    from agent.write.patch_apply import apply_patch, prepare

    first = _record_in(world, demo, tmp_path / "one" / f"{STEM}.json")
    second = _record_in(world, demo, tmp_path / "two" / f"{STEM}.json")
    data = json.loads(second.read_text(encoding="utf-8"))
    data["briefing"]["increments"] = data["briefing"]["increments"][:1]
    data["patch"] = data["patch"][:1] if isinstance(data.get("patch"), list) else data.get("patch")
    second.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    before = (world / LIVING).read_text(encoding="utf-8")
    a, b = prepare(first), prepare(second)
    assert apply_patch(a) is not None
    patched = (world / LIVING).read_text(encoding="utf-8")
    try:
        apply_patch(b)
    except Exception as e:
        assert "changed since the briefing was made" in str(e), e
    now = (world / LIVING).read_text(encoding="utf-8")
    added = [ln for ln in patched.splitlines() if ln not in before.splitlines()]
    assert added and all(ln in now.splitlines() for ln in added), "the first patch's lines were lost"
    assert len(list((world / "living" / ".history").glob("*.md"))) == (2 if now != patched else 1)


def test_a_living_document_that_is_a_link_is_written_through(world: Path, demo: Path, tmp_path: Path) -> None:
    real = world / "notes" / "inference.md"
    real.parent.mkdir()
    shutil.move(world / LIVING, real)
    (world / LIVING).symlink_to(Path("..") / "notes" / "inference.md")
    before = real.read_bytes()
    record = _record_in(world, demo, tmp_path / f"{STEM}.json")
    r = predigest("patch", str(record), "--apply")
    assert r.returncode == 0, r.stderr
    assert (world / LIVING).is_symlink() and real.read_bytes() != before
    assert [h.read_bytes() for h in (world / "living" / ".history").glob("*.md")] == [before]


# --- the weak rows: what was written, and what was not, is said ------------------------------------

Setup = Callable[[Path, Path, Path, pytest.MonkeyPatch], None]  # (workspace, the test's folder, demo, monkeypatch)


@dataclass(frozen=True)
class Weak:
    id: str
    command: tuple[str, ...]  # {ws}, {tmp} and {record} are filled in
    setup: Setup | None = None
    exit: int = 0
    said: tuple[str, ...] = ()  # in stdout + stderr, filled in likewise
    not_said: tuple[str, ...] = ()
    exists: tuple[str, ...] = ()  # relative to the test's folder
    absent: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()  # files (relative to the test's folder) the command must change
    same: tuple[str, ...] = ()  # ... and must not


def _fail_writing(part: str) -> Setup:
    """A disk that fills when a file whose name holds `part` is written (its copy's permissions set)."""

    def setup(ws: Path, tmp: Path, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        real = os.chmod

        def chmod(path: Any, mode: int, *args: Any, **kwargs: Any) -> None:
            if part in str(path):
                raise OSError(28, "No space left on device")
            real(path, mode, *args, **kwargs)

        monkeypatch.setattr(os, "chmod", chmod)

    return setup


def _record_inside(ws: Path, tmp: Path, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo's record inside its workspace, then the workspace copied to `copy/`."""
    _record_in(ws, demo, ws / "inbox" / "tom" / f"{STEM}.json")
    shutil.copytree(ws, tmp / "copy", symlinks=True)


def _no_sections(ws: Path, tmp: Path, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (ws / LIVING).write_text("# inference 活文档\n\n只有一段话，没有小节。\n", encoding="utf-8")
    (tmp / "out").mkdir()
    (tmp / "out" / f"{STEM}.patch").write_text("a previous run's patch\n", encoding="utf-8")


def _one_answer_missing(ws: Path, tmp: Path, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "world", folder)
    next(folder.glob("inbox-flyp-*.json")).unlink()


def _applied(ws: Path, tmp: Path, demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    record = _record_in(ws, demo, tmp / f"{STEM}.json")
    assert predigest("patch", str(record), "--apply").returncode == 0


RUN = ("run", "{ws}", "-d", DAY, "--out", "{tmp}/out/")
WEAK = [
    Weak(
        "one-topic-without-answers-keeps-the-others",
        # inference's answers only: the demo workspace itself names every topic's set
        (
            *RUN,
            "-t",
            "inference",
            "-t",
            "risk",
            "--backend",
            "replay",
            "--cassettes",
            str(ROOT / "cassettes" / "world"),
        ),
        exit=2,
        said=(
            "every extraction for risk failed",
            "nothing was written for risk",
            f"written in full: {{tmp}}/out/{STEM}.md",
        ),
        exists=(f"out/{STEM}.md", f"out/{STEM}.json", f"out/{STEM}.calls.jsonl"),
        absent=(f"out/{DAY}-risk-e1prep.md",),
    ),
    Weak(
        "a-page-that-fails-after-the-set-says-the-set-was-written",
        (*RUN, "-t", "inference", "--backend", "replay", "--html"),
        setup=_fail_writing("e1prep.html"),
        exit=2,
        said=("No space left on device", f"written in full: {{tmp}}/out/{STEM}.md"),
        exists=(f"out/{STEM}.md",),
        absent=(f"out/{STEM}.html",),
    ),
    Weak(
        "a-second-topic-that-fails-to-write-says-the-first-was-written",
        (*RUN, "-t", "inference", "-t", "risk", "--backend", "offline"),
        setup=_fail_writing("-risk-e1prep"),
        exit=2,
        said=("No space left on device", f"written in full: {{tmp}}/out/{STEM}.md"),
        exists=(f"out/{STEM}.md",),
        absent=(f"out/{DAY}-risk-e1prep.md",),
    ),
    Weak(
        "a-copied-workspace-patches-itself",
        ("patch", "{tmp}/copy/inbox/tom/" + f"{STEM}.json", "--apply"),
        setup=_record_inside,
        said=("patching the workspace it is in", "patched {tmp}/copy/" + LIVING),
        changed=("copy/" + LIVING,),
        same=("world/" + LIVING,),
    ),
    Weak(
        "run-patch-writes-no-empty-patch-and-says-why",
        (*RUN, "-t", "inference", "--backend", "offline", "--patch", "--force"),
        setup=_no_sections,
        said=("note: no .patch written: living/inference.md has no section headings",),
        not_said=(f"wrote {{tmp}}/out/{STEM}.patch",),
        absent=(f"out/{STEM}.patch",),  # and a previous run's goes with the set it belonged to
    ),
    Weak(
        "a-partial-evening-says-it-has-no-patch",
        (*RUN, "-t", "inference", "--backend", "replay", "--patch", "--cassettes", "{tmp}/cassettes"),
        setup=_one_answer_missing,
        exit=3,
        said=("note: no .patch written: a partial briefing's patch would leave out the documents not read",),
        exists=(f"out/{STEM}.md",),
        absent=(f"out/{STEM}.patch",),
    ),
    Weak(
        "patch-after-apply-agrees-with-apply",
        ("patch", "{tmp}/" + f"{STEM}.json"),
        setup=_applied,
        said=("nothing to change",),
        not_said=("--apply would refuse",),
    ),
]


@pytest.mark.parametrize("row", WEAK, ids=[r.id for r in WEAK])
def test_weak_row(row: Weak, world: Path, demo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = world

    def fill(text: str) -> str:
        return text.replace("{ws}", str(ws)).replace("{tmp}", str(tmp_path))

    if row.setup is not None:
        row.setup(ws, tmp_path, demo, monkeypatch)
    before = {rel: (tmp_path / rel).read_bytes() for rel in (*row.changed, *row.same)}
    r = predigest(*map(fill, row.command))
    monkeypatch.undo()
    said = r.stdout + r.stderr
    assert r.returncode == row.exit and "Traceback" not in said, said
    for text in row.said:
        assert fill(text) in said, said
    for text in row.not_said:
        assert fill(text) not in said, said
    for rel in row.exists:
        assert (tmp_path / rel).exists(), rel
    for rel in row.absent:
        assert not (tmp_path / rel).exists(), rel
    for rel in row.changed:
        assert (tmp_path / rel).read_bytes() != before[rel], f"{rel} was not changed"
    for rel in row.same:
        assert (tmp_path / rel).read_bytes() == before[rel], f"{rel} was changed"
