"""The demo workspace against the seed: the window reads exactly the seed's sources, the anchors
hold what the seed calls anchored, and every fact of the seed's increments is in the file it credits."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from agent.core.errors import WorkspaceError
from agent.core.text import facts
from agent.plan.anchors import build_registry
from agent.plan.ingest import scan
from agent.plan.parse import parse
from agent.plan.workspace import load_workspace
from agent.write.render import render
from tests.paths import SEED, WORLD

DATE = dt.date(2026, 9, 22)
SEED_B = parse(SEED.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def docs():  # type: ignore[no-untyped-def]
    return scan(load_workspace(WORLD), "inference", DATE)


def test_window_reads_exactly_the_seed_sources(docs) -> None:  # type: ignore[no-untyped-def]
    read = {d.path for d in docs if d.read and d.kind != "living"}
    names = {p.rsplit("/", 1)[-1].removesuffix(".md") for p in read}
    expected = set()
    for row in SEED_B.sources:
        if row.directory.startswith("inbox/"):
            expected.add(row.key_file.removesuffix(".md"))
    expected |= {"1432-2609-19499", "1435-2609-20816", "2026-09-22-2200"}
    assert expected <= names
    extra = names - expected
    cards = {d.path.rsplit("/", 1)[-1].removesuffix(".md"): d for d in docs if d.kind == "paper_card"}
    assert extra <= set(cards), f"in-window files the seed does not name: {extra - set(cards)}"
    for name in extra:  # the seed's "其余卡主分类非 inference"
        assert "category: inference" not in cards[name].text


def test_every_out_of_window_file_says_why(docs) -> None:  # type: ignore[no-untyped-def]
    out = [d for d in docs if not d.read]
    assert out, "the demo must hold traps outside the window"
    assert all(d.reason for d in out)
    by_name = {d.name: d for d in out}
    assert "before the window" in by_name["2026-09-21-2100-jay-engineering-filter.md"].reason
    assert "after the window" in by_name["2026-09-22-2230-jay-late-night-filter.md"].reason
    assert "2026-09-21-2200.md" in by_name  # the previous evening's queue snapshot belongs to 9-21


def test_window_edges(docs) -> None:  # type: ignore[no-untyped-def]
    by_name = {d.name: d for d in docs}
    assert by_name["2026-09-22-2200.md"].read  # 22:00 is inside (date-1 22:00, date 22:00]
    assert by_name["2240-2609-19876.md"].read  # 9-21 22:40 belongs to the 9-22 evening


def test_anchors_hold_what_the_seed_calls_anchored(docs) -> None:  # type: ignore[no-untyped-def]
    reg = build_registry(docs, "inference", DATE)
    for row in SEED_B.arxiv_rows:
        m = re.search(r"(\d{1,2})-(\d{1,2})锚定", row.relation)
        if not m:
            continue
        key = row.arxiv_id.split("v")[0]
        anchor = reg.arxiv(key)
        assert anchor is not None, f"{row.arxiv_id} is not anchored"
        assert anchor.first_date == dt.date(2026, int(m.group(1)), int(m.group(2))), row.arxiv_id
    for new in SEED_B.summary.new_arxiv:
        assert reg.arxiv(new) is None, f"{new} is new tonight, not an anchor"
    carried = [o for o in reg.open_items]
    assert len(carried) == 2
    assert {o.origin for o in carried} == {"9-21"}
    assert any("colibri" in o.item.title for o in carried) and any(
        "Hugging Face" in o.item.title or "HF" in o.item.title for o in carried
    )
    assert {"§1.1", "§1.2", "§1.3"} <= {s.split()[0] for s in reg.sections}


def test_adjacent_briefings_are_not_anchors(docs) -> None:  # type: ignore[no-untyped-def]
    reg = build_registry(docs, "inference", DATE)
    assert reg.adjacent
    assert not any(a.source.startswith(("inbox/spark", "inbox/flyp")) for a in reg.anchors)


def _credited_file(inc) -> str:  # type: ignore[no-untyped-def]
    return next(s.ref for s in inc.sources if s.ref.startswith("inbox/"))


@pytest.mark.parametrize("n", range(1, 7))
def test_inbox_supports_each_seed_increment(n: int) -> None:
    inc = SEED_B.increments[n - 1]
    text = (WORLD / _credited_file(inc)).read_text(encoding="utf-8")
    have = facts(text)
    want = set().union(*(facts(p.text) for p in inc.all_points())) | facts(inc.arxiv_line)
    want -= {"2026"}  # the seed's own commentary ("2026 年推理引擎…")
    assert want, "the increment has checkable facts"
    assert sorted(want - have) == []


@pytest.mark.parametrize(
    "path",
    [
        "inbox/tom/2026-09-20-inference-e1prep.md",
        "inbox/tom/2026-09-21-inference-e1prep.md",
        "inbox/spark/2026-09-22-llm-infra-e1prep.md",
        "inbox/flyp/2026-09-22-risk-e1prep.md",
    ],
)
def test_briefings_of_the_world_parse_without_loss(path: str) -> None:
    text = (WORLD / path).read_text(encoding="utf-8")
    b = parse(text, path=path)
    assert b.increments and b.sources and b.priorities
    assert parse(render(b)) == b
    for m in re.finditer(r"^增量 (\d+)", text, re.M):
        assert int(m.group(1)) in {i.number for i in b.increments}
    assert len(b.arxiv_rows) == sum(
        1
        for ln in text.split("四、", 1)[1].split("五、", 1)[0].splitlines()
        if ln.startswith("|") and not ln.startswith(("|---", "| arXiv"))
    )


def test_baselines_have_the_seed_increment_counts() -> None:
    counts = {
        d: len(parse((WORLD / f"inbox/tom/2026-09-{d}-inference-e1prep.md").read_text("utf-8")).increments)
        for d in (20, 21)
    }
    assert counts == {20: 7, 21: 6}


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        pytest.param(None, "predigest.toml is missing", id="no-config"),
        pytest.param("[workspace]\ntimezone = 'Mars/Base'\n", "unknown timezone", id="bad-timezone"),
        pytest.param("[workspace\n", "not valid TOML", id="broken-toml"),
        pytest.param("[workspace]\nwindow_ends = '22:00'\n", "window_ends", id="typo-key"),
    ],
)
def test_workspace_errors_say_what_is_wrong(tmp_path, toml: str | None, message: str) -> None:  # type: ignore[no-untyped-def]
    if toml is not None:
        (tmp_path / "predigest.toml").write_text(toml, encoding="utf-8")
    with pytest.raises(WorkspaceError, match=message):
        load_workspace(tmp_path)


def test_missing_topic_names_the_known_ones() -> None:
    with pytest.raises(WorkspaceError, match=r"topic 'nope'.*known: inference"):
        scan(load_workspace(WORLD), "nope", DATE)


@pytest.mark.parametrize(
    ("when", "evening"),
    [
        pytest.param((2026, 9, 22, 22, 0), "2026-09-22", id="22:00-closes-its-evening"),
        pytest.param((2026, 9, 21, 22, 0), "2026-09-21", id="previous-22:00-is-the-previous-evening"),
        pytest.param((2026, 9, 21, 22, 1), "2026-09-22", id="a-minute-later-opens-this-one"),
        pytest.param((2026, 9, 22, 22, 30), "2026-09-23", id="after-22:00-is-tomorrow"),
        pytest.param((2026, 9, 20, 11, 5), "2026-09-20", id="days-before"),
    ],
)
def test_every_time_belongs_to_exactly_one_evening(when: tuple[int, ...], evening: str) -> None:
    from agent.plan.ingest import evening_of, evening_window

    ws = load_workspace(WORLD)
    w = evening_window(ws, DATE)
    ts = dt.datetime(*when, tzinfo=ws.tz)
    assert str(evening_of(ts, w)) == evening
    assert w.contains(ts) is (evening == "2026-09-22")
