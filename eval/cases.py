"""Gold cases: one folder per evening and topic, holding what a run should have written.

```
eval/cases/<date>-<topic>/case.toml   workspace, topic, date, [cassettes], [shared], [model], description
eval/cases/<date>-<topic>/gold.md     the gold briefing, in the seed's format
```

A span case gives `from` and `to` instead of `date`, and a gold per evening, `gold-YYYY-MM-DD.md`:
its evenings are replayed in order on a copy of the workspace, each evening's E2 patch applied before
the next (`eval.span`), and each evening is scored against its own gold as a one-evening case is.

`cassettes` is one folder or a list of them. Each set is its own row of the eval, scored and
baselined on its own: the first under the case's name, each further one as `<case>@<folder>`
(the demo case replays its reference answers and, as `@world-relayed`, a real model's).
`shared` names sets that answer the shared requests of an evening (every topic of the workspace
in one request per document): each is a row `<case>@<folder>` too, the case's topic scored out
of that all-topics run, so the two ways of extracting stand side by side.

Paths in `case.toml` are relative to the repository root (the nearest folder above the case with
a `pyproject.toml`), so a case names `examples/world` the way the README does, and a case folder
can be read from any working directory.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agent.core.errors import PredigestError, did_you_mean, shown
from agent.core.settings import evening_date
from agent.plan.parse import parse
from agent.span import MAX_EVENINGS
from schemas.briefing import Briefing

CASE_FILE = "case.toml"
GOLD_FILE = "gold.md"
Extraction = Literal["per-topic", "shared"]
_KEYS = {"workspace", "topic", "date", "from", "to", "cassettes", "shared", "stale", "description", "model"}


def evening_gold(day: dt.date) -> str:
    """The gold of one evening of a span case: 'gold-2026-09-21.md'."""
    return f"gold-{day.isoformat()}.md"


class CaseError(PredigestError):
    """A case folder is missing its files, or its case.toml is malformed."""

    def __init__(self, message: str, *, path: Path, hint: str = "") -> None:
        super().__init__(
            f"{shown(path)}: {message}",
            hint=hint or "see eval/cases/2026-09-22-inference/case.toml for a working example",
        )
        self.path = path


@dataclass(frozen=True)
class Case:
    """One gold case, with every path resolved (absolute) so a runner never guesses."""

    name: str  # the row name: the folder name, e.g. "2026-09-22-inference", or "<folder>@<set>"
    folder: Path
    workspace: Path
    topic: str
    date: dt.date  # the evening; a span's first evening
    cassettes: Path | None  # None: the workspace's own [llm] cassettes
    description: str
    model: str = ""  # the model the case is asked with ("" : the workspace's [llm] model); --model wins
    more_cassettes: tuple[Path, ...] = ()  # further sets, each its own row (see `rows`)
    shared_cassettes: tuple[Path, ...] = ()  # sets of shared answers, each its own row (see `rows`)
    extraction: Extraction = "per-topic"  # how this row asks
    # sets of a real model's answers to an earlier prompt, replayed as they are (`--allow-stale`) and
    # marked stale until new answers are relayed: they cannot be re-asked here, nor re-keyed
    stale_sets: tuple[Path, ...] = ()

    @property
    def replay_stale(self) -> bool:
        """This row replays answers given to another prompt, as the case says of its set."""
        return self.cassettes is not None and self.cassettes in self.stale_sets

    last: dt.date | None = None  # a span case's last evening; None: a one-evening case
    gold_name: str = GOLD_FILE  # an evening of a span: `evening_gold(date)`

    @property
    def is_span(self) -> bool:
        return self.last is not None

    @property
    def evenings(self) -> list[dt.date]:
        """The evenings the case replays, in order: its one evening, or every evening of its span."""
        last = self.last or self.date
        return [self.date + dt.timedelta(days=i) for i in range((last - self.date).days + 1)]

    @property
    def label(self) -> str:
        """The case as the overview's case column names it: the folder, and for one evening of a span its
        month-day ('week-inference 11-16'), so a span's evenings read as rows of their own."""
        return f"{self.folder.name} {self.date:%m-%d}" if self.gold_name != GOLD_FILE else self.folder.name

    def evening(self, day: dt.date) -> Case:
        """One evening of a span case, as the row it is scored as: named `<row> MM-DD` (an offline
        row keeps its mark last), scored against that evening's gold."""
        base, sep, mark = self.name.partition(" · ")  # '<case> · offline': the mark stays last
        name = f"{base} {day:%m-%d}{sep}{mark}"
        return dataclasses.replace(self, name=name, date=day, last=None, gold_name=evening_gold(day))

    def rows(self) -> list[Case]:
        """One case per cassette set: the first keeps the case's name, each further one is
        named `<case>@<set folder>` so that it has its own line in the baseline."""
        first = dataclasses.replace(self, more_cassettes=(), shared_cassettes=())
        more: list[tuple[Path, Extraction]] = [(p, "per-topic") for p in self.more_cassettes]
        more += [(p, "shared") for p in self.shared_cassettes]
        return [first] + [
            dataclasses.replace(first, name=f"{self.folder.name}@{p.name}", cassettes=p, extraction=how)
            for p, how in more
        ]

    @property
    def gold_path(self) -> Path:
        return self.folder / self.gold_name

    def gold(self) -> Briefing:
        """The gold briefing, parsed by the same parser that reads our output."""
        return parse(self.gold_path.read_text(encoding="utf-8"), path=str(self.gold_path))


def repo_root(start: Path) -> Path:
    """The nearest folder at or above `start` with a pyproject.toml; `start` itself if none."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return start


def load_case(folder: Path, root: Path | None = None) -> Case:
    """Read and check one case folder; every problem names the file and what to fix."""
    folder = Path(folder).resolve()
    toml_path = folder / CASE_FILE
    data = _case_toml(folder, toml_path)
    first, last = _evenings(data, toml_path)
    _check_golds(folder, first, last)
    root = Path(root).resolve() if root else repo_root(folder)
    workspace = root / str(data["workspace"])
    if not workspace.is_dir():
        raise CaseError(f"workspace {workspace} does not exist", path=toml_path, hint="paths are relative to the repo")
    paths, shared, stale = (_folders(data, key, root, toml_path) for key in ("cassettes", "shared", "stale"))
    if not set(stale) <= set(paths):
        raise CaseError(
            "stale names a set that is not among cassettes", path=toml_path, hint="list it in cassettes too"
        )
    if shared and not paths:
        raise CaseError("shared sets need a cassettes set beside them", path=toml_path, hint="add cassettes = [...]")
    if last is not None and shared:
        raise CaseError("a span case has no shared rows", path=toml_path, hint="drop `shared`, or give one `date`")
    names = [p.name for p in paths + shared]
    if len(set(names)) != len(names):
        raise CaseError("two cassette sets share a folder name", path=toml_path, hint="each set names its own row")
    return Case(
        name=folder.name,
        folder=folder,
        workspace=workspace,
        topic=str(data["topic"]),
        date=first,
        cassettes=paths[0] if paths else None,
        description=str(data.get("description", "")).strip(),
        model=str(data.get("model", "")).strip(),
        more_cassettes=tuple(paths[1:]),
        shared_cassettes=tuple(shared),
        stale_sets=tuple(stale),
        last=last,
    )


def _evenings(data: dict[str, object], toml_path: Path) -> tuple[dt.date, dt.date | None]:
    """(the evening, None) for a one-evening case; (first, last) for a span case."""
    if "date" in data:
        if "from" in data or "to" in data:
            raise CaseError("give date (one evening) or from and to (a span), not both", path=toml_path)
        return _date(data["date"], toml_path), None
    if "from" not in data or "to" not in data:
        given = "from" if "from" in data else "to" if "to" in data else ""
        missing = "date" if not given else "to" if given == "from" else "from"
        raise CaseError(f"missing key {missing!r}", path=toml_path, hint="write date = D, or from = D1 and to = D2")
    first, last = _date(data["from"], toml_path, "from"), _date(data["to"], toml_path, "to")
    if first > last:
        raise CaseError(f"from {first} is after to {last}", path=toml_path, hint="give the earlier evening as from")
    if (n := (last - first).days + 1) > MAX_EVENINGS:
        raise CaseError(f"from {first} to {last} is {n} evenings, more than {MAX_EVENINGS}", path=toml_path)
    return first, last


def _check_golds(folder: Path, first: dt.date, last: dt.date | None) -> None:
    """A one-evening case has `gold.md`; a span case has one gold per evening, and no `gold.md`."""
    if last is None:
        if not (folder / GOLD_FILE).is_file():
            raise CaseError(f"no {GOLD_FILE}", path=folder, hint=f"add the gold briefing as {GOLD_FILE}")
        return
    if (folder / GOLD_FILE).is_file():
        raise CaseError(
            f"a span case has a gold per evening, not {GOLD_FILE}", path=folder, hint=f"name it {evening_gold(first)}"
        )
    days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
    if missing := [evening_gold(d) for d in days if not (folder / evening_gold(d)).is_file()]:
        raise CaseError(
            f"no {', '.join(missing)}", path=folder, hint="add each evening's gold briefing as gold-YYYY-MM-DD.md"
        )


def _case_toml(folder: Path, toml_path: Path) -> dict[str, object]:
    """The case's `case.toml`, with the keys every case needs, beside its gold briefing."""
    if not toml_path.is_file():
        raise CaseError(f"no {CASE_FILE}", path=folder, hint=f"add {CASE_FILE} with workspace, topic and date")
    try:
        data = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise CaseError(f"not valid TOML: {e}", path=toml_path) from e
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise CaseError(
            f"unknown key(s) {', '.join(unknown)}", path=toml_path, hint=f"known: {', '.join(sorted(_KEYS))}"
        )
    for key in ("workspace", "topic"):  # the evening (`date`, or `from` and `to`): `_evenings`
        if key not in data:
            raise CaseError(f"missing key {key!r}", path=toml_path)
    return data


def _folders(data: dict[str, object], key: str, root: Path, toml_path: Path) -> list[Path]:
    sets = data.get(key) or []
    sets = [sets] if isinstance(sets, str) else sets
    if not isinstance(sets, list) or not all(isinstance(x, str) and x for x in sets):
        raise CaseError(f"{key} must be a folder or a list of folders", path=toml_path)
    return [root / x for x in sets]


def load_cases(cases_dir: Path, only: str | None = None, root: Path | None = None) -> list[Case]:
    """Every case under `cases_dir` in name order (= date order), or just the one named `only`
    (a row name `<case>@<set>` picks the case; `load_rows` then keeps only that row)."""
    cases_dir = Path(cases_dir)
    only = only.split("@", 1)[0] if only else only
    if not cases_dir.is_dir():
        raise CaseError("the cases folder does not exist", path=cases_dir, hint=_where_cases(cases_dir))
    folders = sorted(p for p in cases_dir.iterdir() if p.is_dir() and (p / CASE_FILE).is_file())
    if only is not None:
        picked = [p for p in folders if p.name == only]
        if not picked:
            names = ", ".join(p.name for p in folders) or "none"
            hint = did_you_mean(only, [p.name for p in folders]) + f"pick one of: {names}"
            raise CaseError(f"no case named {only!r}", path=cases_dir, hint=hint)
        folders = picked
    if not folders:
        raise CaseError(f"no case folder (with a {CASE_FILE}) inside", path=cases_dir)
    return [load_case(p, root) for p in folders]


def _where_cases(looked: Path) -> str:
    """Where the cases are, said from where the user stands: the repository this predigest runs
    from holds them (an editable install), else the user must name the folder."""
    repo_cases = Path(__file__).resolve().parent / "cases"
    if repo_cases.is_dir() and repo_cases != looked.absolute():
        return f"pass --cases {shown(repo_cases)} (the repository predigest runs from), or run from its root"
    return "pass --cases with the folder that holds the cases (eval/cases in the repository)"


def load_rows(cases_dir: Path, only: str | None = None, root: Path | None = None) -> list[Case]:
    """Every row (case × cassette set) to run; `only` names a case (all its rows) or one row."""
    rows = [row for case in load_cases(cases_dir, only, root) for row in case.rows()]
    if only and "@" in only:
        picked = [r for r in rows if r.name == only]
        if not picked:
            names = ", ".join(r.name for r in rows)
            hint = did_you_mean(only, [r.name for r in rows]) + f"pick one of: {names}"
            raise CaseError(f"no row named {only!r}", path=Path(cases_dir), hint=hint)
        return picked
    return rows


def _date(value: object, path: Path, key: str = "date") -> dt.date:
    """TOML gives a date (or a datetime); anything else goes through the one date parser."""
    if isinstance(value, dt.datetime):
        value = value.date()
    try:
        return evening_date(value if isinstance(value, dt.date) else str(value), flag=key)
    except PredigestError as e:
        raise CaseError(e.message, path=path, hint=f"write {key} = 2026-09-22") from None
