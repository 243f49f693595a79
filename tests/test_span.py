"""A span of evenings (`predigest run WS --from D1 --to D2`), on copies of the demo workspace whose
own inbox is emptied first: every briefing an evening reads as a baseline is then one the span wrote.
Offline answers (no cassettes, nothing to spend) except where a budget must run out: there a server on
127.0.0.1 answers as a live endpoint."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent.span import MAX_EVENINGS, resume_command
from agent.write.living import read_living, text_hash
from agent.write.patch_apply import HISTORY
from schemas.run import RunRecord
from tests.fake_openai import FAKE_KEY, FakeOpenAI
from tests.paths import ROOT, WORLD, predigest

DAYS = ("2026-09-20", "2026-09-21", "2026-09-22")
LIVING = "living/inference.md"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    """The demo workspace with nothing in its own inbox (tom's seed briefings removed)."""
    dest = tmp_path / "world"
    shutil.copytree(WORLD, dest)
    toml = dest / "predigest.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace('"../../cassettes/', f'"{ROOT / "cassettes"}/'))
    for f in (dest / "inbox" / "tom").iterdir():
        f.unlink()
    return dest


def _span(ws: Path, *extra: str, backend: str = "offline", env: dict[str, str] | None = None):
    args = ("run", str(ws), "-t", "inference", "--from", DAYS[0], "--to", DAYS[-1], "--backend", backend, *extra)
    return predigest(*args, env=env)


def _briefing(ws: Path, day: str, topic: str = "inference") -> Path:
    return ws / "inbox" / "tom" / f"{day}-{topic}-e1prep.md"


def _record(ws: Path, day: str) -> RunRecord:
    return RunRecord.model_validate_json(_briefing(ws, day).with_suffix(".json").read_text(encoding="utf-8"))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_each_evening_reads_the_one_before_it(ws: Path) -> None:
    r = _span(ws)
    assert r.returncode == 0, r.stderr
    assert all(_briefing(ws, d).is_file() for d in DAYS)
    # each evening's 一 lists the earlier evenings' briefings as baselines, with what they anchored
    second = _briefing(ws, DAYS[1]).read_text(encoding="utf-8")
    third = _briefing(ws, DAYS[2]).read_text(encoding="utf-8")
    assert f"{DAYS[0]}-inference-e1prep（昨夜基线；" in second
    assert f"{DAYS[1]}-inference-e1prep（昨夜基线；" in third
    assert f"{DAYS[0]}-inference-e1prep（9-20 基线；" in third
    first_increment = _record(ws, DAYS[1]).briefing.increments[0].title
    assert first_increment[:8] in third.split(f"{DAYS[1]}-inference-e1prep（", 1)[1].split("\n", 1)[0]
    lines = r.stdout.splitlines()
    assert [ln for ln in lines if ln.startswith("evening ")] == [f"evening {d}:" for d in DAYS]
    assert lines[-1].startswith(f"span {DAYS[0]} … {DAYS[-1]} · evenings 3 · written 3 · skipped 0 · failed 0 · calls ")
    assert lines[-1].endswith("· exit 0")


def test_a_second_run_skips_what_is_written_and_force_runs_it_again(ws: Path) -> None:
    assert _span(ws).returncode == 0
    before = _files(ws)
    again = _span(ws)
    assert again.returncode == 0, again.stderr
    for d in DAYS:
        assert f"skipped {d}-inference-e1prep.md: already written (--force runs it again)" in again.stdout
    assert "wrote " not in again.stdout
    assert "written 0 · skipped 3 · failed 0 · calls 0 ·" in again.stdout
    assert _files(ws) == before
    forced = _span(ws, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "already written" not in forced.stdout
    assert forced.stdout.count("wrote ") == 3
    assert "written 3 · skipped 0" in forced.stdout


def test_a_missed_night_is_one_command_from_the_last_evening_written(ws: Path) -> None:
    """Cron wrote the first evening and missed the next two: `--from` the last one written fills them in."""
    first = predigest("run", str(ws), "-t", "inference", "-d", DAYS[0], "--backend", "offline")
    assert first.returncode == 0, first.stderr
    r = _span(ws)
    assert r.returncode == 0, r.stderr
    assert f"skipped {DAYS[0]}-inference-e1prep.md" in r.stdout
    assert "written 2 · skipped 1 · failed 0" in r.stdout


def test_apply_patch_changes_the_living_document_between_evenings(ws: Path) -> None:
    original = (ws / LIVING).read_text(encoding="utf-8")
    r = _span(ws, "--apply-patch")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(f"patched {ws / LIVING} (previous version: ") == 3
    # each evening read the document the evening before it left: the hash its run recorded is the
    # hash of the version its own patch then put into .history/, and differs from the one before
    read = [_record(ws, d).living for d in DAYS]
    assert all(ref is not None for ref in read)
    hashes = [ref.sha256 for ref in read if ref is not None]
    assert hashes[0] == text_hash(read_living(original.encode(), LIVING))
    assert len(set(hashes)) == 3
    history = sorted((ws / "living" / HISTORY).iterdir())
    assert {text_hash(read_living(p.read_bytes(), LIVING)) for p in history} == set(hashes)
    now = text_hash(read_living((ws / LIVING).read_bytes(), LIVING))
    assert now not in hashes
    # a re-run skips every evening, and finds every patch already in the document
    again = _span(ws, "--apply-patch")
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("nothing to change (the patch is already in it)") == 3
    assert len(list((ws / "living" / HISTORY).iterdir())) == 3


def test_a_span_stops_at_the_first_failed_evening_and_says_how_to_resume(ws: Path, tmp_path: Path) -> None:
    """One budget for the span: the first evening takes 2 of 4 calls, the second gets the other 2 for
    its 9 documents, so it is partial (status 3, not written into the inbox) and the third is never run."""
    with FakeOpenAI() as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": server.base_url,
            "PREDIGEST_CACHE_DIR": str(tmp_path / "cache"),
        }
        r = _span(ws, "--no-compose", "--concurrency", "1", "--max-calls", "4", backend="live", env=env)
        assert r.returncode == 3, r.stdout + r.stderr
        assert server.count == 4
        assert _briefing(ws, DAYS[0]).is_file()
        assert not _briefing(ws, DAYS[1]).exists() and not _briefing(ws, DAYS[2]).exists()
        resume = [ln for ln in r.stderr.splitlines() if ln.startswith("span stopped at")]
        expected = (
            f"predigest run {ws} -t inference --from {DAYS[1]} --to {DAYS[2]} --backend live --no-compose"
            " --concurrency 1 --max-calls 4"
        )
        assert resume == [f"span stopped at the evening {DAYS[1]}; after fixing it, resume with: {expected}"]
        assert "written 1 · skipped 0 · failed 1 · not reached 1 · calls 11 (live 4, skipped 7) ·" in r.stdout
        assert r.stdout.rstrip().endswith("exit 3")
        # resumed with a larger budget: the answers already paid for come from the cache
        again = expected.replace("--max-calls 4", "--max-calls 30").split()[1:]
        resumed = predigest(*again, env=env)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert server.count == 4 + 7 + 14
        assert "calls 23 (cache 2, live 21)" in resumed.stdout
        assert _briefing(ws, DAYS[1]).is_file() and _briefing(ws, DAYS[2]).is_file()


def test_every_topic_of_a_span_and_a_topic_already_written(ws: Path) -> None:
    """With --all-topics an evening runs the topics not yet written; the others are said skipped."""
    first = predigest("run", str(ws), "-t", "risk", "-d", DAYS[1], "--backend", "offline")
    assert first.returncode == 0, first.stderr
    r = predigest("run", str(ws), "--all-topics", "--from", DAYS[1], "--to", DAYS[2], "--backend", "offline")
    assert r.returncode == 0, r.stderr
    assert f"skipped {DAYS[1]}-risk-e1prep.md: already written" in r.stdout
    assert f"evening {DAYS[1]} · topics 2 ·" in r.stdout and f"evening {DAYS[2]} · topics 3 ·" in r.stdout
    for day in DAYS[1:]:
        assert all(_briefing(ws, day, t).is_file() for t in ("inference", "llm-infra", "risk"))


@dataclass(frozen=True)
class Bad:
    args: tuple[str, ...]
    said: str


BAD = {
    "date-and-span": Bad(("-d", DAYS[1], "--from", DAYS[0], "--to", DAYS[2]), "--date and --from/--to cannot be given"),
    "date-and-to": Bad(("-d", DAYS[1], "--to", DAYS[2]), "--date and --from/--to cannot be given"),
    "reversed": Bad(("--from", DAYS[2], "--to", DAYS[0]), f"--from {DAYS[2]} is after --to {DAYS[0]}"),
    "too-long": Bad(("--from", "2026-08-01", "--to", DAYS[2]), f"53 evenings, more than {MAX_EVENINGS} in one span"),
    "from-alone": Bad(("--from", DAYS[0]), "--from needs --to"),
    "to-alone": Bad(("--to", DAYS[0]), "--to needs --from"),
    "no-evening": Bad((), "no evening given"),
    "not-a-date": Bad(("--from", "2026-09-31", "--to", DAYS[2]), "--from '2026-09-31' is not a date"),
    "out": Bad(("--from", DAYS[0], "--to", DAYS[2], "--out", "elsewhere/"), "--out cannot be given with --from/--to"),
    "apply-patch-one-evening": Bad(("-d", DAYS[1], "--apply-patch"), "--apply-patch is for a span"),
}


@pytest.mark.parametrize("row", BAD.values(), ids=BAD.keys())
def test_a_span_asked_wrongly_is_one_line_and_nothing_written(row: Bad, ws: Path, tmp_path: Path) -> None:
    before = _files(tmp_path)
    with FakeOpenAI() as server:
        env = {**os.environ, "OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.base_url}
        r = predigest("run", str(ws), "-t", "inference", "--backend", "live", *row.args, env=env, cwd=tmp_path)
        assert server.count == 0
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: "), r.stderr
    assert row.said in r.stderr
    assert _files(tmp_path) == before


@pytest.mark.parametrize(
    ("argv", "resumed"),
    [
        pytest.param(["run", "ws", "--from", "2026-09-20", "--to", "2026-09-22"], "--from 2026-09-21", id="spaced"),
        pytest.param(["run", "ws", "--from=2026-09-20", "--to=2026-09-22"], "--from=2026-09-21", id="joined"),
        pytest.param(["run", "my ws", "--from", "2026-09-20", "--to", "2026-09-22"], "'my ws'", id="quoted"),
    ],
)
def test_the_resume_command_is_the_command_typed_from_the_failed_evening(argv: list[str], resumed: str) -> None:
    line = resume_command(argv, dt.date(2026, 9, 21))
    assert line.startswith("predigest run ")
    assert resumed in line and "2026-09-20" not in line and "2026-09-22" in line
