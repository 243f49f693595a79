"""Every run is logged: one `RunLog` (schemas/runlog.py) appended to a SQLite file in the user's
data folder, read back by `predigest logs` and `predigest eval --compare`.

Modelled on simonw/llm's `logs.db`: the schema grows by numbered migrations recorded in a
`_migrations` table, so an old log opens in a new predigest and gains the new tables. A row
holds the whole record as JSON (what `logs show` prints) and the columns a listing or a query
needs; the `calls` table names every request by its hash, so "which runs asked this exact
request" is one query. Logging never stops a run: a log that cannot be written is a warning.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import secrets
import sqlite3
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import platformdirs
from pydantic import ValidationError

from agent.core.errors import PredigestError
from agent.extract import ExtractionResult
from agent.pipeline import Outcome, RunReport, answered_by
from agent.rules.claims import with_refs
from agent.write.trace import finding_record
from schemas.runlog import CallEntry, EveningEntry, RunLog

logger = logging.getLogger("predigest")

LOGS_ENV = "PREDIGEST_LOGS_DB"  # a path, or "off" to log nothing


def logs_path() -> Path | None:
    """`logs.db` in the user's data folder (platformdirs), `$PREDIGEST_LOGS_DB`, or None when off."""
    given = os.environ.get(LOGS_ENV, "").strip()
    if given.lower() == "off":
        return None
    return Path(given) if given else Path(platformdirs.user_data_dir("predigest")) / "logs.db"


# what is said when the log is off: "no runs logged in None" said neither that nor how to undo it
LOG_OFF = f"the run log is off ({LOGS_ENV}=off)"
LOG_ON = f"unset {LOGS_ENV} (or set it to a file) to log the runs from now on"


# --- the database ---------------------------------------------------------------------------------

MIGRATIONS: list[tuple[str, str]] = [
    (
        "m001_runs",
        """CREATE TABLE runs (
            id TEXT PRIMARY KEY, time TEXT NOT NULL, kind TEXT NOT NULL, command TEXT NOT NULL,
            git TEXT, prompt TEXT, model TEXT, backend TEXT, ok INTEGER NOT NULL, record TEXT NOT NULL
        );
        CREATE INDEX runs_time ON runs(time);""",
    ),
    (
        "m002_calls",
        """CREATE TABLE calls (
            run_id TEXT NOT NULL REFERENCES runs(id), evening TEXT NOT NULL, doc TEXT NOT NULL,
            part INTEGER NOT NULL, request_hash TEXT, source TEXT, input_tokens INTEGER,
            output_tokens INTEGER, latency_s REAL, cost_usd REAL, stale TEXT
        );
        CREATE INDEX calls_request ON calls(request_hash);
        CREATE INDEX calls_run ON calls(run_id);""",
    ),
]


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating) the log and apply every migration it has not had, each in one transaction."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, timeout=10)
        db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
        done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
        for name, sql in MIGRATIONS:
            if name in done:
                continue
            with db:
                for statement in filter(str.strip, sql.split(";")):
                    db.execute(statement)
                db.execute("INSERT INTO _migrations VALUES (?, ?)", (name, _now().isoformat()))
    except (OSError, sqlite3.DatabaseError) as e:
        raise PredigestError(
            f"the run log {path} cannot be opened: {e}",
            hint=f"move the file away (a new one is created), or set {LOGS_ENV}=off",
        ) from e
    return db


# the columns of `calls` after the run id and the evening, in the table's order
_CALL_COLUMNS = (
    "doc",
    "part",
    "request_hash",
    "source",
    "input_tokens",
    "output_tokens",
    "latency_s",
    "cost_usd",
    "stale",
)


def append(record: RunLog, path: Path) -> None:
    run = (record.id, record.time, record.kind, json.dumps(record.command, ensure_ascii=False), record.git)
    run += (record.prompt, record.model, record.backend, int(record.ok), record.model_dump_json())
    calls = [
        (record.id, ev.name, *(getattr(c, name) for name in _CALL_COLUMNS)) for ev in record.evenings for c in ev.calls
    ]
    with closing(connect(path)) as db, db:
        db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", run)
        db.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", calls)


def log_quietly(record: RunLog, path: Path | None) -> Path | None:
    """Append, or say why not in one warning: a full disk must not turn a finished run into a failure."""
    if path is None:
        return None
    try:
        append(record, path)
    except (PredigestError, sqlite3.DatabaseError, OSError) as e:
        logger.warning("run not logged: %s", e)
        return None
    return path


@dataclass(frozen=True)
class LoggedRun:
    """A row of `predigest logs`."""

    id: str
    time: str
    kind: str
    command: list[str]
    git: str
    prompt: str
    model: str
    backend: str
    ok: bool


def list_runs(path: Path, limit: int = 20, kind: str | None = None) -> list[LoggedRun]:
    """The newest runs first, in the order they were logged (two runs can share a second);
    only those of `kind` ('run' or 'eval') when given."""
    if not path.is_file():
        return []
    with closing(connect(path)) as db:
        rows = db.execute(
            "SELECT id, time, kind, command, git, prompt, model, backend, ok FROM runs"
            " WHERE ? IS NULL OR kind = ? ORDER BY rowid DESC LIMIT ?",
            (kind, kind, limit),
        ).fetchall()
    return [_logged(path, r) for r in rows]


def _logged(path: Path, r: tuple[Any, ...]) -> LoggedRun:
    """One row of `runs`; a row no predigest wrote (a command that is not a JSON list) is an error
    that names it, not a crash."""
    try:
        command = json.loads(r[3])
        if not isinstance(command, list) or not all(isinstance(a, str) for a in command):
            raise ValueError("command is not a list of strings")
        return LoggedRun(str(r[0]), str(r[1]), str(r[2]), command, r[4], r[5], r[6], r[7], bool(r[8]))
    except (TypeError, ValueError) as e:
        raise PredigestError(
            f"logged run {r[0]} in {path} is malformed ({e})",
            hint=f"move {path} away (a new log is created), or delete that row with sqlite3",
        ) from None


_BACK = re.compile(r"^last(?:~(\d+))?$")


def load_run(path: Path | None, ref: str, kind: str | None = None) -> RunLog:
    """A run by id, unique id prefix, `last` or `last~N` (N runs before the last). With `kind`
    ('eval' where an eval is expected), `last` and `last~N` count runs of that kind only, so a
    `predigest run` in between does not shift them."""
    if path is None:
        raise PredigestError(LOG_OFF, hint=LOG_ON)
    if not path.is_file():
        raise PredigestError(f"no run log at {path}", hint="run `predigest run` or `predigest eval` first")
    with closing(connect(path)) as db:
        if m := _BACK.match(ref):
            rows = db.execute(
                "SELECT id, record FROM runs WHERE ? IS NULL OR kind = ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (kind, kind, int(m.group(1) or 0)),
            ).fetchall()
        else:
            rows = db.execute("SELECT id, record FROM runs WHERE id LIKE ? ORDER BY id", (ref + "%",)).fetchall()
    if not rows:
        what = f"{kind} " if kind and _BACK.match(ref) else ""
        raise PredigestError(
            f"no logged {what}run {ref!r} in {path}",
            hint=f"`predigest logs{' --kind ' + kind if what else ''}` lists them",
        )
    if len(rows) > 1:
        raise PredigestError(
            f"{ref!r} names {len(rows)} runs ({', '.join(r[0] for r in rows[:4])}…)", hint="give more of the id"
        )
    try:
        return RunLog.model_validate_json(rows[0][1])
    except ValidationError as e:
        raise PredigestError(
            f"logged run {rows[0][0]} does not read as a run record ({e.error_count()} problem(s))",
            hint="it was written by another predigest version; run it again",
        ) from e


# --- building a record ------------------------------------------------------------------------------


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).astimezone()


def git_revision() -> str:
    """The working folder's revision ('+dirty' when it has changes), or '' outside a repository."""
    try:

        def git(*args: str) -> str:
            return subprocess.run(["git", *args], capture_output=True, text=True, timeout=5, check=True).stdout.strip()

        rev = git("rev-parse", "--short=12", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return ""
    return rev + ("+dirty" if dirty else "")


def call_entry(r: ExtractionResult) -> CallEntry:
    """The call as logged: its request's place, what its record says, its answer. The record's
    provenance is left out: the evening's `model` (`answered_by`) says who answered."""
    rec = r.record
    return CallEntry(
        doc=r.request.doc_path,
        part=r.request.chunk,
        parts=r.request.chunks,
        request_hash=rec.request_hash,
        source=rec.source,
        model=rec.model,
        prompt=rec.prompt,
        attempts=rec.attempts,
        input_tokens=rec.input_tokens,
        output_tokens=rec.output_tokens,
        cached_tokens=rec.cached_tokens,
        latency_s=rec.latency_s,
        cost_usd=rec.cost_usd,
        cassette=rec.cassette,
        topics=rec.topics,
        stale=rec.stale,
        error=rec.error,
        answer=r.extraction,
    )


def evening_entry(
    name: str,
    outcome: Outcome,
    results: Sequence[ExtractionResult],
    *,
    backend: str,
    cassettes: str = "",
) -> EveningEntry:
    ev = outcome.evening
    offline = backend == "offline"
    return EveningEntry(
        name=name,
        workspace=str(ev.ws.root),
        topic=ev.settings.topic,
        date=ev.settings.date.isoformat(),
        prompt="" if offline else str(ev.template.stamp),
        model=answered_by([r.record for r in results], ev.llm.model),
        backend=backend,
        cassettes="" if offline else cassettes or ev.llm.cassette_dir.name,
        stale=list(dict.fromkeys(r.record.stale for r in results if r.record.stale)),
        calls=[call_entry(r) for r in results],
        findings=[finding_record(f) for f in outcome.findings],
        markdown=outcome.markdown,
        ok=not outcome.partial,
    )


def new_record(
    kind: str, command: Sequence[str], settings: Mapping[str, object], evenings: list[EveningEntry]
) -> RunLog:
    """A record stamped now, with this folder's git revision and predigest's version."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        ours = version("predigest")
    except PackageNotFoundError:
        ours = ""
    now = _now()
    # the run's stamp is its first row that was asked with a prompt (not offline, not failed before asking)
    first = next((e for e in evenings if e.prompt), evenings[0] if evenings else None)
    return RunLog(
        id=f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(2)}",  # sortable by time, unique by a random tail
        time=now.isoformat(timespec="seconds"),
        kind=kind,  # type: ignore[arg-type]
        command=list(command),
        git=git_revision(),
        version=ours,
        settings=dict(settings),
        prompt=first.prompt if first else "",
        model=first.model if first else "",
        backend=first.backend if first else "",
        evenings=evenings,
        ok=all(e.ok for e in evenings),
    )


def run_log(report: RunReport, command: Sequence[str]) -> RunLog:
    """`predigest run` as a run-log entry: one evening."""
    ev = report.evening
    name = f"{ev.settings.topic} {ev.settings.date}"
    entry = evening_entry(name, report.outcome, report.outcome.results, backend=report.backend)
    settings = {**ev.llm.public_dict(), "prompt_file": str(ev.settings.prompt_file or "")}
    return new_record("run", command, {k: str(v) if isinstance(v, Path) else v for k, v in settings.items()}, [entry])


# --- reading a record back: each claim's fate ----------------------------------------------------


class _FindingLike(Protocol):
    rule: str
    subject: str
    doc: str
    decision: str
    detail: str
    ref: object  # the claim: its ClaimRef, or that written out; empty when the finding is about a document
    target: str


@dataclass(frozen=True)
class ClaimFate:
    """What became of one claim the model returned, and the finding(s) that decided it."""

    stage: str  # increment / secondary anchor / ungrounded / covered / merged / demoted by select / …
    detail: str
    steps: tuple[str, ...] = ()  # every finding about the claim, in the order the rules ran


def claim_fate(findings: Sequence[_FindingLike], ref: str) -> ClaimFate:
    """Follow the claim `ref` names (its `ClaimRef` written out, as `with_refs` gives it) through the
    findings: the last deciding rule wins; a merged claim takes the fate of the claim it was
    merged into (the merge finding's target names that claim)."""
    steps = [f for f in findings if f.ref and str(f.ref) == ref]
    lines = tuple(f"[{f.rule}] {f.decision}" + (f": {f.detail}" if f.detail else "") for f in steps)
    for f in reversed(steps):
        stage = _stage(f)
        if stage is None:
            continue
        into = next((x for x in findings if x.ref and str(x.ref) == f.target), None) if stage == "merged" else None
        if into is not None:
            lead = claim_fate([x for x in findings if x is not f], f.target)
            return ClaimFate("merged", f"into {into.subject!r} ({into.doc}), which is {lead.stage}", lines)
        return ClaimFate(stage, f.detail, lines)
    return ClaimFate("no decision", "no rule reported on this claim", lines)


def _stage(f: _FindingLike) -> str | None:
    """The stage a finding decides, or None for one that leaves the claim on its way."""
    match (f.rule, f.decision):
        case ("grounding", "dropped"):
            return "ungrounded"
        case ("dedupe", "already covered"):
            return "covered"
        case ("merge", "merged"):
            return "merged"
        case ("select", "increment"):
            return "increment"
        case ("select", "secondary anchor"):
            return "past the limit" if f.detail.startswith("past the limit") else "demoted by select"
        case ("select", "dropped"):
            return "dropped by select"
        case ("adjacent", _):
            return "adjacent"
    return None


_OLDER_LOG = ClaimFate(
    "not recorded", "logged before findings named claims by their place in the answer; `logs show RUN` lists them"
)


def _fate(record: RunLog, e: EveningEntry, ref: str) -> ClaimFate:
    return claim_fate(e.findings, ref) if record.schema_version >= 2 else _OLDER_LOG


@dataclass(frozen=True)
class DocAnswer:
    """One document's answer in a logged run, and each claim's fate."""

    evening: EveningEntry
    calls: list[CallEntry]
    fates: list[tuple[str, str, ClaimFate]]  # (claim reference, title, fate), in the answers' order


def doc_answer(record: RunLog, doc: str, evening: str | None = None) -> DocAnswer:
    """The document's answer in the run's first evening that asked for it (or the one named)."""
    doc = doc.removeprefix("./")
    pool = [e for e in record.evenings if evening in (None, e.name)]
    for e in pool:
        calls = [c for c in e.calls if c.doc == doc or (doc and c.doc.endswith("/" + doc))]
        if calls:
            claims = [pair for c in calls if c.answer for pair in with_refs(c.doc, c.part, c.answer.claims)]
            return DocAnswer(e, calls, [(str(ref), x.title, _fate(record, e, str(ref))) for ref, x in claims])
    asked = sorted({c.doc for e in pool for c in e.calls})
    raise PredigestError(
        f"run {record.id} has no answer for {doc}",
        hint=f"documents it asked about: {', '.join(asked[:6]) or 'none'}{' …' if len(asked) > 6 else ''}",
    )
