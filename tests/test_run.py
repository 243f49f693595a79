"""`predigest run` on the demo evening, offline: the parsed output must match the seed.

Compares parsed models, not strings. The cassettes hold per-document extractions only; every
block of the briefing is computed by the rules.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import pytest

from agent.core.errors import LLMError, OutputExists, WorkspaceError
from agent.core.labels import ZH
from agent.pipeline import Settings, run
from agent.plan.parse import parse
from eval.metrics import TITLE_THRESHOLD, match_increments
from schemas.briefing import Briefing
from tests.paths import ROOT, SEED, WORLD

DATE = dt.date(2026, 9, 22)
SEED_B = parse(SEED.read_text(encoding="utf-8"))


def settings(tmp_path: Path, **kw: object) -> Settings:
    base: dict[str, object] = {
        "workspace": WORLD,
        "topic": "inference",
        "date": DATE,
        "out": tmp_path / "out" / "b.md",
        "backend": "replay",
        "cache_dir": tmp_path / "cache",
        "cassette_dir": ROOT / "cassettes" / "world",
    }
    base.update(kw)
    return Settings(**base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def briefing(tmp_path_factory: pytest.TempPathFactory) -> Briefing:
    report = run(settings(tmp_path_factory.mktemp("run")))
    assert [r.error for r in report.records if r.error] == []
    return parse(report.out_path.read_text(encoding="utf-8"))


def _credited(b: Briefing) -> list[tuple[str, str]]:
    return [
        (
            next(s.ref for s in i.sources if s.ref.startswith("inbox/")),
            next(s.section for s in i.sources if s.ref.startswith("inbox/")),
        )
        for i in b.increments
    ]


def test_same_increments_as_the_seed(briefing: Briefing) -> None:
    """The seed's six subjects, in its order, from its documents and sections; the titles are the
    editor's words, so they are paired as the eval pairs them (title, sources, arXiv IDs)."""
    assert len(briefing.increments) == 6
    assert _credited(briefing) == _credited(SEED_B)
    paired = match_increments(SEED_B, briefing, TITLE_THRESHOLD).pairs
    assert sorted((p.gold, p.out) for p in paired) == [(i, i) for i in range(6)]
    for got, want in zip(briefing.increments, SEED_B.increments, strict=True):
        assert got.suggested_section.split()[0] == want.suggested_section.split()[0]


def test_same_new_and_continued_arxiv(briefing: Briefing) -> None:
    assert set(briefing.summary.new_arxiv) == set(SEED_B.summary.new_arxiv)

    def continued(b: Briefing) -> dict[str, str]:
        out = {}
        for r in b.arxiv_rows:
            if m := re.search(r"(\d{1,2}-\d{1,2})锚定", r.relation):
                out[r.arxiv_id.split("v")[0]] = m.group(1)
        return out

    assert continued(SEED_B).items() <= continued(briefing).items()


def test_to_verify_with_two_carried_over(briefing: Briefing) -> None:
    assert len(briefing.to_verify) == 5
    assert [v.carried_from for v in briefing.to_verify] == ["", "", "", "9-21", "9-21"]


def test_every_source_without_an_increment_has_a_note(briefing: Briefing) -> None:
    credited = {ref for ref, _ in _credited(briefing)}
    noted = {n.source for n in briefing.no_increment}
    sources = [r for r in briefing.sources if r.directory.startswith("inbox/jay")]
    for row in sources:
        path = f"{row.directory}/{row.key_file}"
        assert path in credited or path in noted, path
    assert any(n.source.startswith("inbox/jay/2026-09-22-1050") for n in briefing.no_increment)


def test_priorities_put_what_a_reader_must_act_on_first_and_the_secondary_anchors_last(briefing: Briefing) -> None:
    # the flag rename, the TGI migration and Dynamo 1.0 first; the three 3★ papers last
    levels = [p.level for p in briefing.priorities]
    assert levels == ["🔴 最高"] * 3 + ["🟡 中"] * 3 + ["🟢 低"] * 3
    assert [p.content for p in briefing.priorities[:6]] == [inc.title for inc in briefing.increments]


def test_traps_stay_out(briefing: Briefing) -> None:
    text = briefing.model_dump_json()
    for trap in ("2609.18842", "2609.21007", "SpecServe", "v0.21.0"):
        assert trap not in text


def test_replaces_only_its_own_unedited_set_and_writes_json_beside(tmp_path: Path) -> None:
    s = settings(tmp_path)
    report = run(s)
    data = json.loads(report.written.json_path.read_text(encoding="utf-8"))
    assert data["briefing"]["topic"] == "inference" and data["prompt"].startswith("extract@")
    assert report.written.calls_path.read_text(encoding="utf-8").count("\n") == len(report.records)
    assert run(s).out_path.read_text(encoding="utf-8") == report.out_path.read_text(encoding="utf-8")  # a re-run
    edited = report.out_path.read_text(encoding="utf-8") + "（编辑过）\n"
    report.out_path.write_text(edited, encoding="utf-8")
    with pytest.raises(OutputExists, match="--force"):  # an edited briefing is the user's
        run(s)
    assert report.out_path.read_text(encoding="utf-8") == edited
    again = run(s.model_copy(update={"force": True}))
    assert again.composed.briefing.model_copy(update={"footer": ""}) == report.composed.briefing.model_copy(
        update={"footer": ""}
    )
    assert {r.source for r in again.records} == {"cassette"}


def test_one_word_of_the_prompt_changed_makes_replay_fail_with_the_nearest_cassette(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    shutil.copytree(ROOT / "prompts", prompts)
    p = prompts / "extract.md"
    p.write_text(p.read_text(encoding="utf-8").replace("Prefer few strong claims", "Prefer few solid claims"), "utf-8")
    s = settings(tmp_path, prompt_file=p, no_cache=True)
    with pytest.raises(LLMError) as err:
        run(s)
    message = str(err.value)
    assert "every extraction failed (14 of 14); nothing was written" in message
    assert "system prompt changed" in message and "--" in message and ".json" in message
    assert not Path(str(s.out)).exists()


def test_one_failed_document_is_reported_and_the_rest_goes_on(tmp_path: Path) -> None:
    cassettes = tmp_path / "cassettes"
    shutil.copytree(ROOT / "cassettes" / "world", cassettes)
    (gone,) = cassettes.glob("inbox-jay-2026-09-22-1505-*.json")
    gone.unlink()
    report = run(settings(tmp_path, cassette_dir=cassettes))
    b = report.composed.briefing
    assert len(b.increments) == 6
    note = next(n for n in b.no_increment if n.source.endswith("1505-jay-five-category-evening-briefing.md"))
    assert note.note.startswith("未读取：no cassette") and "same document" not in note.note
    assert report.exit_code == 3 and [d for d, _ in report.outcome.unread] == [note.source]
    assert "部分运行：1 份来源未读取" in b.summary.count_note and "未读取" in b.no_increment_intro
    assert "2609.19657" not in b.summary.new_arxiv  # its only source failed; nothing invented in its place


def test_tomorrow_reads_tonight_as_its_baseline(tmp_path: Path) -> None:
    world = tmp_path / "world"
    shutil.copytree(WORLD, world)
    report = run(settings(tmp_path, workspace=world, out=None, cassette_dir=ROOT / "cassettes" / "world"))
    assert report.out_path == world / "inbox" / "tom" / "2026-09-22-inference-e1prep.md"
    tonight = report.composed.briefing

    from agent.plan.anchors import build_registry
    from agent.plan.ingest import scan
    from agent.plan.workspace import load_workspace

    tomorrow = dt.date(2026, 9, 23)
    reg = build_registry(scan(load_workspace(world), "inference", tomorrow), "inference", tomorrow)
    for key in tonight.summary.new_arxiv:
        anchor = reg.arxiv(key)
        assert anchor is not None and anchor.first_date == DATE, key
    assert [o.origin for o in reg.open_items] == ["9-22", "9-22", "9-22", "9-21", "9-21"]
    assert reg.arxiv("2602.07115").first_date == dt.date(2026, 9, 15)  # continued rows keep their first date


def test_an_unreadable_report_is_named_not_lost(tmp_path: Path) -> None:
    world = tmp_path / "world"
    shutil.copytree(WORLD, world)
    bad = world / "inbox" / "jay" / "2026-09-22-1900-jay-broken.md"
    bad.write_bytes("# 报告\n".encode("gbk") + b"\xff\xfe broken")
    report = run(settings(tmp_path, workspace=world, cassette_dir=ROOT / "cassettes" / "world"))
    b = report.composed.briefing
    assert len(b.increments) == 6  # the evening goes on
    row = next(r for r in b.sources if r.key_file == bad.name)
    assert row.held.startswith("unreadable: not UTF-8") and "re-save it as UTF-8" in row.held
    assert any(n.source.endswith(bad.name) and "unreadable" in n.note for n in b.no_increment)


def test_an_unreadable_baseline_stops_the_run(tmp_path: Path) -> None:
    world = tmp_path / "world"
    shutil.copytree(WORLD, world)
    (world / "inbox" / "tom" / "2026-09-21-inference-e1prep.md").write_bytes(b"\xff\xfe")
    with pytest.raises(WorkspaceError, match="not UTF-8"):
        run(settings(tmp_path, workspace=world, cassette_dir=ROOT / "cassettes" / "world"))


def test_extract_reports_every_answer_to_the_caller(tmp_path: Path) -> None:
    """`extract` hands each answer to the caller as it arrives, and `brief` is pure."""
    from agent.pipeline import brief, extract, plan

    ev = plan(settings(tmp_path), for_writing=False)
    seen: list[str] = []
    results = extract(ev, on_result=lambda r: seen.append(r.request.doc_path))
    assert sorted(seen) == sorted(r.doc_path for r in ev.requests)
    assert brief(ev, results).markdown == brief(ev, results).markdown


def test_the_run_record_is_written_as_the_standard_encoder_would(tmp_path: Path) -> None:
    """pydantic writes the .json; its bytes are `json.dumps(..., ensure_ascii=False, indent=2)`'s
    (separators, escapes, floats), so a reader or a diff sees no difference from the old files."""
    report = run(settings(tmp_path))
    assert report.written.json_path is not None
    text = report.written.json_path.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), ensure_ascii=False, indent=2) + "\n"
    tricky = json.loads(text)
    tricky["findings"][0]["detail"] = 'ctl \x01\x1f tab\t quote" slash\\ emoji 🙂 nbsp\u00a0 del\x7f 1e-07'
    from schemas.run import RunRecord

    record = RunRecord.model_validate(tricky)
    assert record.model_dump_json(indent=2) == json.dumps(record.model_dump(mode="json"), ensure_ascii=False, indent=2)


PROVENANCE = [
    # (backend flags, cassette set to replay / record into, what every output must say answered)
    (("--backend", "replay"), "world", "reference answers (hand-written)"),
    (("--backend", "replay", "--allow-stale"), "world-relayed", "relayed answers of a capable general-purpose LLM"),
    (("--backend", "offline"), "", "offline extractor"),
    (("--backend", "live", "--no-cache"), "", "model gpt-4o-mini"),
    (("--backend", "record", "--no-cache"), "recorded", "model gpt-4o-mini"),
]


@pytest.mark.parametrize(("flags", "cassettes", "said"), PROVENANCE, ids=[p[2].split()[0] for p in PROVENANCE])
def test_every_output_says_what_answered(flags: tuple[str, ...], cassettes: str, said: str, tmp_path: Path) -> None:
    """The footer, the run record, the page, the run summary and `logs` name a model only where
    a model answered; a recorded cassette replayed later still names the model that recorded it."""
    from tests.fake_openai import FAKE_KEY, FakeOpenAI, world_answers, world_responder
    from tests.paths import predigest

    sets = tmp_path / "sets"
    folder = ROOT / "cassettes" / cassettes if cassettes not in ("", "recorded") else sets / "recorded"
    base = ["run", str(WORLD), "-t", "inference", "-d", "2026-09-22", "--out", f"{tmp_path}/o/", "--html"]
    given = ["--cassettes", str(folder)] if cassettes else []
    with FakeOpenAI(default=world_responder(world_answers())) as server:
        r = predigest(*base, *flags, *given, env={"OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.base_url})
    assert r.returncode == 0, r.stderr
    if cassettes == "recorded":  # the recording, replayed with no endpoint at all
        r = predigest(*base, "--backend", "replay", "--force", *given)
        assert r.returncode == 0, r.stderr
    out = tmp_path / "o" / "2026-09-22-inference-e1prep"
    footer = out.with_suffix(".md").read_text(encoding="utf-8").rstrip().splitlines()[-1]
    page = out.with_suffix(".html").read_text(encoding="utf-8")
    logged = predigest("logs", "--json").stdout
    label = ZH.extractor_offline if "offline" in flags else said
    assert label in footer and ("model" in said) == ("model " in footer), footer
    assert json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))["answered_by"].startswith(said)
    assert said in page and f"answered by {said}" in r.stdout and said in json.loads(logged)[0]["model"]
