"""`predigest cassettes check`: does every cassette set of every case still answer its requests?

Per row (a case and one of its sets, the relayed ones included): the requests answered by an
exact cassette, those answered only under an older prompt (replayable with `--allow-stale`,
reported `stale`), and those no cassette answers; per cassette set: the files no case requests
(left over from an old prompt or a deleted case).
Nothing is sent anywhere: the request bodies are built as the extractor would build them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from agent.extract.llm import check_requests
from agent.extract.llm.reference import RequestCheck
from agent.pipeline import compose_requests
from eval.cases import Case, load_rows
from eval.runner import Variant, not_asked, row_requests, shared_plan


@dataclass(frozen=True)
class CaseCheck:
    case: str
    cassettes: Path
    answered: int
    stale: list[tuple[str, str]]
    missing: list[str]
    stale_allowed: bool = False  # the case replays this set's stale answers as they are (its `stale` key)


@dataclass(frozen=True)
class CassetteReport:
    cases: list[CaseCheck]
    unused: dict[Path, list[Path]]  # cassette folder -> files no case requests

    @property
    def ok(self) -> bool:
        lacking = any(c.missing or (c.stale and not c.stale_allowed) for c in self.cases)
        return not lacking and not any(self.unused.values())

    def to_json(self) -> dict[str, object]:
        """What `cassettes check --json` prints."""
        cases = [
            {
                **asdict(c),
                "cassettes": str(c.cassettes),
                "stale": [{"request": r, "prompt": p} for r, p in c.stale],
            }
            for c in self.cases
        ]
        unused = {str(k): [str(p) for p in v] for k, v in self.unused.items()}
        return {"ok": self.ok, "cases": cases, "unused": unused}


def check_cassettes(cases_dir: Path, variant: Variant | None = None, only: str | None = None) -> CassetteReport:
    """Each row's requests against its cassette folder, and the files of those folders no row uses.
    With `only` (one case or row), a folder other cases replay too (a shared set) is judged unused
    over every row that replays it, so another case's answers are never called unused."""
    variant = variant or Variant()
    checks: list[CaseCheck] = []
    used: dict[Path, set[Path]] = {}
    for case in _checked_rows(cases_dir, variant, only):
        folder, result = _row_used(case, variant, used)
        checks.append(
            CaseCheck(
                case.name, folder, len(result.answered), result.stale, result.missing, variant.stale_by_case(case)
            )
        )
    if only:
        mine, theirs = {c.case for c in checks}, dict[Path, set[Path]]()
        for case in _checked_rows(cases_dir, variant, None):
            if case.name not in mine:
                _row_used(case, variant, theirs)
        for folder, files in theirs.items():
            if folder in used:
                used[folder] |= files
    unused = {
        folder: sorted(p for p in folder.rglob("*.json") if p not in files) if folder.is_dir() else []
        for folder, files in used.items()
    }
    return CassetteReport(checks, unused)


def _checked_rows(cases_dir: Path, variant: Variant, only: str | None) -> list[Case]:
    """The rows a check asks: a span's later evenings ask what its earlier ones wrote, so their
    requests exist only as `eval` replays it."""
    rows = load_rows(cases_dir, only)
    return [c for c in rows if c.cassettes is not None and not not_asked(c, variant) and not c.is_span]


def _row_used(case: Case, variant: Variant, used: dict[Path, set[Path]]) -> tuple[Path, RequestCheck]:
    """One row's requests checked against its folder; the files they replay are added to `used`."""
    requests, llm = row_requests(case, variant.settings(case, "replay"))
    folder = llm.cassette_dir
    result = check_requests(requests, llm)
    used.setdefault(folder, set()).update(result.used)
    if not result.missing and (variant.stale_by_case(case) or not result.stale):
        # a composing answer is used when the row's evening asks it (from these answers); none is required.
        # A shared row's topic composes out of the all-topics evening's shared answers.
        s = variant.settings(case, "replay")
        topics = shared_plan(case, s).topics if case.extraction == "shared" else [case.topic]
        composing = [r for t, r in compose_requests(s, topics)[1].items() if t == case.topic]
        asked = check_requests(composing, llm)
        used[folder].update(asked.used)
        if asked.stale and not variant.stale_by_case(case):
            # an answer written for another request: the row falls to the floor unless it is written again
            return folder, replace(result, stale=[*result.stale, *asked.stale])
    return folder, result


@dataclass(frozen=True)
class Needs:
    """What a replayed variant lacks: the rows whose requests no cassette answers (or only one
    recorded under another prompt, when stale answers are not allowed)."""

    rows: tuple[str, ...]
    missing: int  # requests no cassette answers
    stale: int  # requests answered only under another prompt (replayable with --allow-stale)
    of_rows: int

    def say(self, who: str) -> str:
        """One line for the top of the report: that the variant has no answers of its own, that
        nothing is scored for it, and the ways to get them."""
        rows = f"its {self.of_rows} rows" if len(self.rows) == self.of_rows else f"{len(self.rows)} of its rows"
        other = f" ({self.stale} only under another prompt)" if self.stale else ""
        stale = "; --allow-stale scores those answers instead, marked stale" if self.stale and not self.missing else ""
        return (
            f"{who}: {rows} not run, nothing scored for it: the cassettes hold no answer to "
            f"{self.missing + self.stale} of its requests{other}; record them with a key (OPENAI_API_KEY, "
            "--backend record), or relay a model's answers (`predigest prompt show` for each request, then "
            f"`predigest cassettes relay`){stale}"
        )


def needs(cases_dir: Path, variant: Variant, only: str | None = None) -> Needs | None:
    """The rows a replayed variant cannot answer, or None when it can answer them all (or asks
    an endpoint: a live or recording variant answers everything it is asked)."""
    if variant.backend != "replay":
        return None
    report = check_cassettes(cases_dir, variant, only)
    lacking = [c for c in report.cases if c.missing or (c.stale and not (variant.allow_stale or c.stale_allowed))]
    if not lacking:
        return None
    return Needs(
        tuple(c.case for c in lacking),
        sum(len(c.missing) for c in lacking),
        0 if variant.allow_stale else sum(len(c.stale) for c in lacking),
        len(report.cases),
    )
