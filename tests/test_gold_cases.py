"""The gold cases beyond the seed: their gold is what the world says, and their answers are complete.

The 2026-09-22 llm-infra and risk cases score the demo evening against the adjacent briefings
other agents wrote that evening. Their golds must stay byte copies of those briefings, their
reference cassettes must answer every source of the evening for their own topic (each topic's
prompt differs, so each needs its own answers), and the world additions they need must not leak
into the inference evening.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.extract.llm.cassettes import CassetteIndex
from agent.extract.llm.reference import extraction_from_completion
from agent.pipeline import Settings, plan
from agent.plan.anchors import build_registry
from agent.plan.ingest import scan
from agent.plan.workspace import load_workspace
from eval.cases import load_case
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
    cassettes = CassetteIndex.load(case.cassettes).all()
    sources = {d.path for d in plan(Settings(workspace=case.workspace, topic=case.topic, date=case.date)).sources}
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
