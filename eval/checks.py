"""`predigest cassettes check`: does every case's cassette set still answer its requests?

Per case: the requests answered by an exact cassette, those answered only under an older
prompt (replayable with `--allow-stale`, reported `stale`), and those no cassette answers; per
cassette set: the files no case requests (left over from an old prompt or a deleted case).
Nothing is sent anywhere: the request bodies are built as the extractor would build them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent.extract.llm import check_requests
from agent.pipeline import plan
from eval.cases import load_cases
from eval.runner import Variant


@dataclass(frozen=True)
class CaseCheck:
    case: str
    cassettes: Path
    answered: int
    stale: list[tuple[str, str]]
    missing: list[str]


@dataclass(frozen=True)
class CassetteReport:
    cases: list[CaseCheck]
    unused: dict[Path, list[Path]]  # cassette folder -> files no case requests

    @property
    def ok(self) -> bool:
        return not any(c.missing or c.stale for c in self.cases) and not any(self.unused.values())


def check_cassettes(cases_dir: Path, variant: Variant | None = None, only: str | None = None) -> CassetteReport:
    variant = variant or Variant()
    checks: list[CaseCheck] = []
    used: dict[Path, set[Path]] = {}
    for case in load_cases(cases_dir, only):
        if case.cassettes is None:
            continue
        ev = plan(variant.settings(case, "replay"), for_writing=False, own_tonight=False)
        folder = ev.llm.cassette_dir
        result = check_requests(ev.requests, ev.llm)
        used.setdefault(folder, set()).update(result.used)
        checks.append(CaseCheck(case.name, folder, len(result.answered), result.stale, result.missing))
    unused = {
        folder: sorted(p for p in folder.rglob("*.json") if p not in files) if folder.is_dir() else []
        for folder, files in used.items()
    }
    return CassetteReport(checks, unused)
