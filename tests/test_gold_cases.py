"""The gold cases beyond the seed: their gold is what the world says, and their answers are complete.

The 2026-09-22 llm-infra and risk cases score the demo evening against the adjacent briefings
other agents wrote that evening. Their golds must stay byte copies of those briefings, their
reference cassettes must answer every source of the evening for their own topic (each topic's
prompt differs, so each needs its own answers), and the world additions they need must not leak
into the inference evening.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from agent.extract.llm.cassettes import CassetteIndex, wire_answer
from agent.extract.llm.reference import answer_from_completion, extraction_from_completion
from agent.pipeline import Settings, plan
from agent.plan.anchors import build_registry
from agent.plan.ingest import scan
from agent.plan.workspace import load_workspace
from eval.cases import load_case
from schemas.extraction import SharedExtraction
from tests.paths import ROOT, WORLD, predigest

EVENING = dt.date(2026, 9, 22)
ADJACENT_GOLDS = [
    ("2026-09-22-llm-infra", "inbox/spark/2026-09-22-llm-infra-e1prep.md"),
    ("2026-09-22-risk", "inbox/flyp/2026-09-22-risk-e1prep.md"),
]


@pytest.mark.parametrize(("name", "briefing"), ADJACENT_GOLDS, ids=[n for n, _ in ADJACENT_GOLDS])
def test_gold_is_a_byte_copy_of_the_adjacent_briefing(name: str, briefing: str) -> None:
    case = load_case(ROOT / "eval" / "cases" / name)
    assert case.gold_path.read_bytes() == (WORLD / briefing).read_bytes()
    assert "not toward the gold" in case.description


@pytest.mark.parametrize(("name", "briefing"), ADJACENT_GOLDS, ids=[n for n, _ in ADJACENT_GOLDS])
def test_reference_cassettes_answer_every_source_and_nothing_else(name: str, briefing: str) -> None:
    case = load_case(ROOT / "eval" / "cases" / name)
    assert case.cassettes is not None
    found = CassetteIndex.load(case.cassettes).all()
    cassettes = [c for c in found if not c.provenance.document.startswith("compose/")]  # the evening's, not a source's
    evening = plan(Settings(workspace=case.workspace, topic=case.topic, date=case.date), for_writing=False)
    sources = {d.path for d in evening.sources}
    assert briefing not in sources  # tonight's own briefing is the gold, never an input
    assert sorted(c.provenance.document for c in cassettes) == sorted(sources)
    for c in cassettes:
        assert c.provenance.kind == "reference" and "not the gold" in c.provenance.note, c.path.name


def test_the_9_21_risk_briefing_feeds_risk_and_stays_out_of_the_inference_evening() -> None:
    ws = load_workspace(WORLD)
    path = "inbox/flyp/2026-09-21-risk-e1prep.md"
    inference = {d.path: d for d in scan(ws, "inference", EVENING)}
    assert not inference[path].read
    risk = build_registry(scan(ws, "risk", EVENING), "risk", EVENING)
    assert [(o.item.title, o.origin, o.source) for o in risk.open_items] == [
        ("NVIDIA 收购 Hugging Face $12.93B 实际进展", "9-21", path)
    ]


def test_add_reference_writes_into_the_given_folder_the_committed_request(tmp_path: Path) -> None:
    """Re-adding one committed answer with `--cassettes` reproduces the committed exchange there:
    the option is honoured, and the committed cassette is keyed on today's request."""
    doc = "inbox/jay/2026-09-22-inference-engineering-filter.md"
    (committed,) = [
        c for c in CassetteIndex.load(ROOT / "cassettes" / "world-risk").all() if c.provenance.document == doc
    ]
    answer = tmp_path / "answer.json"
    answer.write_text(extraction_from_completion(committed.exchange.response_body).model_dump_json(), encoding="utf-8")
    folder = tmp_path / "cassettes"
    args = ["cassettes", "add-reference", "examples/world", "-t", "risk", "-d", "2026-09-22", "--doc", doc]
    r = predigest(*args, "--extraction", str(answer), "--cassettes", str(folder), "--note", "test")
    assert r.returncode == 0, r.stderr
    (written,) = CassetteIndex.load(folder).all()
    assert written.path.parent == folder and written.exchange.key == committed.exchange.key
    assert written.exchange.request_body == committed.exchange.request_body


def test_add_reference_of_a_shared_answer_reproduces_the_committed_exchange(tmp_path: Path) -> None:
    """With several topics the answer is the shared request's: re-adding a committed shared answer
    writes the committed exchange (same key, same body, same estimated usage with its cached prefix),
    and an answer naming a topic the request does not carry is refused in one line, nothing written."""
    doc = "inbox/jay/2026-09-22-1505-jay-five-category-evening-briefing.md"
    (committed,) = [
        c for c in CassetteIndex.load(ROOT / "cassettes" / "world-shared").all() if c.provenance.document == doc
    ]
    answer = answer_from_completion(wire_answer(committed.exchange.response_body), SharedExtraction)
    good, bad = tmp_path / "answer.json", tmp_path / "bad.json"
    good.write_text(answer.model_dump_json(), encoding="utf-8")
    bad.write_text(answer.model_dump_json().replace('"topic":"risk"', '"topic":"security"'), encoding="utf-8")
    folder = tmp_path / "cassettes"
    args = ["cassettes", "add-reference", "examples/world", "--all-topics", "-d", "2026-09-22", "--doc", doc]
    r = predigest(*args, "--extraction", str(good), "--cassettes", str(folder))
    assert r.returncode == 0, r.stderr
    (written,) = CassetteIndex.load(folder).all()
    assert written.exchange.key == committed.exchange.key
    assert written.exchange.usage == committed.exchange.usage and written.exchange.usage["prompt_tokens_details"]
    refused = predigest(*args, "--extraction", str(bad), "--cassettes", str(tmp_path / "other"))
    assert refused.returncode == 2 and "security" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize(
    ("written", "kept"), [("2026-11-30", "2026-11-30"), ("2026/11/30", None)], ids=["iso", "malformed"]
)
def test_rekey_keeps_the_answers_own_date_or_writes_today_for_one_that_is_no_date(
    tmp_path: Path, written: str, kept: str | None
) -> None:
    folder = tmp_path / "world-shared"
    shutil.copytree(ROOT / "cassettes" / "world-shared", folder)
    doc = "paper_cards/2026-09-22/1650-2609-20755.md"
    (path,) = [
        p for p in folder.glob("*.json") if json.loads(p.read_text(encoding="utf-8"))["provenance"]["document"] == doc
    ]
    data = json.loads(path.read_text(encoding="utf-8"))
    data["request"]["body"]["messages"][0]["content"] += " (an older prompt)"
    data["provenance"]["date"] = written
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    args = ["cassettes", "rekey", "examples/world", "-d", "2026-09-22", "--cassettes", str(folder), "--all-topics"]
    r = predigest(*args)
    assert r.returncode == 0 and "re-keyed 1" in r.stdout, r.stdout + r.stderr
    (new,) = [
        p for p in folder.glob("*.json") if json.loads(p.read_text(encoding="utf-8"))["provenance"]["document"] == doc
    ]
    assert json.loads(new.read_text(encoding="utf-8"))["provenance"]["date"] == (kept or dt.date.today().isoformat())


def test_rekey_of_every_topic_rewrites_a_stale_shared_reference_and_a_one_topic_rekey_leaves_it(
    tmp_path: Path,
) -> None:
    """After an edit that moves one shared request, `rekey --all-topics` writes its answer under the
    request as asked now (the committed one, here) and nothing else; a one-topic rekey over the
    shared set says they are a shared request's and touches none."""
    folder = tmp_path / "world-shared"
    shutil.copytree(ROOT / "cassettes" / "world-shared", folder)
    doc = "paper_cards/2026-09-22/1650-2609-20755.md"
    (path,) = [
        p for p in folder.glob("*.json") if json.loads(p.read_text(encoding="utf-8"))["provenance"]["document"] == doc
    ]
    committed = path.read_text(encoding="utf-8")
    data = json.loads(committed)
    data["request"]["body"]["messages"][0]["content"] += " (an older prompt)"
    stale = path.with_name(path.name.replace(path.stem.rsplit("--", 1)[1], "0" * 12))
    path.unlink()
    stale.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    base = ["cassettes", "rekey", "examples/world", "-d", "2026-09-22", "--cassettes", str(folder)]
    one = predigest(*base, "-t", "risk")
    assert one.returncode == 0 and "re-keyed 0" in one.stdout, one.stdout + one.stderr
    assert "rekey them with every topic they carry" in one.stderr and stale.exists()
    every = predigest(*base, "--all-topics")
    assert every.returncode == 0 and "re-keyed 1" in every.stdout, every.stdout + every.stderr
    assert not stale.exists() and path.read_text(encoding="utf-8") == committed
