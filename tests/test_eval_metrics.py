"""The eval metrics on hand-made briefings: the seed against itself, then one change at a time.

Each row of the table changes the seed's output side in one way and says which scores must move
and to what; every score not named must stay at 1.0, so a change that leaks into an unrelated
metric fails too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.core.arxiv import validate
from agent.plan.anchors import build_registry
from agent.plan.ingest import scan
from agent.plan.parse import parse
from agent.plan.workspace import load_workspace
from agent.write.render import render
from eval.cases import CaseError, load_case
from eval.metrics import (
    COUNTS,
    METRICS,
    RuleContext,
    _all_ids,
    disputed_stated,
    key_facts,
    match_increments,
    score,
    source_key,
    stated_facts,
)
from schemas.briefing import ArxivRow, Briefing, Increment, KeyPoint, SourceRef, VerifyItem
from tests.paths import ROOT, WORLD

CASE = ROOT / "eval" / "cases" / "2026-09-22-inference"
DATE = dt.date(2026, 9, 22)
GOLD = parse((CASE / "gold.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ctx() -> RuleContext:
    """Anchors before the evening and the text of every inbox file, as the runner would give."""
    ws = load_workspace(WORLD)
    reg = build_registry(scan(ws, "inference", DATE), "inference", DATE)
    files = {p.relative_to(WORLD).as_posix(): p.read_text(encoding="utf-8") for p in WORLD.rglob("*.md")}
    return RuleContext(
        date=DATE, anchored_arxiv=frozenset(a.key for a in reg.anchors if a.kind == "arxiv"), files=files
    )


def _copy() -> Briefing:
    return GOLD.model_copy(deep=True)


def _with_increments(b: Briefing, incs: list[Increment]) -> Briefing:
    incs = [i.model_copy(update={"number": n}) for n, i in enumerate(incs, 1)]
    summary = b.summary.model_copy(update={"increment_count": len(incs)})
    return b.model_copy(update={"increments": incs, "summary": summary})


def drop_increment(b: Briefing) -> Briefing:
    return _with_increments(b, b.increments[:-1])


def swap_titles(b: Briefing) -> Briefing:
    a, c = b.increments[0], b.increments[1]
    return _with_increments(
        b, [a.model_copy(update={"title": c.title}), c.model_copy(update={"title": a.title}), *b.increments[2:]]
    )


def _unrelated(title: str = "Rust async runtime 对比：tokio vs smol") -> Increment:
    return GOLD.increments[0].model_copy(
        update={
            "title": title,
            "sources": [SourceRef(ref="inbox/jay/2026-09-22-1050-jay-engineering-filter.md", section="§条目 9")],
        }
    )


def add_increment(b: Briefing) -> Briefing:
    return _with_increments(b, [*b.increments, _unrelated()])


def invalid_arxiv(b: Briefing) -> Briefing:
    row = ArxivRow(arxiv_id="2613.12345", title="month 13", credibility="高", relation="本次新增锚点 → §1.3")
    return b.model_copy(update={"arxiv_rows": [*b.arxiv_rows, row]})


def future_arxiv(b: Briefing) -> Briefing:
    inc = b.increments[4].model_copy(update={"arxiv_line": "arXiv:2611.00042 not yet written"})
    return _with_increments(b, [*b.increments[:4], inc, *b.increments[5:]])


def nine_increments(b: Briefing) -> Briefing:
    extra = [_unrelated(f"Unrelated item {chr(65 + i)} 无关条目 {'x' * i}") for i in range(3)]
    return _with_increments(b, [*b.increments, *extra])


def under_target_said(b: Briefing) -> Briefing:
    out = _with_increments(b, b.increments[:2])
    note = "低于 3 条目标下限：今晚仅 2 条合格增量，未用弱条目补凑"
    return out.model_copy(update={"summary": out.summary.model_copy(update={"count_note": note, "under_target": True})})


def nothing_said(b: Briefing) -> Briefing:
    """No increment at all, said plainly: poor recall, but no rule broken."""
    out = under_target_said(b)
    summary = out.summary.model_copy(update={"increment_count": 0})
    return out.model_copy(update={"increments": [], "summary": summary})


def under_target_silent(b: Briefing) -> Briefing:
    return _with_increments(b, b.increments[:2])


def anchored_increment(b: Briefing) -> Briefing:
    """An increment about 2609.20511 (anchored 9-21), credited to the paper card that holds it."""
    inc = b.increments[4].model_copy(
        update={
            "arxiv_line": "arXiv:2609.20511 EOS Tokens",
            "sources": [SourceRef(ref="paper_cards/2026-09-21/1015-2609-20511.md")],
        }
    )
    return _with_increments(b, [*b.increments[:4], inc, *b.increments[5:]])


def ungrounded_arxiv(b: Briefing) -> Briefing:
    """HookPoint credited to a file that never mentions its arXiv ID."""
    inc = b.increments[4].model_copy(
        update={"sources": [SourceRef(ref="inbox/jay/2026-09-22-inference-engineering-filter.md", section="§条目 4")]}
    )
    return _with_increments(b, [*b.increments[:4], inc, *b.increments[5:]])


def missing_file(b: Briefing) -> Briefing:
    inc = b.increments[0].model_copy(update={"sources": [SourceRef(ref="inbox/jay/2026-09-22-nowhere.md")]})
    return _with_increments(b, [inc, *b.increments[1:]])


def continued_wrong_date(b: Briefing) -> Briefing:
    wrong = {"relation": "9-20锚定", "anchored_on": dt.date(2026, 9, 20)}
    rows = [r.model_copy(update=wrong) if r.arxiv_id == "2609.20511" else r for r in b.arxiv_rows]
    return b.model_copy(update={"arxiv_rows": rows})


def new_arxiv_dropped(b: Briefing) -> Briefing:
    summary = b.summary.model_copy(update={"new_arxiv": b.summary.new_arxiv[:-1]})
    return b.model_copy(update={"summary": summary})


def key_points_stripped(b: Briefing) -> Briefing:
    inc = b.increments[4].model_copy(update={"key_points": []})
    return _with_increments(b, [*b.increments[:4], inc, *b.increments[5:]])


def to_verify_dropped(b: Briefing) -> Briefing:
    return b.model_copy(update={"to_verify": b.to_verify[1:]})


def relevance_changed(b: Briefing) -> Briefing:
    rows = [b.sources[0].model_copy(update={"relevance": "中"}), *b.sources[1:]]
    return b.model_copy(update={"sources": rows})


def source_row_dropped(b: Briefing) -> Briefing:
    return b.model_copy(update={"sources": b.sources[:-1]})


def priorities_reversed(b: Briefing) -> Briefing:
    return b.model_copy(update={"priorities": list(reversed(b.priorities))})


def fact_twice(b: Briefing) -> Briefing:
    """The first increment's first point said again as a point of its own."""
    inc = b.increments[0]
    again = next(p for p in inc.key_points if "--" in " ".join(x.text for x in p.walk()))
    return _with_increments(b, [inc.model_copy(update={"key_points": [*inc.key_points, again]}), *b.increments[1:]])


def cut_points(b: Briefing) -> Briefing:
    """Three points of the second increment cut where a clause began, as a trimming rule leaves them:
    a trailing comma, a connective whose clause never came, an ellipsis."""
    inc = b.increments[1]
    cut = [
        p.model_copy(update={"text": p.text.rstrip("。") + end})
        for p, end in zip(inc.key_points[:3], ("，", "即使", "…"), strict=True)
    ]
    return _with_increments(
        b, [b.increments[0], inc.model_copy(update={"key_points": [*cut, *inc.key_points[3:]]}), *b.increments[2:]]
    )


def colon_heading_kept(b: Briefing) -> Briefing:
    """A point ending in a colon with its steps nested under it is a heading, not a cut sentence."""
    inc = b.increments[1]
    head = KeyPoint(text="三种方案对比：", children=list(inc.key_points[:2]))
    return _with_increments(
        b, [b.increments[0], inc.model_copy(update={"key_points": [head, *inc.key_points[2:]]}), *b.increments[2:]]
    )


def release_split(b: Briefing) -> Briefing:
    """One release told as two increments: 'SGLang v0.5.19 …' and 'SGLang v0.5.19.0：…'."""
    inc = b.increments[0]
    assert inc.title.startswith("SGLang v0.5.19")
    other = inc.model_copy(
        update={"number": len(b.increments) + 1, "title": "SGLang v0.5.19.0：另一半", "sources": inc.sources[:1]}
    )
    return _with_increments(b, [*b.increments, other])


def stapled_question(b: Briefing) -> Briefing:
    v = b.to_verify[0]
    stapled = v.model_copy(update={"title": f"{v.title}；另一个问题", "problem": "A 是多少？B 又是多少？"})
    return b.model_copy(update={"to_verify": [stapled, *b.to_verify[1:]]})


def one_question_with_alternatives(b: Briefing) -> Briefing:
    v = b.to_verify[0]
    asked = v.model_copy(update={"problem": f"{v.problem}+35% 相对什么（B200？旧版本？）"})
    return b.model_copy(update={"to_verify": [asked, *b.to_verify[1:]]})


def rendered(b: Briefing) -> Briefing:
    """Through our renderer and parser: what a reader of our own output gets."""
    return parse(render(b))


# (name, change to the output, expected scores; every metric not named must be 1.0)
CASES: list[tuple[str, Callable[[Briefing], Briefing], dict[str, float | tuple[str, float]]]] = [
    ("identical", lambda b: b, {}),
    ("rendered and parsed back", rendered, {}),
    (
        "drop an increment",
        drop_increment,
        # its facts are missed too: no score reads 1.000 while a gold increment is unaccounted for
        {"increment_recall": 5 / 6, "increment_f1": 2 * (5 / 6) / (1 + 5 / 6), "key_fact_recall": 49 / 56},
    ),
    ("swapped titles still match by file+§", swap_titles, {}),
    ("extra increment", add_increment, {"increment_precision": 6 / 7, "increment_f1": 2 * (6 / 7) / (1 + 6 / 7)}),
    ("invalid arXiv ID", invalid_arxiv, {"rule_compliance": 0.75}),
    ("arXiv ID after the briefing date", future_arxiv, {"rule_compliance": ("<", 1.0)}),
    ("nine increments", nine_increments, {"rule_compliance": 0.75, "increment_precision": 6 / 9, "increment_f1": 0.8}),
    (
        "under target, said so",
        under_target_said,
        {"increment_recall": 2 / 6, "increment_f1": 0.5, "key_fact_recall": ("<", 0.5)},
    ),
    ("nothing found, said so", nothing_said, {"increment_recall": 0.0, "increment_f1": 0.0, "key_fact_recall": 0.0}),
    (
        "under target, silent",
        under_target_silent,
        {"increment_recall": 2 / 6, "increment_f1": 0.5, "rule_compliance": 0.75, "key_fact_recall": ("<", 0.5)},
    ),
    ("increment about an anchored arXiv ID", anchored_increment, {"rule_compliance": 0.75}),
    ("arXiv ID not in the credited file", ungrounded_arxiv, {"rule_compliance": 0.75}),
    ("credited file missing", missing_file, {"rule_compliance": 0.75}),
    ("continued row with the wrong date", continued_wrong_date, {"continued_arxiv_f1": 18 / 19}),
    ("new arXiv ID dropped", new_arxiv_dropped, {"new_arxiv_f1": 2 * (4 / 5) / (1 + 4 / 5)}),
    ("key points stripped", key_points_stripped, {"key_fact_recall": ("<", 1.0)}),
    ("to-verify item dropped", to_verify_dropped, {"to_verify_recall": 4 / 5}),
    ("relevance label changed", relevance_changed, {"relevance_agreement": 11 / 12}),
    ("source row dropped", source_row_dropped, {"sources_recall": 11 / 12, "relevance_agreement": 11 / 12}),
    ("priorities reversed", priorities_reversed, {"priority_agreement": ("<", 0.6)}),
    ("a fact stated twice", fact_twice, {"facts_twice": ("≥", 1.0), "points_over_8": 1.0}),  # its ninth point
    ("points cut mid-clause", cut_points, {"cut_sentences": 3.0, "key_fact_recall": ("≥", 0.0)}),
    ("a colon heading over its steps", colon_heading_kept, {"key_fact_recall": ("≥", 0.0)}),
    (
        "one release in two increments",
        release_split,
        {
            "releases_split": 1.0,
            "increment_precision": 6 / 7,
            "increment_f1": 2 * (6 / 7) / (1 + 6 / 7),
            "facts_twice": 0.0,
        },
    ),
    ("two questions in one item", stapled_question, {"multi_question_items": 1.0, "to_verify_recall": ("<", 1.01)}),
    ("one question listing alternatives", one_question_with_alternatives, {"to_verify_recall": ("<", 1.01)}),
]


@pytest.mark.parametrize(("name", "change", "expected"), CASES, ids=[c[0] for c in CASES])
def test_scores(
    name: str,
    change: Callable[[Briefing], Briefing],
    expected: dict[str, float | tuple[str, float]],
    ctx: RuleContext,
) -> None:
    card = score(GOLD, change(_copy()), ctx)
    assert list(card.scores) == list(METRICS)
    for metric, s in card.scores.items():
        want = expected.get(metric, 0.0 if metric in COUNTS else 1.0)
        assert s.value >= 0.0 if metric in COUNTS else 0.0 <= s.value <= 1.0, (metric, s.value)
        if isinstance(want, tuple):
            op, bound = want
            assert s.value >= bound if op == "≥" else s.value < bound, (metric, s.value, s.missed, s.extra)
        else:
            assert s.value == pytest.approx(want), (metric, s.value, s.missed, s.extra, s.note)


def test_drop_names_the_missed_increment(ctx: RuleContext) -> None:
    s = score(GOLD, drop_increment(_copy()), ctx).scores["increment_recall"]
    assert s.missed == (f"增量 6：{GOLD.increments[5].title}",) and s.extra == ()


def test_swapped_titles_pair_by_file_and_section() -> None:
    m = match_increments(GOLD, swap_titles(_copy()))
    assert [(p.gold, p.out) for p in m.pairs] == [(i, i) for i in range(6)]
    assert m.pairs[0].reasons[0].startswith("file+§ inbox/jay/2026-09-22-inference-engineering-filter.md")


def test_extra_increment_is_listed(ctx: RuleContext) -> None:
    s = score(GOLD, add_increment(_copy()), ctx).scores["increment_precision"]
    assert s.extra == ("增量 7：Rust async runtime 对比：tokio vs smol",)


def test_violations_say_what_broke(ctx: RuleContext) -> None:
    broken = score(GOLD, invalid_arxiv(_copy()), ctx).scores["rule_compliance"].missed
    assert broken and broken[0].startswith("valid arXiv: 2613.12345") and "month 13" in broken[0]
    broken = score(GOLD, nine_increments(_copy()), ctx).scores["rule_compliance"].missed
    assert broken == ("count: 9 increments, more than 8",)
    broken = score(GOLD, anchored_increment(_copy()), ctx).scores["rule_compliance"].missed
    title = GOLD.increments[4].title
    assert broken == (
        f"no anchored arXiv: 增量 5：{title} is about arXiv 2609.20511, anchored before 2026-09-22,"
        " and does not say it supplements it",
    )


def test_a_declared_supplement_to_an_anchored_paper_complies(ctx: RuleContext) -> None:
    b = anchored_increment(_copy())
    declared = {"relation": "对 9-21 锚定的 EOS Tokens 的补充：新增长度膨胀的实测", "relation_kind": "supplement"}
    inc = b.increments[4].model_copy(update=declared)
    b = _with_increments(b, [*b.increments[:4], inc, *b.increments[5:]])
    assert score(GOLD, b, ctx).scores["rule_compliance"].value == 1.0


def test_wrong_date_is_a_miss_and_an_extra(ctx: RuleContext) -> None:
    s = score(GOLD, continued_wrong_date(_copy()), ctx).scores["continued_arxiv_f1"]
    assert s.missed == ("2609.20511@9-21",) and s.extra == ("2609.20511@9-20",)


def test_missed_facts_are_named(ctx: RuleContext) -> None:
    s = score(GOLD, key_points_stripped(_copy()), ctx).scores["key_fact_recall"]
    assert "增量 5 · 46.9%" in s.missed and "增量 5 · qwen3-14b" in s.missed
    assert "增量 5 · 3.6%" in s.matched  # the title still says it
    assert all(x.startswith("增量 5 · ") for x in s.missed)


def _point(text: str) -> Increment:
    return GOLD.increments[0].model_copy(update={"key_points": [KeyPoint(text=text)]})


@pytest.mark.parametrize(
    ("point", "want"),
    [
        # a month-day reference to an earlier evening is not a range, and its ends are not figures
        ("热度：HF Daily 由 9-20 的 #3（88▲）升至 9-21 的 #2（121▲）", {"#3", "88", "#2", "121"}),
        ("9-20 只有摘要，今晚读到的细节", set()),
        # a year said in words is not a key fact; a full date is
        ("TGI 死亡是 2026 年推理基础设施重大里程碑", set()),
        ("TGI 于 2026-03-21 停止维护", {"2026-03-21"}),
        # an em dash before a name does not make it a flag
        ("（9-20 已锚定）——SGLang/LMDeploy ~16,200 tok/s", {"16200"}),
        ("vLLM 需加 --ipc=host", {"--ipc=host"}),
        # ranges with their units stay ranges, whatever their ends look like
        (
            "上下文 8-32K，加速 5-6.5×，召回 0.4–6.8%",
            {"8-32K", "8K", "32K", "5-6.5×", "5×", "6.5×", "0.4-6.8%", "0.4%", "6.8%"},
        ),
    ],
)
def test_key_facts_are_facts(point: str, want: set[str]) -> None:
    assert key_facts(_point(point)) == want
    assert stated_facts(_point(point)) >= want  # what the output states is read the same way


@pytest.mark.parametrize(
    ("directory", "key_file", "key"),
    [
        (
            "inbox/jay",
            "2026-09-22-inference-engineering-filter.md",
            "inbox/jay/2026-09-22-inference-engineering-filter",
        ),
        ("inbox/tom", "2026-09-21-inference-e1prep", "inbox/tom/2026-09-21-inference-e1prep"),
        ("paper_cards Sep 20-22", "1432-2609-19499（Sample Count…）；其余卡", "paper_cards"),
        ("paper_cards 2026-09-21~2026-09-22", "1432-2609-19499（…）", "paper_cards"),
        ("work-queue 9-22 22:00", "Top15 无 inference 专项净新增", "work-queue"),
        ("work-queue", "2026-09-22-2200.md", "work-queue"),
    ],
)
def test_source_keys(directory: str, key_file: str, key: str) -> None:
    assert source_key(directory, key_file) == key


def test_the_seed_case_points_at_the_demo_world() -> None:
    case = load_case(CASE)
    assert (case.workspace, case.topic, case.date) == (WORLD, "inference", DATE)
    assert case.cassettes == ROOT / "cassettes" / "world"
    rows = case.rows()  # each cassette set is its own row, scored and baselined on its own
    assert [(r.name, r.cassettes) for r in rows] == [
        ("2026-09-22-inference", ROOT / "cassettes" / "world"),
        ("2026-09-22-inference@world-relayed", ROOT / "cassettes" / "world-relayed"),
        ("2026-09-22-inference@world-shared", ROOT / "cassettes" / "world-shared"),
    ]
    assert [r.extraction for r in rows] == ["per-topic", "per-topic", "shared"]
    assert {r.folder for r in rows} == {case.folder}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("cassettes = 3", "cassettes must be a folder or a list"),
        ('cassettes = ["a/x", "b/x"]', "share a folder name"),
        ("shared = 3", "shared must be a folder or a list"),
        ('shared = ["a/x"]', "shared sets need a cassettes set beside them"),
        ('cassettes = ["a/x"]\nshared = ["b/x"]', "share a folder name"),
    ],
)
def test_bad_cassette_sets_are_one_line_errors(tmp_path: Path, value: str, message: str) -> None:
    folder = tmp_path / "2026-09-22-x"
    folder.mkdir()
    (folder / "gold.md").write_text((CASE / "gold.md").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "case.toml").write_text(f'workspace = "{WORLD}"\ntopic = "inference"\ndate = 2026-09-22\n{value}\n')
    with pytest.raises(CaseError, match=message):
        load_case(folder)


def test_absolute_paths_in_a_case(tmp_path: Path) -> None:
    folder = tmp_path / "2026-09-22-x"
    folder.mkdir()
    (folder / "gold.md").write_text((CASE / "gold.md").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "case.toml").write_text(f'workspace = "{WORLD}"\ntopic = "inference"\ndate = "2026-09-22"\n')
    case = load_case(folder)
    assert case.workspace == WORLD and case.cassettes is None and case.gold().increments


# Item 5 of issue #11: the relayed answers raise two of the seed's new to-verify items in other
# words; the score must see them (same increment, same question) and not a different question
# about the same increment. Titles and problems below are the relayed answers' own notes.
FP8 = VerifyItem(
    number=1,
    title="FP8 KV 的延迟 / 吞吐数字",
    risk="中",
    problem='文档称 decode 速度"显著"提升，但"具体延迟数字（p50 / p99）""具体吞吐数字（tok/s）"均未给出，'
    "只有无刻度对比图。",
    suggestion="读原文补齐各卡型 p50/p99 与 tok/s 后再写入。",
)
HOOK_UPSTREAM = VerifyItem(
    number=2,
    title="HookPoint 是否进入 vLLM 上游及代码发布",
    risk="中",
    problem='文中说自定义 CUDA kernel 是否已合入 vLLM 官方代码库"文中没有说明"，过滤器也没搜到 PR，'
    '代码标注 "to be released"；目前不能写成 vLLM 可用能力。',
    suggestion="跟踪论文代码仓库发布与 vLLM 仓库中相关 PR，确认可用版本。",
)
HOOK_METHOD = VerifyItem(  # same increment, another question: must not count
    number=3,
    title="HookPoint：overhead 的测量口径",
    risk="低",
    problem="文中未说明 overhead 指吞吐还是延迟、观测了多少个 tensor / 哪些层，区间两端对应的配置也不清楚。",
    suggestion="查论文 overhead 表格及实验设置，记录基线指标与观测点数量。",
)
MERGED_FP8 = VerifyItem(  # the same note inside an item that merges the notes about one increment
    number=1,
    title="vLLM FP8 KV Cache 官方验证：FA3 修复所需的版本；FP8 KV 的延迟 / 吞吐数字",
    risk="中",
    problem="FA3 修复所需的版本：未写从哪个 FA3 / vLLM 版本起修复；FP8 KV 的延迟 / 吞吐数字：" + FP8.problem,
    suggestion="；".join(["在 release notes 中确认最低版本", FP8.suggestion]),
)


@pytest.mark.parametrize(
    ("items", "recall", "precision", "matched"),
    [
        pytest.param([FP8, HOOK_UPSTREAM, HOOK_METHOD], 2 / 5, 2 / 3, {2, 3}, id="paraphrases-raise-gold-items"),
        pytest.param([HOOK_METHOD], 0.0, 0.0, set(), id="another-question-on-the-subject"),
        pytest.param([MERGED_FP8], 1 / 5, 1.0, {2}, id="inside-a-merged-item"),
    ],
)
def test_to_verify_matches_on_subject_and_question(
    ctx: RuleContext, items: list[VerifyItem], recall: float, precision: float, matched: set[int]
) -> None:
    out = _copy().model_copy(update={"to_verify": items})
    scores = score(GOLD, out, ctx).scores
    assert scores["to_verify_recall"].value == pytest.approx(recall)
    assert scores["to_verify_precision"].value == pytest.approx(precision)
    raised = {v.number for v in GOLD.to_verify if not any(v.title == m for m in scores["to_verify_recall"].missed)}
    assert raised == matched


def test_priority_agreement_counts_unpaired_gold_rows(ctx: RuleContext) -> None:
    b = _copy()
    s = score(GOLD, b.model_copy(update={"priorities": b.priorities[:5]}), ctx).scores["priority_agreement"]
    assert s.value == pytest.approx((1.0 + 5 / 9) / 2) and "5/9 paired" in s.note
    assert sum("(no output row)" in m for m in s.missed) == 4


def test_a_disputed_figure_stated_as_fact_is_counted() -> None:
    """The 10-21 gold disputes Mooncake's TTFT (2.1× or 1.6×) in 三; an output that states either
    figure in an increment is counted, and the gold itself is not."""
    gold = parse((ROOT / "eval" / "cases" / "2026-10-21-inference" / "gold.md").read_text(encoding="utf-8"))
    assert disputed_stated(gold, gold).value == 0
    inc = next(i for i in gold.increments if i.title.startswith("Mooncake"))
    stated = inc.model_copy(update={"key_points": [*inc.key_points, KeyPoint(text="跨实例前缀命中 TTFT 降低 2.1×")]})
    out = gold.model_copy(update={"increments": [stated if i is inc else i for i in gold.increments]})
    s = disputed_stated(gold, out)
    assert s.value == 1 and "2.1×" in s.extra[0]


@pytest.mark.parametrize(
    ("text", "counted"),
    [
        ("arXiv 2613.04471", True),  # month 13, cited
        ("arXiv 2613.04471（编号无效）", False),  # named as invalid: not a citation
        ("arXiv 2609.19876", False),
    ],
)
def test_an_invalid_id_marked_invalid_is_named_not_cited(text: str, counted: bool) -> None:
    b = _copy()
    note = b.no_increment[0].model_copy(update={"note": f"{b.no_increment[0].note}；{text}"})
    out = b.model_copy(update={"no_increment": [note, *b.no_increment[1:]]})
    invalid = [i for i in _all_ids(out) if not validate(i, not_after=GOLD.date).ok]
    assert bool(invalid) is counted
