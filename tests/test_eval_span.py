"""Span cases of the eval (issue #41 item 6): a case of several evenings, replayed in order through
`run --from --to --apply-patch` on a copy of its workspace, each evening scored against its own gold,
and the span scored as a whole (re-reported increments; the living document's subjects twice,
disputed figures written as fact, growth).

The span here is the demo world's 9-21 → 9-22 for inference, against the golds of the two
one-evening cases, run by the offline extractor: the reference cassettes of those cases answer each
evening as it was asked alone, and a span's second evening asks with the first evening's briefing and
patched living document in its prompt, so no committed answer fits it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent.plan.parse import parse
from agent.write.living import read_living, text_hash
from eval.cases import CaseError, load_case, load_rows
from eval.overview import markdown
from eval.runner import EvalReport, Variant, evaluate, offline_row, run_span_case
from eval.span import replayed
from eval.span_metrics import growth, living_disputed, re_reported, subjects_twice
from schemas.briefing import KeyPoint, SourceRef, VerifyItem
from tests.paths import ROOT, WORLD, copy_world

CASES = ROOT / "eval" / "cases"
DAYS = (dt.date(2026, 9, 21), dt.date(2026, 9, 22))
GOLDS = {d: CASES / f"{d.isoformat()}-inference" / "gold.md" for d in DAYS}
LIVING = "living/inference.md"
OWN_INBOX = "inbox/tom"


def _span_case(folder: Path, workspace: Path = WORLD, extra: str = "") -> Path:
    """A span case of the two demo evenings, its golds the one-evening cases' golds."""
    folder.mkdir(parents=True)
    for day, gold in GOLDS.items():
        (folder / f"gold-{day.isoformat()}.md").write_bytes(gold.read_bytes())
    toml = f'workspace = "{workspace}"\ntopic = "inference"\nfrom = {DAYS[0]}\nto = {DAYS[1]}\n{extra}'
    (folder / "case.toml").write_text(toml, encoding="utf-8")
    return folder


def _tree(root: Path) -> str:
    """One hash of every file under `root` with its path: a workspace written into changes it."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


# --- declaring a span case ---------------------------------------------------------------------------


def test_a_span_case_loads_with_an_evening_row_per_gold(tmp_path: Path) -> None:
    case = load_case(_span_case(tmp_path / "span-inference"))
    assert case.is_span and case.evenings == list(DAYS) and case.date == DAYS[0]
    assert [r.name for r in case.rows()] == ["span-inference"]
    evening = case.evening(DAYS[1])
    assert (evening.name, evening.label, evening.is_span) == ("span-inference 09-22", "span-inference 09-22", False)
    assert evening.gold().increments == parse(GOLDS[DAYS[1]].read_text(encoding="utf-8")).increments
    assert offline_row(case).evening(DAYS[0]).name == "span-inference 09-21 · offline"
    one = load_case(CASES / "2026-09-22-inference")  # a one-evening case is as it was
    assert not one.is_span and one.evenings == [DAYS[1]] and one.label == one.name == "2026-09-22-inference"


@dataclasses.dataclass(frozen=True)
class Bad:
    toml: str  # after workspace and topic
    said: str
    golds: tuple[str, ...] = ("gold-2026-09-21.md", "gold-2026-09-22.md")


BAD = {
    "date-and-from": Bad("date = 2026-09-21\nfrom = 2026-09-21\nto = 2026-09-22\n", "give date (one evening) or from"),
    "from-alone": Bad("from = 2026-09-21\n", "missing key 'to'"),
    "to-alone": Bad("to = 2026-09-22\n", "missing key 'from'"),
    "no-evening": Bad("", "missing key 'date'"),
    "reversed": Bad("from = 2026-09-22\nto = 2026-09-21\n", "from 2026-09-22 is after to 2026-09-21"),
    "not-a-date": Bad('from = 2026-09-21\nto = "2026-09-31"\n', "to '2026-09-31' is not a date"),
    "too-long": Bad("from = 2026-08-01\nto = 2026-09-22\n", "53 evenings, more than 31"),
    "a-gold-missing": Bad("from = 2026-09-21\nto = 2026-09-22\n", "no gold-2026-09-22.md", ("gold-2026-09-21.md",)),
    "gold-md": Bad(
        "from = 2026-09-21\nto = 2026-09-22\n",
        "a span case has a gold per evening, not gold.md",
        ("gold.md", "gold-2026-09-21.md", "gold-2026-09-22.md"),
    ),
    "shared": Bad('from = 2026-09-21\nto = 2026-09-22\ncassettes = "a/x"\nshared = "b/y"\n', "no shared rows"),
    "one-evening-no-gold": Bad("date = 2026-09-21\n", "no gold.md"),
}


@pytest.mark.parametrize("row", BAD.values(), ids=BAD.keys())
def test_a_span_case_declared_wrongly_is_a_one_line_error(row: Bad, tmp_path: Path) -> None:
    folder = tmp_path / "span-x"
    folder.mkdir()
    for name in row.golds:
        (folder / name).write_bytes(GOLDS[DAYS[0]].read_bytes())
    (folder / "case.toml").write_text(f'workspace = "{WORLD}"\ntopic = "inference"\n{row.toml}', encoding="utf-8")
    with pytest.raises(CaseError) as e:
        load_case(folder)
    assert row.said in e.value.message and "\n" not in e.value.message


# --- replaying a span -------------------------------------------------------------------------------


def test_the_evenings_run_in_order_each_on_the_one_before_it_and_its_patch(tmp_path: Path) -> None:
    """Evening 2 read evening 1's briefing (not the workspace's own 9-21 briefing) as its baseline, and
    the living document as evening 1's patch left it; the case's workspace is never written."""
    case = offline_row(load_case(_span_case(tmp_path / "span-inference")))
    world = _tree(WORLD)
    with replayed(case, Variant().settings(case, "offline")) as rep:
        assert [e.date for e in rep.report.evenings] == list(DAYS)
        assert all(rep.error(d) == "" for d in DAYS)
        first, second = (rep.outcome(d) for d in DAYS)
        assert first is not None and second is not None
        baseline = f"{OWN_INBOX}/{DAYS[0].isoformat()}-inference-e1prep.md"
        read = {d.path: d.text for d in second.evening.docs}
        assert read[baseline] == first.markdown
        assert read[baseline] != (WORLD / baseline).read_text(encoding="utf-8")
        # the patch went in between: each evening read the document the evening before left
        (patched_1,) = rep.report.evenings[0].patched
        (patched_2,) = rep.report.evenings[1].patched
        assert patched_1.history is not None and patched_2.history is not None
        after_first = read_living(patched_2.history.read_bytes(), LIVING)  # what evening 2's patch replaced
        living = [o.record().living for o in (first, second)]
        assert living[0] is not None and living[1] is not None
        assert (
            living[0].sha256 == text_hash(rep.before) == text_hash(read_living((WORLD / LIVING).read_bytes(), LIVING))
        )
        assert living[1].sha256 == text_hash(after_first) != text_hash(rep.before)
        assert rep.after != after_first
        assert rep.workspace != WORLD and rep.workspace.is_dir()
    assert not rep.workspace.exists()
    assert _tree(WORLD) == world


@pytest.fixture(scope="module")
def span_eval(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, EvalReport]]:
    """`evaluate` over a cases folder holding the span case alone, offline, writing a fresh baseline."""
    tmp = tmp_path_factory.mktemp("span-eval")
    cases = tmp / "cases"
    _span_case(cases / "span-inference")
    baseline = tmp / "baseline.json"
    report = evaluate(cases, baseline, update_baseline=True, variant=Variant(backend="offline"))
    yield baseline, report


def test_each_evening_is_a_row_scored_as_a_one_evening_row_and_the_span_has_its_own(
    span_eval: tuple[Path, EvalReport],
) -> None:
    baseline, report = span_eval
    names = [r.name for r in report.results]
    assert names == [
        "span-inference 09-21",
        "span-inference 09-22",
        "span-inference",
        "span-inference 09-21 · offline",
        "span-inference 09-22 · offline",
        "span-inference · offline",
    ]
    rows = {r.name: r for r in report.results}
    assert all(r.ok for r in rows.values()), [(r.name, r.run.errors) for r in rows.values()]
    # the first evening reads what the one-evening case reads, so it scores as that case's offline row
    committed = json.loads((ROOT / "eval" / "baseline.json").read_text(encoding="utf-8"))["cases"]
    first = rows["span-inference 09-21 · offline"].run.scores
    for metric, entry in committed["2026-09-21-inference · offline"].items():
        assert first[metric].value == pytest.approx(entry["score"], abs=1e-6), metric
    span = rows["span-inference · offline"].run.scores
    assert set(span) == {"re_reported", "subjects_twice", "living_disputed", "growth"}
    assert span["subjects_twice"].value == 0 and span["re_reported"].value == 0
    assert span["growth"].value > 0
    written = json.loads(baseline.read_text(encoding="utf-8"))["cases"]
    assert set(written) == set(names) and set(written["span-inference"]) == set(span)


def test_the_overview_shows_the_evenings_and_the_span_columns(span_eval: tuple[Path, EvalReport]) -> None:
    _, report = span_eval
    lines = markdown(report).splitlines()
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    assert head[-8:-4] == ["re-reported", "subjects twice", "disputed in living doc", "growth (B/evening)"]
    cases = [[c.strip() for c in ln.strip("|").split("|")][1] for ln in lines[2:]]
    assert cases == ["span-inference 09-21", "span-inference 09-22", "span-inference"] * 2
    span_row = [c.strip() for c in lines[4].strip("|").split("|")]
    assert span_row[2] == "offline extractor · span of 2 evenings"
    assert span_row[3] == "—" and span_row[head.index("subjects twice")] == "0"


def test_a_second_run_meets_the_baseline_and_a_planted_duplicate_line_fails_it(
    span_eval: tuple[Path, EvalReport], tmp_path: Path
) -> None:
    """The same span again is `ok`; with a top-level line of the living document doubled before it
    runs, `subjects twice` counts it (the line named) and the row fails its baseline."""
    baseline, _ = span_eval
    again = evaluate(baseline.parent / "cases", baseline, variant=Variant("offline"))
    assert again.ok, [(r.name, r.run.errors) for r in again.results if not r.ok]
    ws = copy_world(tmp_path / "world")
    living = ws / LIVING
    text = living.read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("- **NVIDIA EPD"))
    living.write_text(text.replace(line, f"{line}\n- **NVIDIA EPD（Encode-Prefill-Decode）**：再写一遍。"), "utf-8")
    cases = tmp_path / "cases"
    _span_case(cases / "span-inference", ws)
    planted = evaluate(cases, baseline, variant=Variant("offline"), only="span-inference")
    span = next(r for r in planted.results if r.name == "span-inference")
    assert span.run.scores["subjects_twice"].value == 1, span.run.scores["subjects_twice"]
    assert "NVIDIA EPD" in span.run.scores["subjects_twice"].extra[0]
    assert not span.ok and [m.metric for m in span.metrics if m.failed] == ["subjects_twice"]


def test_a_span_no_answer_replays_is_a_row_error_not_a_crash(tmp_path: Path) -> None:
    """Replayed from the reference answers of the one-evening cases, the second evening's requests
    (asked with the first evening's briefing in them) have no answer: its row and the span's say so."""
    folder = _span_case(tmp_path / "span-inference", extra=f'cassettes = "{ROOT / "cassettes" / "world-0921"}"\n')
    (r1, r2, span) = run_span_case(load_case(folder), backend="replay")
    assert r1.card is not None and not r1.errors
    assert r2.card is None and "no cassette for" in r2.errors[0]
    assert span.card is None and span.errors == ("no briefing of span-inference 09-22",)


def test_load_rows_keeps_one_row_per_span_case(tmp_path: Path) -> None:
    _span_case(tmp_path / "span-inference")
    assert [r.name for r in load_rows(tmp_path)] == ["span-inference"]


# --- the span's own scores, on planted briefings and documents ----------------------------------------

G1, G2 = (parse(GOLDS[d].read_text(encoding="utf-8")) for d in DAYS)


def test_re_reported_counts_old_news_told_again_and_not_a_supplement_or_a_new_subject() -> None:
    """Evening 2 = the 9-22 gold plus two of 9-21's increments told again from a 9-22 document: one
    word for word (re-reported), one with a figure 9-21 did not have (a supplement, not counted)."""
    again = G1.increments[2].model_copy(
        update={"number": 7, "sources": [SourceRef(ref="inbox/jay/2026-09-22-1450-jay-engineering-filter.md")]}
    )
    more = G1.increments[5]
    supplement = more.model_copy(
        update={"number": 8, "key_points": [*more.key_points, KeyPoint(text="复现实验：TTFT 再降 9.5%")]}
    )
    second = G2.model_copy(update={"increments": [*G2.increments, again, supplement]})
    s = re_reported([(DAYS[0], G1), (DAYS[1], second)])
    assert s.value == 1
    assert s.extra == (f"09-22 增量 7：{again.title} ← 09-21 增量 3：{again.title}",)
    assert len(s.matched) == 1 and "adds 9.5%" in s.matched[0] and "增量 8" in s.matched[0]
    assert re_reported([(DAYS[0], G1), (DAYS[1], G2)]).value == 0  # the editors told nothing twice


LIVING_TEXT = (WORLD / LIVING).read_text(encoding="utf-8")
EPD = next(ln for ln in LIVING_TEXT.splitlines() if ln.startswith("- **NVIDIA EPD"))


@pytest.mark.parametrize(
    ("added", "twice"),
    [
        ("", 0),
        ("- **NVIDIA EPD（Encode-Prefill-Decode）**：又写了一行。", 1),  # one subject, another line
        ("  - NVIDIA EPD（Encode-Prefill-Decode）：9-22 补充。", 0),  # a line under its anchor adds to it
        ("- **Internet for the KV Cache 续**（arXiv 2608.01526）：同一篇论文。", 1),  # one arXiv ID
        ("- **NVIDIA Dynamo 1.0**：新的主题。", 0),
    ],
    ids=["as-is", "same-subject", "sub-line", "same-arxiv", "new-subject"],
)
def test_subjects_twice(added: str, twice: int) -> None:
    text = LIVING_TEXT.replace(EPD, f"{EPD}\n{added}") if added else LIVING_TEXT
    assert subjects_twice(text).value == twice


DISPUTE = VerifyItem(
    number=1, title="Zero-Copy TTFT 降幅：27% 还是 18%", risk="中", problem="两份来源不一", suggestion="查原文"
)


@pytest.mark.parametrize(
    ("line", "counted"),
    [
        ("- **Zero-Copy 复现**：端到端 TTFT 降低 27%。（9-22 inference e1prep）", 1),
        ("- **Zero-Copy 复现**：TTFT 降幅 27% 还是 18% 待核实。（9-22 inference e1prep）", 0),
        ("- **Zero-Copy 复现**：TTFT 降低 2.7 倍。（9-22 inference e1prep）", 0),
        ("- **Zero-Copy 复现**：端到端 TTFT 降低 27%。（9-23 inference e1prep 补充）", 0),
        ("- **Zero-Copy 复现**：端到端 TTFT 降低 27%。", 1),
    ],
    ids=["stated-as-fact", "held-open", "another-figure", "written-once-settled", "no-evening-said"],
)
def test_living_disputed_counts_a_figure_disputed_when_its_line_was_written(line: str, counted: int) -> None:
    """Only lines the span added count: the document already says '18–27%' of OSDI Zero-Copy. The
    dispute is in 9-22's 三 and no longer in 9-23's (a document settled it that evening)."""
    disputed = G2.model_copy(update={"to_verify": [DISPUTE]})
    settled = G2.model_copy(update={"to_verify": []})
    evenings = [(dt.date(2026, 9, 22), disputed), (dt.date(2026, 9, 23), settled)]
    after = LIVING_TEXT.replace(EPD, f"{EPD}\n{line}")
    assert living_disputed(evenings, LIVING_TEXT, after).value == counted
    assert living_disputed(evenings, LIVING_TEXT, LIVING_TEXT).value == 0


def test_growth_is_bytes_per_evening() -> None:
    after = LIVING_TEXT + "- **新主题**：一行。\n"
    added = len(after.encode()) - len(LIVING_TEXT.encode())
    assert growth(LIVING_TEXT, after, 2).value == added / 2
