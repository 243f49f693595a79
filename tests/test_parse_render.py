"""The briefing format both ways: the seed is read without loss, and render/parse are inverse."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.core.arxiv import find_ids
from agent.core.dates import read_day
from agent.core.errors import ParseError
from agent.plan.parse import parse
from agent.write.render import render
from schemas.briefing import (
    ArxivRow,
    Briefing,
    Credibility,
    Increment,
    KeyPoint,
    NoIncrementNote,
    PriorityRow,
    SourceRef,
    SourceRow,
    StatusSummary,
    VerifyItem,
)
from tests.paths import SEED, examples

SEED_TEXT = SEED.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def seed() -> Briefing:
    return parse(SEED_TEXT, path=str(SEED))


def test_seed_counts(seed: Briefing) -> None:
    assert seed.topic == "inference"
    assert seed.date == dt.date(2026, 9, 22)
    assert len(seed.increments) == 6
    assert len(seed.sources) == 12
    assert len(seed.to_verify) == 5
    assert len(seed.arxiv_rows) == 24
    assert len(seed.priorities) == 9
    assert [v.carried_from for v in seed.to_verify] == ["", "", "", "9-21", "9-21"]
    assert seed.summary.new_arxiv == ["2605.11093", "2603.04428", "2506.09713", "2609.19657", "2607.02574"]


def test_every_arxiv_id_of_the_seed_is_in_the_model(seed: Briefing) -> None:
    dumped = seed.model_dump_json()
    ids = {m.id.key for m in find_ids(SEED_TEXT)}
    assert len(ids) >= 24
    assert {i for i in ids if i not in dumped} == set()


def test_every_source_path_of_the_seed_is_in_the_model(seed: Briefing) -> None:
    paths = set(re.findall(r"inbox/\w+/[\w.-]+\.md", SEED_TEXT)) | set(re.findall(r"\b\d{4}-\d{4}-\d{5}\b", SEED_TEXT))
    dumped = seed.model_dump_json()
    files = {p.rsplit("/", 1)[-1] for p in paths}
    assert files and {f for f in files if f not in dumped} == set()
    credited = {s.ref for inc in seed.increments for s in inc.sources}
    assert "inbox/jay/2026-09-22-1450-jay-engineering-filter.md" in credited


def test_every_key_point_bullet_of_the_seed_is_in_the_model(seed: Briefing) -> None:
    """Each bullet of each 要点 (multi-line or flattened) must come back as a key point."""
    points = {p.text for inc in seed.increments for p in inc.all_points()}
    blocks = re.findall(r"要点：(.*?)\n可信度", SEED_TEXT, flags=re.S)
    assert len(blocks) == 6
    expected: list[str] = []
    for block in blocks:
        for piece in re.split(r"(?:^|\s+)(?:-|\d{1,2}\.)\s+", block.strip()):
            if piece.strip():
                expected.append(piece.strip())
    assert len(expected) >= 40
    assert [e for e in expected if e not in points] == []
    dynamo = seed.increments[2].key_points[1]
    assert dynamo.text == "核心能力：" and len(dynamo.children) == 4 and dynamo.children[0].numbered


def test_seed_round_trip(seed: Briefing) -> None:
    once = render(seed)
    assert parse(once) == seed
    assert render(parse(once)) == once


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("inbox/jay/x.md", "- inbox/jay/x.md"),  # no note: no empty one after it
        ("inbox/a: b.md", "- inbox/a: b.md："),  # a separator the parser would split at keeps the colon
    ],
    ids=["bare", "separator-in-source"],
)
def test_a_five_source_without_a_note_reads_back_as_written(seed: Briefing, source: str, line: str) -> None:
    b = seed.model_copy(update={"no_increment": [NoIncrementNote(source=source, note="")]})
    once = render(b)
    assert line in once.splitlines()
    assert parse(once).no_increment == b.no_increment and render(parse(once)) == once


# --- generated briefings -----------------------------------------------------------------------

_WORD = st.text(alphabet="推理缓存调度框架增量基线abcdefgXYZ0123456789.-_/", min_size=1, max_size=12)
_TEXT = st.lists(_WORD, min_size=1, max_size=6).map(" ".join)


@st.composite
def _points(draw: st.DrawFn, depth: int = 0) -> KeyPoint:
    children = draw(st.lists(_points(depth + 1), max_size=2)) if depth < 2 else []
    return KeyPoint(text=draw(_TEXT), numbered=depth > 0 and draw(st.booleans()), children=children)


@st.composite
def briefings(draw: st.DrawFn) -> Briefing:
    n = draw(st.integers(min_value=0, max_value=4))
    incs = [
        Increment(
            number=i + 1,
            title=draw(_TEXT),
            stars=draw(st.integers(1, 5)),
            sources=draw(
                st.lists(
                    st.builds(SourceRef, ref=_WORD, section=st.sampled_from(["", "§条目 1", "§一.2"])),
                    min_size=1,
                    max_size=3,
                )
            ),
            arxiv_line=draw(st.sampled_from(["", "arXiv:2605.11093v1 HookPoint"])),
            key_points=draw(st.lists(_points(), max_size=4)),
            credibility=Credibility(
                level=draw(st.sampled_from(["高", "中", "低"])), reason=draw(st.sampled_from(["", "官方"]))
            ),
            relation=draw(_TEXT),
            suggested_section=draw(_TEXT),
        )
        for i in range(n)
    ]
    verify = [
        VerifyItem(
            number=i + 1,
            title=draw(_TEXT),
            risk=draw(st.sampled_from(["高", "中", "低"])),
            carried_from=draw(st.sampled_from(["", "9-21"])),
            problem=draw(_TEXT),
            suggestion=draw(_TEXT),
        )
        for i in range(draw(st.integers(0, 3)))
    ]
    return Briefing(
        topic=draw(st.sampled_from(["inference", "llm-infra", "risk"])),
        date=draw(st.dates(dt.date(2020, 1, 1), dt.date(2030, 12, 31))),
        summary=StatusSummary(
            increment_count=n,
            count_note=draw(st.sampled_from(["", "在 3-8 目标区间内"])),
            window=draw(st.sampled_from(["", "2026-09-21 22:00 ~ 2026-09-22 22:00"])),
            headlines=[i.title for i in incs],
            new_arxiv=draw(st.lists(st.sampled_from(["2605.11093", "2609.19657"]), max_size=2, unique=True)),
            continued_arxiv=draw(st.sampled_from(["0", "7", "25+"])),
        ),
        sources=draw(
            st.lists(
                st.builds(
                    SourceRow,
                    directory=_WORD,
                    key_file=_WORD,
                    held=st.sampled_from(["", "a · b"]),
                    relevance=st.sampled_from(["高", "基线", "邻接", "参考"]),
                ),
                max_size=4,
            )
        ),
        increments=incs,
        to_verify=verify,
        arxiv_rows=draw(
            st.lists(
                st.builds(
                    ArxivRow,
                    arxiv_id=st.sampled_from(["2605.11093v1", "2609.19657"]),
                    title=_TEXT,
                    credibility=st.just("高"),
                    relation=_TEXT,
                ),
                max_size=3,
            )
        ),
        no_increment_intro=draw(st.sampled_from(["", "以下来源已检查："])),
        no_increment=draw(st.lists(st.builds(NoIncrementNote, source=_WORD, note=_TEXT), max_size=3)),
        priorities=draw(
            st.lists(
                st.builds(PriorityRow, level=st.sampled_from(["🔴 最高", "🟡 中"]), content=_TEXT, action=_TEXT),
                max_size=3,
            )
        ),
        footer=draw(st.sampled_from(["", "本报告由 Tom 实例自动生成"])),
    )


# each example is a whole briefing: every block, each with several drawn rows
@settings(max_examples=examples(150), suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(briefings())
def test_generated_round_trip(b: Briefing) -> None:
    text = render(b)
    assert parse(text) == b
    assert render(parse(text)) == text


# --- errors ------------------------------------------------------------------------------------


def _without(block_header: str) -> str:
    lines = SEED_TEXT.splitlines()
    return "\n".join(ln for ln in lines if not ln.startswith(block_header))


@pytest.mark.parametrize(
    ("text", "block", "line_has"),
    [
        pytest.param(_without("三、"), "三、值得警惕的矛盾或待核实说法", "四、", id="missing-block-3"),
        pytest.param(_without("六、"), "六、建议今晚 E2 活文档更新优先级", "五、", id="missing-last-block"),
        pytest.param(
            SEED_TEXT.replace("四、可引用", "XX").replace("三、值得", "四、可引用 arXiv 号列表\n三、值得"),
            "三、值得警惕的矛盾或待核实说法",
            "四、",
            id="out-of-order",
        ),
        pytest.param("# just notes\n- a\n", "title", "just notes", id="not-a-briefing"),
        pytest.param("", "title", "", id="empty"),
    ],
)
def test_not_a_briefing_names_the_block(text: str, block: str, line_has: str) -> None:
    with pytest.raises(ParseError) as err:
        parse(text, path="x.md")
    assert err.value.block == block
    assert line_has in err.value.line
    assert block in str(err.value) and "x.md:" in str(err.value)


def test_messy_variants_parse() -> None:
    """Decorated headers, halfwidth punctuation and a missing optional line still parse."""
    messy = (
        SEED_TEXT.replace("一、检查过的来源清单", "## 一、检查过的来源清单")
        .replace("可信度：高（GitHub", "可信度: 高(GitHub")
        .replace("PR 编号可查）", "PR 编号可查)")
        .replace("- 核心新增：", "- 核心新增: ")
    )
    b = parse(messy)
    assert len(b.increments) == 6 and b.increments[0].credibility.level == "高"
    assert len(b.summary.headlines) == 6


_LINES = SEED_TEXT.splitlines()


@st.composite
def mangled(draw: st.DrawFn) -> str:
    """The seed with lines dropped, repeated, swapped or garbled, as a broken upstream agent writes it."""
    lines = list(_LINES)
    for _ in range(draw(st.integers(1, 6))):
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "swap", "garble", "zero", "cut"]))
        if op == "drop" and len(lines) > 1:
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "garble":
            lines[i] = draw(st.text(alphabet="增量矛盾/待核实①⑳：:（(）)⭐|-0123456789 §", max_size=30))
        elif op == "zero":
            lines[i] = re.sub(r"\d+", "0", lines[i])
        else:
            lines[i] = lines[i][: len(lines[i]) // 2]
    return "\n".join(lines)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(mangled())
def test_a_mangled_briefing_parses_or_says_where_it_stopped(text: str) -> None:
    try:
        b = parse(text, path="m.md")
    except ParseError as e:
        assert e.block and e.line_no >= 1 and "m.md:" in str(e)
    else:
        assert render(parse(render(b))) == render(b)


# --- typed facts the words carry --------------------------------------------------------------


@pytest.mark.parametrize(
    ("relation", "anchored_on"),
    [
        ("9-21锚定", dt.date(2026, 9, 21)),
        ("9-20锚定；续立确认", dt.date(2026, 9, 20)),
        ("9-2 锚定", dt.date(2026, 9, 2)),
        ("3-15锚定", dt.date(2026, 3, 15)),  # half a year back: this March, not next
        ("本次新增锚点 → §1.3 KV Cache", None),
        ("2-30锚定", None),  # no such day in any year
    ],
)
def test_an_arxiv_row_reads_its_anchoring_day(relation: str, anchored_on: dt.date | None) -> None:
    lines = SEED_TEXT.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.startswith("| 2609.20511 "))
    cells = lines[at].split(" | ")
    lines[at] = " | ".join([*cells[:-1], f"{relation} |"])
    row = next(r for r in parse("\n".join(lines)).arxiv_rows if r.arxiv_id == "2609.20511")
    assert (row.relation, row.anchored_on) == (relation, anchored_on)


def test_the_seed_says_which_rows_continue_and_which_increments_supplement(seed: Briefing) -> None:
    continued = [r for r in seed.arxiv_rows if r.anchored_on is not None]
    assert len(continued) == len(seed.arxiv_rows) - len(seed.summary.new_arxiv)
    assert all(f"{r.anchored_on.month}-{r.anchored_on.day}锚定" in r.relation for r in continued if r.anchored_on)
    kinds = [i.relation_kind for i in seed.increments]
    assert kinds[:2] == ["supplement", "supplement"]  # "是对 9-20 锚定的关键补充", "是对 9-21 锚定的工程化补充"
    assert "new" in kinds


@pytest.mark.parametrize(
    ("text", "ref", "expected"),
    [
        ("9-18", dt.date(2026, 9, 22), dt.date(2026, 9, 18)),
        (" 9-18 ", dt.date(2026, 9, 22), dt.date(2026, 9, 18)),
        ("09-02", dt.date(2026, 9, 22), dt.date(2026, 9, 2)),
        ("12-30", dt.date(2027, 1, 2), dt.date(2026, 12, 30)),  # read just after new year: last year's
        ("9-21", dt.date(2026, 9, 20), dt.date(2026, 9, 21)),  # a living document written after that evening
        ("1-2", dt.date(2026, 12, 30), dt.date(2027, 1, 2)),
        ("1-1", dt.date(2026, 12, 31), dt.date(2027, 1, 1)),  # written the evening after, across the year end
        ("3-15", dt.date(2026, 9, 22), dt.date(2026, 3, 15)),  # half a year back is still this year's
        ("10-23", dt.date(2026, 9, 22), dt.date(2026, 10, 23)),  # the last day of the lead
        ("10-24", dt.date(2026, 9, 22), dt.date(2025, 10, 24)),  # past the lead: last year's
        ("2-29", dt.date(2024, 3, 1), dt.date(2024, 2, 29)),
        ("2-29", dt.date(2028, 2, 20), dt.date(2028, 2, 29)),
        ("2-29", dt.date(2026, 3, 1), dt.date(2024, 2, 29)),  # the last Feb 29, two years back
        ("2-29", dt.date(2027, 3, 1), dt.date(2024, 2, 29)),  # 2028's is past the lead
        ("12-31", dt.date(9999, 12, 31), dt.date(9999, 12, 31)),  # the calendar's last evening
        ("13-1", dt.date(2026, 9, 22), None),  # no such day
        ("9-22锚定", dt.date(2026, 9, 22), None),
        ("2026-9-22", dt.date(2026, 9, 22), None),
        ("9/22", dt.date(2026, 9, 22), None),
        ("", dt.date(2026, 9, 22), None),
    ],
)
def test_read_day(text: str, ref: dt.date, expected: dt.date | None) -> None:
    assert read_day(text, ref) == expected
