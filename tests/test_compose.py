"""The composing call: the rules check the editor's answer, a passed answer writes the increments, and an
evening whose answer is missing falls back to the rules' assembly and says so.

The answers here are the committed reference cassettes' (written by hand, blind to the golds, as a good
model would answer `prompt show --doc compose/TOPIC`); each row of the checker's table breaks one rule.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.core.labels import ZH
from agent.extract.llm.cassettes import CassetteIndex, wire_answer
from agent.extract.llm.reference import answer_from_completion
from agent.pipeline import Settings, draft_topics, extract_topics, plan_topics
from agent.plan.parse import parse
from agent.rules.editor import Desk
from schemas.compose import EveningComposition
from tests.paths import ROOT, WORLD, predigest

DATE = dt.date(2026, 9, 22)
COMPOSING = ROOT / "cassettes" / "world"


def _desk_and_answer(world: Path, topic: str, date: dt.date, folder: str) -> tuple[Desk, dict[str, Any]]:
    """The evening's desk, as its composing request was asked from, and the reference answer to it."""
    s = Settings(workspace=world, topic=topic, date=date, llm={"backend": "replay", "compose": True, "cache_dir": None})
    es = plan_topics(s, [topic], for_writing=False)
    (draft,) = draft_topics(es, extract_topics(es))
    cassettes = CassetteIndex.load(ROOT / "cassettes" / folder).all()
    (answered,) = [c for c in cassettes if c.provenance.document == f"compose/{topic}"]
    answer = answer_from_completion(wire_answer(answered.exchange.response_body), EveningComposition)
    return draft.desk, answer.model_dump()


@pytest.fixture(scope="module")
def demo() -> tuple[Desk, dict[str, Any]]:
    return _desk_and_answer(WORLD, "inference", DATE, "world")


def _point(a: dict[str, Any], story: int = 0, point: int = 0) -> dict[str, Any]:
    return a["stories"][story]["key_points"][point]


Edit = Callable[[dict[str, Any]], None]
ROWS: list[tuple[str, Edit, str]] = [
    ("a claim not listed", lambda a: a["stories"][0]["claims"].append("C99"), "C99, which is not a listed claim"),
    ("a claim twice", lambda a: a["stories"][1]["claims"].append(a["stories"][0]["claims"][0]), "goes in one place"),
    ("a claim nowhere", lambda a: a["stories"].pop(), "is in no story and not in left_out"),
    ("an invented figure", lambda a: _point(a).update(text=_point(a)["text"] + "，吞吐提升 99%"), "99%"),
    ("a figure twice", lambda a: _twice(a, "%"), "again"),
    ("a long title", lambda a: a["stories"][0].update(title="很长的标题" * 10), "at most 40"),
    ("nine points", lambda a: a["stories"][0].update(key_points=[_point(a)] * 9), "at most 8"),
    ("an id in the text", lambda a: a["stories"][0].update(relation="补充 A1 与 C2"), "ids are for refs only"),
    ("a point citing another story's claim", lambda a: _point(a)["refs"].append("C2"), "not among the story's claims"),
    ("a question about nothing", lambda a: a["questions"].append(_question([])), "names no claim"),
]


def _twice(a: dict[str, Any], unit: str) -> None:
    """The first point stating a figure in `unit`, said again in the same story."""
    story = next(s for s in a["stories"] if any(unit in p["text"] for p in s["key_points"]))
    story["key_points"].append(dict(next(p for p in story["key_points"] if unit in p["text"])))


def _question(about: list[str]) -> dict[str, Any]:
    return {"title": "实测吞吐", "risk": "中", "problem": "是否可复现？", "suggestion": "读原文", "about": about}


def test_the_reference_answer_passes(demo: tuple[Desk, dict[str, Any]]) -> None:
    desk, answer = demo
    assert desk.check(EveningComposition.model_validate(answer)) == []


@pytest.mark.parametrize(("edit", "said"), [(e, s) for _, e, s in ROWS], ids=[r[0] for r in ROWS])
def test_the_checker_names_each_broken_rule(demo: tuple[Desk, dict[str, Any]], edit: Edit, said: str) -> None:
    desk, answer = demo
    broken = json.loads(json.dumps(answer))
    edit(broken)
    problems = desk.check(EveningComposition.model_validate(broken))
    assert any(said in p for p in problems), problems
    with pytest.raises(ValueError, match="Value error"):  # the same checks, as the answer's validator
        EveningComposition.model_validate(broken, context={"check": desk.check})


def test_a_point_stating_only_what_its_anchor_already_says_is_refused(demo: tuple[Desk, dict[str, Any]]) -> None:
    """A supplement says what is new: a point whose every figure its anchor already states (in any
    wording, in any language) goes back to the model, naming the anchor."""
    desk, answer = demo
    stories = [
        (n, st, desk._held([i for i in st["claims"] if i in desk.claims])) for n, st in enumerate(answer["stories"])
    ]
    n, story, held = next((n, st, h) for n, st, h in stories if h)  # the demo's TGI story: its 9-21 anchor's figures
    figure = sorted(held)[0]
    broken = json.loads(json.dumps(answer))
    broken["stories"][n]["key_points"].append({"text": f"as reported before: {figure}", "refs": story["claims"][:1]})
    problems = desk.check(EveningComposition.model_validate(broken))
    assert any(f"states only what {held[figure]} already says ({figure})" in p for p in problems), problems


def test_a_disputed_figure_stated_as_fact_is_refused() -> None:
    desk, answer = _desk_and_answer(ROOT / "examples" / "world-1021", "inference", dt.date(2026, 10, 21), "world-1021")
    fid, dispute = next(iter(desk.disputes.items()))
    value = f"{dispute.sides[0].values[0]}{dispute.unit}"
    told = {
        cid
        for cid, c in desk.claims.items()
        if any(dispute.states(n.text) for k in c.claim.key_points for n in k.walk())
    }
    story = next(s for s in answer["stories"] if told & set(s["claims"]))
    story["key_points"][0]["text"] += f"，{dispute.measure} 降低 {value}"
    problems = desk.check(EveningComposition.model_validate(answer))
    assert any("the documents give differently" in p for p in problems), (fid, problems)


def _copy(tmp_path: Path, *, compose_answer: bool) -> tuple[Path, Path]:
    world = tmp_path / "world"
    shutil.copytree(WORLD, world)
    toml = world / "predigest.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("[llm]\n", "[llm]\ncompose = true\n"), encoding="utf-8")
    cassettes = tmp_path / "cassettes"
    shutil.copytree(COMPOSING, cassettes)
    if not compose_answer:
        for f in cassettes.glob("compose-*.json"):
            f.unlink()
    return world, cassettes


def _run(tmp_path: Path, compose_answer: bool) -> tuple[int, str]:
    world, cassettes = _copy(tmp_path, compose_answer=compose_answer)
    out = tmp_path / "out"
    args = ["run", str(world), "-t", "inference", "-d", "2026-09-22", "--out", f"{out}/", "--backend", "replay"]
    r = predigest(*args, "--cassettes", str(cassettes), "--patch")
    return r.returncode, (out / "2026-09-22-inference-e1prep.md").read_text(encoding="utf-8")


def test_the_editors_stories_are_the_increments(tmp_path: Path, demo: tuple[Desk, dict[str, Any]]) -> None:
    code, md = _run(tmp_path, compose_answer=True)
    b = parse(md)
    titles = {s["title"] for s in demo[1]["stories"]}
    assert code == 0 and b.increments and all(i.title in titles for i in b.increments)
    assert "compose compose@" in b.footer and ZH.floor_note.split("（")[0] not in md
    points = {p["text"] for s in demo[1]["stories"] for p in s["key_points"]}
    assert all(k.text in points for i in b.increments for k in i.key_points)  # the editor's words, whole


def test_the_living_document_gets_the_editors_line_for_each_increment(
    tmp_path: Path, demo: tuple[Desk, dict[str, Any]]
) -> None:
    code, md = _run(tmp_path, compose_answer=True)
    patch = (tmp_path / "out" / "2026-09-22-inference-e1prep.patch").read_text(encoding="utf-8")
    added = [ln for ln in patch.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    lines = {s["title"]: s["living_line"].rstrip("。") for s in demo[1]["stories"]}
    printed = [lines[i.title] for i in parse(md).increments]
    assert code == 0 and printed and all(any(line in a for a in added) for line in printed), added


def test_an_evening_without_a_composing_answer_is_assembled_by_the_rules_and_says_so(tmp_path: Path) -> None:
    code, md = _run(tmp_path, compose_answer=False)
    b = parse(md)
    assert code == 0 and 3 <= len(b.increments) <= 8
    note = ZH.floor_note.split("（")[0]
    assert note in b.summary.count_note
    assert any(n.source == ZH.floor_source and note in n.note for n in b.no_increment)
    assert "compose compose@" not in b.footer
    # the briefing says why in a few words of its own language; the replay's miss, in full, is the record's
    assert ZH.floor_unanswered in b.summary.count_note and "no cassette" not in md
    record = json.loads((tmp_path / "out" / "2026-09-22-inference-e1prep.json").read_text(encoding="utf-8"))
    (floor,) = [f for f in record["findings"] if f["decision"] == "floor"]
    assert floor["detail"].startswith(ZH.floor_unanswered) and "no cassette for compose/inference" in floor["detail"]


def test_an_editors_control_characters_reach_no_file() -> None:
    """A composing answer is stripped of ESC and NUL where it enters, as an extraction is."""
    from schemas.compose import EveningComposition

    raw = {
        "stories": [
            {
                "claims": ["C1"],
                "title": "vLLM\x1b[31m v0.23.0\x00",
                "key_points": [{"text": "移除 --swap-space\x07", "refs": ["C1"]}],
                "credibility_reason": "官方",
                "relation": "新",
                "section": "§1.1",
                "living_line": "",
            }
        ],
        "left_out": [],
        "doc_lines": [],
        "questions": [],
    }
    got = EveningComposition.model_validate(raw)
    assert got.stories[0].title == "vLLM[31m v0.23.0" and got.stories[0].key_points[0].text == "移除 --swap-space"
