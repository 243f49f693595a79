"""Rekey carries a cited id across: an id is a place in the registry, and a re-keyed answer cites its subject.

A reference answer cites anchors and open items by the ids its request listed ('A43', 'Q2'). When
the workspace moves the registry (the living document gains an anchor, a briefing orders its open
items otherwise), the ids renumber; `predigest cassettes rekey` re-files the answer citing the id its
subject is listed under now, and leaves an answer whose subject is no longer listed as it was, with a
warning naming the file and the id. Every case runs the real rekey over a copy of the demo workspace
and of one committed cassette set: nothing under examples/ or cassettes/ is written.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent.core.settings import Settings
from agent.pipeline import plan, rekey
from agent.plan.anchors import AnchorRegistry
from tests.paths import ROOT, copy_world
from tests.test_rules import claim

EVENING = dt.date(2026, 9, 22)
DOC = "inbox/flyp/2026-09-22-risk-e1prep.md"  # the inference prompt lists it A43, A44 and both open items
TOPICS = {"world": ["inference"], "world-shared": ["inference", "llm-infra", "risk"]}
SGLANG, PLUGIN = "SGLang v0.5.19 发布", "Plugin4Shell"
COLIBRI, NVIDIA = "colibri GLM-5.2 支持范围和实测性能", "NVIDIA 收购 Hugging Face $12.93B 实际进展"
BRIEFING = "inbox/tom/2026-09-21-inference-e1prep.md"  # the latest baseline: its 三 are the open items
ITEM_TAG = "矛盾/待核实 {}："


def _living_gains_anchor(ws: Path) -> None:
    """A subject of 9-19 written into the living document: every anchor after it moves one place."""
    living = ws / "living" / "inference.md"
    text = living.read_text(encoding="utf-8")
    line = "- **Quokka Zephyr**：一个只为本测试写下的条目。（9-19 inference e1prep）\n"
    living.write_text(text.replace("### 版本锚点\n", f"### 版本锚点\n{line}", 1), encoding="utf-8")


def _open_items(ws: Path) -> tuple[Path, str, str, str, str]:
    """The baseline, and its text before, at and between its two open items, and after them."""
    path = ws / BRIEFING
    head, rest = path.read_text(encoding="utf-8").split(ITEM_TAG.format("①"), 1)
    first, rest = rest.split(ITEM_TAG.format("②"), 1)
    second, tail = rest.split("四、", 1)
    return path, head, first, second, "四、" + tail


def _items_reordered(ws: Path) -> None:
    """The baseline lists its two open items the other way round: Q1 and Q2 trade places."""
    path, head, first, second, tail = _open_items(ws)
    text = f"{head}{ITEM_TAG.format('①')}{second}{ITEM_TAG.format('②')}{first}{tail}"
    path.write_text(text, encoding="utf-8")


def _first_item_dropped(ws: Path) -> None:
    """The baseline no longer holds the colibri item: the NVIDIA one is Q1, and colibri is listed nowhere."""
    path, head, _, second, tail = _open_items(ws)
    path.write_text(f"{head}{ITEM_TAG.format('①')}{second}{tail}", encoding="utf-8")


Edit = Callable[[Path], None]


@dataclass(frozen=True)
class Case:
    edits: tuple[Edit, ...]
    anchors: tuple[str, ...]  # what the answer's claims cite, in order
    items: tuple[str, ...]  # what its resolutions cite
    # what they cite once re-keyed; None: the answer is left as it was, with a warning naming `warned`
    rekeyed: tuple[tuple[str, ...], tuple[str, ...]] | None
    warned: str = ""


CASES = {
    "anchor-moved": Case((_living_gains_anchor,), ("A43",), (), (("A44",), ())),
    # kept as it was, A44 would now cite the SGLang release: another listed subject, silently
    "anchor-moved-onto-another": Case((_living_gains_anchor,), ("A44", "A43"), (), (("A45", "A44"), ())),
    "items-reordered": Case((_items_reordered,), (), ("Q2", "Q1"), ((), ("Q1", "Q2"))),
    "both-moved": Case((_living_gains_anchor, _items_reordered), ("A43",), ("Q1",), (("A44",), ("Q2",))),
    "item-gone": Case((_first_item_dropped,), ("A43",), ("Q1",), None, "Q1"),
    "id-its-request-never-listed": Case((_living_gains_anchor,), ("A99",), (), None, "A99"),
    "a-name-is-kept": Case((_living_gains_anchor,), (SGLANG,), (NVIDIA,), ((SGLANG,), (NVIDIA,))),
}


def _registry(ws: Path) -> AnchorRegistry:
    return plan(Settings(workspace=ws, topic="inference", date=EVENING), for_writing=False).registry


def _premise(ws: Path, edits: tuple[Edit, ...]) -> None:
    """The ids of the demo evening as the cases read them: before any edit A43 and A44 are the SGLang
    release and Plugin4Shell, Q1 and Q2 colibri and NVIDIA; after one, they are elsewhere."""
    reg = _registry(ws)
    assert [reg.by_id(i).key for i in ("A43", "A44")] == [SGLANG, PLUGIN]  # type: ignore[union-attr]
    assert [reg.item_by_id(i).item.title for i in ("Q1", "Q2")] == [COLIBRI, NVIDIA]  # type: ignore[union-attr]
    for edit in edits:
        edit(ws)
    moved = _registry(ws)
    if _living_gains_anchor in edits:
        assert [moved.by_id(i).key for i in ("A44", "A45")] == [SGLANG, PLUGIN]  # type: ignore[union-attr]


def _cassette(folder: Path) -> Path:
    (path,) = [p for p in folder.glob("*.json") if _data(p)["provenance"]["document"] == DOC]
    return path


def _data(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def _reading(data: dict[str, Any]) -> dict[str, Any]:
    """The inference reading of a cassette's answer (a one-topic answer, or a shared answer's part)."""
    answer = data["response"]["body"]["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    return next((p for p in answer["topics"] if p["topic"] == "inference"), answer) if "topics" in answer else answer


def _cite(path: Path, anchors: tuple[str, ...], items: tuple[str, ...]) -> None:
    """Make the committed answer for DOC cite `anchors` (one claim each) and `items` (one resolution each)."""
    data = _data(path)
    reading = _reading(data)
    reading["claims"] = [
        claim(title=f"claim {n}", relation="supplement", anchor=a).model_dump() for n, a in enumerate(anchors)
    ]
    reading["resolved"] = [{"item": i, "how": "h", "evidence": "e"} for i in items]
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def _cited(path: Path) -> tuple[tuple[str, ...], tuple[str, ...]]:
    reading = _reading(_data(path))
    return tuple(c["anchor"] for c in reading["claims"]), tuple(r["item"] for r in reading["resolved"])


@pytest.mark.parametrize("cassettes", list(TOPICS))
@pytest.mark.parametrize("case", list(CASES.values()), ids=list(CASES))
def test_rekey_carries_a_cited_id_to_its_subjects_new_id_or_leaves_the_answer(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, cassettes: str, case: Case
) -> None:
    ws = copy_world(tmp_path / "workspace")
    folder = tmp_path / cassettes
    shutil.copytree(ROOT / "cassettes" / cassettes, folder)
    path = _cassette(folder)
    _cite(path, case.anchors, case.items)  # the answer, as written for the request as asked before the edits
    before = path.read_text(encoding="utf-8")
    _premise(ws, case.edits)

    topics = TOPICS[cassettes]
    with caplog.at_level(logging.WARNING, logger="predigest"):
        written = rekey(Settings(workspace=ws, topic=topics[0], date=EVENING, cassette_dir=folder), topics)

    if case.rekeyed is None:
        assert path.read_text(encoding="utf-8") == before and path not in written
        assert f"{path.name} cites {case.warned} " in caplog.text, caplog.text
        return
    assert not path.exists(), "the request moved: its answer is filed under the new key"
    new = _cassette(folder)
    assert new in written and _cited(new) == case.rekeyed
    assert f"{path.name} cites" not in caplog.text, caplog.text


def test_a_composing_answer_the_evening_no_longer_fits_is_left_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A report gone from the inbox takes its claims off the editor's desk: the composing answer that
    put them in stories no longer passes the evening's checker, so rekey files nothing for it (a
    written copy would fail at every replay) and says what to do, instead of stopping the re-key."""
    ws = copy_world(tmp_path / "workspace")
    folder = tmp_path / "world"
    shutil.copytree(ROOT / "cassettes" / "world", folder)
    (ws / "inbox" / "jay" / "2026-09-22-1735-jay-inference-vector-db-mcp-trending.md").unlink()
    composing = [
        p
        for p in folder.glob("compose-*.json")
        if "2026-09-22" in _data(p)["request"]["body"]["messages"][1]["content"][:40]
    ]
    before = {p: p.read_text(encoding="utf-8") for p in composing}
    files = set(folder.glob("*.json"))

    with caplog.at_level(logging.WARNING, logger="predigest"):
        written = rekey(Settings(workspace=ws, topic="inference", date=EVENING, cassette_dir=folder), ["inference"])

    assert "does not answer the request as asked now" in caplog.text, caplog.text
    assert all(p.read_text(encoding="utf-8") == text for p, text in before.items())
    assert not any(p.name.startswith("compose-") for p in written)
    assert {p for p in folder.glob("compose-*.json")} == {p for p in files if p.name.startswith("compose-")}


@pytest.mark.parametrize(
    ("old_name", "new_lines", "carried", "lost"),
    [
        pytest.param("SGLang v0.6.0", {"A3": "SGLang v0.6.0"}, "A3", False, id="same-name"),
        # one subject is one line, named by whichever of its anchors ranks first
        pytest.param("SGLang v0.6.0 HiCache 实测命中率", {"A3": "SGLang v0.6.0"}, "A3", False, id="another-name"),
        pytest.param("SGLang v0.6.0", {"A3": "SGLang v0.6.3"}, "A7", True, id="another-release-is-not-it"),
        pytest.param("SGLang v0.6.0", {"A3": "SGLang v0.6.0", "A4": "SGLang v0.6.0：HiCache"}, "A3", False, id="exact"),
    ],
)
def test_a_cited_anchor_is_carried_to_the_line_naming_its_subject(
    old_name: str, new_lines: dict[str, str], carried: str, lost: bool
) -> None:
    from agent.extract.llm.reference import _carried
    from agent.extract.prompting import Listing

    old, new = Listing(), Listing()
    said: list[str] = []
    old.add("A7", old_name)
    for ident, name in new_lines.items():
        new.add(ident, name)
    assert _carried("A7", old, new, said) == carried
    assert bool(said) is lost
