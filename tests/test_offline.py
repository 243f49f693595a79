"""The offline extractor on workspaces it has never seen, and the backend choice around it.

Every workspace here is built in tmp_path: other agents, other heading styles, other topics with
their own profiles, a flood of candidates, an evening with almost nothing. Whatever it finds, the
briefing must keep every rule (checked by the eval's own `rule_compliance`), hold at most 8
increments, never pad, and leave out every arXiv ID that cannot exist on the evening.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import textwrap
from pathlib import Path

import pytest

from agent.core.arxiv import find_ids, validate
from agent.core.labels import ZH
from agent.extract.offline.extractor import _urls
from agent.extract.offline.outline import parse_outline
from agent.pipeline import RunReport, Settings, run
from agent.plan.parse import parse
from eval.metrics import rule_compliance
from eval.runner import rule_context
from tests.paths import ROOT, WORLD, predigest

DATE = dt.date(2026, 3, 14)

CONFIG = """
[workspace]
agent = "me"

[topics.databases]
living = "living/databases.md"
profile = \"\"\"
数据库与存储引擎：PostgreSQL、MySQL、SQLite 的版本与迁移；索引（B-tree、HNSW、IVF）与查询优化；
复制、备份与高可用；向量检索与 pgvector。
\"\"\"
adjacent = \"\"\"
GPU 推理引擎与模型服务、前端框架、Kubernetes 运维。
\"\"\"

[topics.bare]
living = "living/bare.md"
"""

LIVING = """# databases 活文档

## §2.1 索引
- **HNSW 参数**：ef_search 默认 40。（3-10 databases e1prep）

## §2.2 复制与高可用
- **逻辑复制**：PostgreSQL 17 支持 failover slot。（3-11 databases e1prep）
"""

BARE_LIVING = """# bare 活文档

## §1 编译器
- **LLVM 20**：新的 pass manager 默认开启。
- **GCC 15**：C23 默认。
"""


def workspace(tmp_path: Path, files: dict[str, str], config: str = CONFIG) -> Path:
    root = tmp_path / "ws"
    (root / "living").mkdir(parents=True)
    (root / "predigest.toml").write_text(config, encoding="utf-8")
    (root / "living" / "databases.md").write_text(LIVING, encoding="utf-8")
    (root / "living" / "bare.md").write_text(BARE_LIVING, encoding="utf-8")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return root


def offline_run(root: Path, tmp_path: Path, topic: str = "databases", date: dt.date = DATE) -> RunReport:
    s = Settings(workspace=root, topic=topic, date=date, out=tmp_path / "out", force=True, backend="offline")
    return run(s)


def assert_valid(report: RunReport, max_increments: int = 8) -> None:
    """What every offline briefing must be, whatever the workspace: the rules kept, the count
    bounded and said plainly when short, no impossible arXiv ID anywhere in the text."""
    briefing = parse(report.markdown)
    assert briefing.increments == report.composed.briefing.increments
    compliance = rule_compliance(briefing, rule_context(report.evening, briefing))
    assert compliance.value == 1.0, compliance.missed
    assert len(briefing.increments) <= max_increments
    if len(briefing.increments) < 3:
        assert "低于 3 条" in briefing.summary.count_note
    for m in find_ids(report.markdown):
        assert validate(m.id, not_after=report.evening.window.date).ok, m.id
    assert ZH.extractor_offline in briefing.footer
    assert report.backend == "offline"


REPORT_HASH = """
# 数据库周报 · 2026-03-14

> 过滤器：ann / db-filter

| # | 条目 | 评级 |
|---|---|---|
| 1 | pgvector 0.9 迭代扫描 | ⭐⭐⭐⭐ |
| 2 | vLLM 新版本 | ⭐⭐⭐⭐ |

## Item 1: pgvector 0.9 iterative index scan

- Source: https://github.com/pgvector/pgvector/releases (release notes)
- Credibility: high (official release notes)

- HNSW 索引加 WHERE 过滤后结果不足 k 条的问题由 iterative scan 解决
  - 设置 `hnsw.iterative_scan = relaxed_order`
  - 召回率在过滤比例 1% 时从 0.42 提升到 0.93
- PostgreSQL 16 与 17 均支持

## Item 2: vLLM 新版本

- 来源：GPU 推理引擎社区快讯
- 归类：GPU 推理引擎与模型服务，与数据库无关

- 推理吞吐提升 12%
"""

REPORT_BOLD = """
今日数据库要闻（bob）

**SQLite 3.50 发布**
- 评级：★★★★
- 可信度：中高（官方 changelog）
- 新增 JSONB 索引加速，查询优化器对复合索引的选择更稳
- 备份 API 支持增量备份

**前端框架 Svelte 6**
- 评级：★★★
- 与数据库无关，前端框架更新
"""

CARD = """
---
arxiv: "2603.01234"
title: "RaBitQ-2: Faster Vector Index Quantization"
category: databases
---

# RaBitQ-2: Faster Vector Index Quantization

## 关键结论
- IVF 索引在 recall 0.95 时 QPS 提升 2.1×
- 向量检索内存占用降低 40%
"""


def test_other_agents_and_heading_styles(tmp_path: Path) -> None:
    root = workspace(
        tmp_path,
        {
            "inbox/ann/2026-03-14-0900-db-filter.md": REPORT_HASH,
            "inbox/bob/2026-03-14-1200-db-news.md": REPORT_BOLD,
            "paper_cards/2026-03-14/1000-2603-01234.md": CARD,
        },
    )
    report = offline_run(root, tmp_path)
    assert_valid(report)
    titles = [i.title for i in report.composed.briefing.increments]
    assert any("pgvector" in t for t in titles), titles
    assert any("SQLite" in t for t in titles), titles
    assert any("RaBitQ" in t for t in titles), titles  # a card of the topic's own category
    assert not any("vLLM" in t or "Svelte" in t for t in titles), titles  # filed elsewhere by the writer
    pg = next(i for i in report.composed.briefing.increments if "pgvector" in i.title)
    assert pg.credibility.level == "高" and pg.sources[0].section == "§Item 1"
    assert any("relaxed_order" in p.text for p in pg.all_points())  # nesting kept: a child bullet
    assert report.composed.briefing.summary.new_arxiv == ["2603.01234"]


ONE_LINERS = """# ann 的今日速递 · 3-14

1. PostgreSQL 18.1 发布：B-tree 索引去重修复，逻辑复制 failover slot 转正，HNSW 构建提速 30%。https://www.postgresql.org/about/news/pg181/
2. 一个新的存储库 quickstore 上了 HN 首页，说复制比 rsync 快 3 倍。https://news.ycombinator.com/item?id=1
3. Svelte 6 发布，组件语法更新。https://svelte.dev/blog/svelte-6
4. 周五有个线上分享，想听的私信我。
"""


def test_a_digest_s_one_liners_are_items_held_like_table_rows(tmp_path: Path) -> None:
    """Each linked one-liner is its own subject, but one line is one line of a list: the on-topic
    release is a secondary anchor, not an increment; a line the profile only half fits (a storage
    tool said to copy fast) is not kept at all; the aside with no link is not an item."""
    report = offline_run(workspace(tmp_path, {"inbox/ann/2026-03-14-1930-ann-digest.md": ONE_LINERS}), tmp_path)
    assert_valid(report)
    assert report.composed.briefing.increments == []
    anchors = [f.subject for f in report.composed.findings if f.decision == "secondary anchor"]
    assert anchors == ["PostgreSQL 18.1 发布"]
    skipped = " ".join(s.subject for r in report.outcome.doc_results if r.extraction for s in r.extraction.skipped)
    assert "quickstore" in skipped and "Svelte 6 发布" in skipped and "周五" not in skipped


def test_a_flood_of_candidates_gives_at_most_eight(tmp_path: Path) -> None:
    entries = "\n".join(
        f"## 条目 {i}：PostgreSQL 索引优化第 {i} 项\n\n- 评级：⭐⭐⭐⭐⭐\n- 可信度：高\n\n"
        f"- B-tree 索引在第 {i} 类查询上提速 {i + 10}%\n- 复制延迟降低 {i * 3} ms\n"
        for i in range(1, 41)
    )
    files = {f"inbox/flood/2026-03-14-{h:02d}00-flood.md": f"# 洪水 {h}\n\n{entries}" for h in (9, 10, 11)}
    report = offline_run(workspace(tmp_path, files), tmp_path)
    assert_valid(report)
    assert len(report.composed.briefing.increments) == 8


def test_an_evening_with_almost_nothing_is_short_and_says_so(tmp_path: Path) -> None:
    files = {"inbox/cy/2026-03-14-quiet.md": "# 今日\n\n## 1. 前端框架 Svelte 6\n\n- 组件语法更新\n"}
    report = offline_run(workspace(tmp_path, files), tmp_path)
    assert_valid(report)
    assert report.composed.briefing.increments == []


def test_invalid_and_future_arxiv_ids_are_left_out(tmp_path: Path) -> None:
    body = """
    # 论文速递

    ## 条目 1：向量索引量化新论文

    - arXiv：arXiv:2602.04321v2
    - 评级：⭐⭐⭐⭐
    - HNSW 索引量化后内存降低 30%，PostgreSQL 扩展可用
    - 对照实验见 arXiv:2613.01234（月份 13）与 arXiv:2701.00042（晚于简报日期）

    ## 条目 2：索引调优综述

    - 评级：⭐⭐⭐⭐
    - 论文 arXiv:1501.1234 讨论 B-tree 与 HNSW 索引的查询优化
    - 复制与高可用下的索引重建策略
    """
    report = offline_run(workspace(tmp_path, {"inbox/dee/2026-03-14-papers.md": body}), tmp_path)
    assert_valid(report)
    for bad in ("2613.01234", "2701.00042", "1501.1234"):
        assert bad not in report.markdown
    assert report.composed.briefing.summary.new_arxiv == ["2602.04321"]


def test_a_topic_without_a_profile_reads_its_living_document(tmp_path: Path) -> None:
    body = """
    # 工具链

    ## 1. LLVM 21 发布

    - 评级：⭐⭐⭐⭐
    - 新的 pass manager 成为唯一实现，旧接口删除
    - 编译器后端 LLVM 21 对 RISC-V 向量扩展的代码生成提速 8%

    ## 2. PostgreSQL 18 发布

    - 评级：⭐⭐⭐⭐
    - 异步 I/O 默认开启
    """
    report = offline_run(workspace(tmp_path, {"inbox/eve/2026-03-14-tools.md": body}), tmp_path, topic="bare")
    assert_valid(report)
    titles = [i.title for i in report.composed.briefing.increments]
    assert titles == ["LLVM 21 发布"]


def test_a_split_document_gives_the_same_briefing(tmp_path: Path) -> None:
    entries = "\n".join(
        f"## 条目 {i}：PostgreSQL 复制改进 {i}\n\n- 评级：⭐⭐⭐⭐\n\n"
        + "".join(f"- 逻辑复制第 {i}.{j} 项：延迟降低 {i + j}%，索引重建更快\n" for j in range(30))
        for i in range(1, 6)
    )
    files = {"inbox/fay/2026-03-14-long.md": f"# 长文\n\n{entries}"}
    whole = offline_run(workspace(tmp_path / "a", files), tmp_path / "a")
    split_config = CONFIG.replace('agent = "me"', 'agent = "me"\n\n[llm]\nchunk_tokens = 500')
    split = offline_run(workspace(tmp_path / "b", files, split_config), tmp_path / "b")
    assert max(r.chunk for r in split.records) > 0  # the document was really split
    assert_valid(split)
    assert split.composed.briefing.increments == whole.composed.briefing.increments


@pytest.mark.parametrize(
    ("backend", "out", "code", "written"),
    [
        ((), "out", 4, True),  # a missing key: said first, written where asked, a status of its own
        ((), "", 4, False),  # ... and never into the inbox, where tomorrow would take it for a baseline
        (("--backend", "offline"), "", 0, True),  # asked for: written into the inbox
        (("--backend", "offline"), "out", 0, True),
    ],
    ids=["auto-out", "auto-inbox", "offline-inbox", "offline-out"],
)
def test_auto_without_key_or_cassettes_says_so_first_and_keeps_out_of_the_inbox(
    tmp_path: Path, backend: tuple[str, ...], out: str, code: int, written: bool
) -> None:
    root = workspace(tmp_path, {"inbox/ann/2026-03-14-0900-db-filter.md": REPORT_HASH})
    where = tmp_path / out if out else root / "inbox" / "me"
    args = ("--out", str(where)) if out else ()
    r = predigest("run", str(root), "--topic", "databases", "--date", "2026-03-14", *backend, *args)
    assert r.returncode == code, r.stdout + r.stderr
    briefing = where / "2026-03-14-databases-e1prep.md"
    assert briefing.exists() == written
    if written:
        assert briefing.read_text(encoding="utf-8").count(ZH.extractor_offline) == 1
    if not backend:
        first = r.stderr.splitlines()[0]
        assert first.startswith("warning: no model will answer: no OPENAI_API_KEY"), r.stderr
        assert "no model answered" in r.stderr.splitlines()[-1] and "extractor offline" not in r.stdout
    else:
        assert "no model" not in r.stderr and r.stdout.count("extractor offline (--backend offline)") == 1


def test_auto_on_the_demo_still_replays_its_cassettes(tmp_path: Path) -> None:
    report = run(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22), out=tmp_path, force=True))
    assert report.backend == "replay" and not report.backend_note
    assert ZH.extractor_offline not in report.markdown


def test_every_claim_quotes_its_document_exactly(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"inbox/ann/2026-03-14-0900-db-filter.md": REPORT_HASH})
    from agent.extract.offline.extractor import OfflineExtractor
    from agent.pipeline import plan

    p = plan(Settings(workspace=root, topic="databases", date=DATE, backend="offline"))
    ex = OfflineExtractor({d.path: d for d in p.docs if d.read}, p.registry, "databases", p.ws.topic("databases"))
    results = ex.extract_all(p.requests)
    docs = {d.path: d.text for d in p.docs}
    claims = [(r.request.doc_path, c) for r in results if r.extraction for c in r.extraction.claims]
    assert claims
    for path, claim in claims:
        assert claim.evidence and all(q in docs[path] for q in claim.evidence)
    assert all(r.record.source == "offline" and r.record.cost_usd == 0 for r in results)


@pytest.mark.parametrize(
    ("text", "ref", "title", "rating"),
    [
        ("# T\n\n## 条目 3：甲乙丙\n\n- 评级：⭐⭐⭐\n- 点\n", "§条目 3", "甲乙丙", 3),
        ("# T\n\n## 一、大类\n\n### 2. 子项标题\n\n- 评级：★★★★★ 很好\n- 点\n", "§一.2", "子项标题", 5),
        ("# T\n\n## ① 大类\n\n### 1. 子项\n\n- 点\n", "§①.1", "子项", None),
        ("# T\n\n## Item 4: Widget release\n\n- Rating: ★★\n- a point\n", "§Item 4", "Widget release", 2),
        ("Title line\n\n**Bold entry**\n- Rating: ⭐⭐⭐⭐\n- a point\n", "§Bold entry", "Bold entry", 4),
        ("# T\n\n| # | 条目 | 评级 |\n|---|---|---|\n| 7 | X | ⭐⭐ |\n\n## 7. X\n\n- 点\n", "§7", "X", 2),
        ("just one paragraph, no structure at all\n", "§全文", "just one paragraph, no structure at all", None),
        ("# T\n\n## 一、推理\n\n### §一.2 vLLM 新增 KV Pin API\n\n- 点\n", "§一.2", "vLLM 新增 KV Pin API", None),
        ("# T\n\n## §3 SPLADE-v4（⭐⭐⭐⭐）\n\n- 点\n", "§3", "SPLADE-v4", 4),
    ],
)
def test_items_are_split_where_the_document_splits_them(text: str, ref: str, title: str, rating: int | None) -> None:
    (item,) = parse_outline(text).items
    assert (item.ref, item.title, item.rating) == (ref, title, rating)


RELEASES = """# 版本发布观察

## 一、推理引擎

| 项目 | 版本 | 变更 | 链接 |
|---|---|---|---|
| vLLM | v0.23.0 | 移除 `--swap-space` | https://github.com/vllm-project/vllm/releases/tag/v0.23.0 |
| Mooncake | v1.0.0 | Mooncake Store GA | https://github.com/kvcache-ai/Mooncake/releases/tag/v1.0.0 |
"""
UPGRADE = """# 评测

## 一、升级前后

| 项目 | 版本 | 吞吐 | 链接 |
|---|---|---|---|
| vLLM | v0.22.0 | 1,200 tok/s | https://example.org/run/22 |
| vLLM | v0.23.0 | 1,450 tok/s | https://example.org/run/23 |
"""
RESULTS = """# 评测

## 一、吞吐

| 配置 | 吞吐 | 链接 |
|---|---|---|
| batch 1 | 120 tok/s | https://example.org/run/1 |
| batch 8 | 610 tok/s | https://example.org/run/8 |
"""
DIGEST = """# lin 的今日速递 · 10-21

今天挑了 3 条 👇

1. vLLM v0.23.0 发了：`--swap-space` 没了。https://github.com/vllm-project/vllm/releases/tag/v0.23.0
2. TensorRT-LLM v1.4.0：NVFP4 KV cache 转正。https://github.com/NVIDIA/TensorRT-LLM/releases/tag/v1.4.0
3. 周五有个线上分享，想听的私信我。

有漏的在群里喊我～
"""
ONE_SUBJECT = """# vLLM 升级笔记

1. 先读 release notes：https://github.com/vllm-project/vllm/releases/tag/v0.23.0
2. 再查启动脚本：https://github.com/vllm-project/vllm/releases/tag/v0.23.0
"""


@pytest.mark.parametrize(
    ("text", "items"),
    [
        pytest.param(
            RELEASES,
            [
                ("vLLM v0.23.0", ["github.com/vllm-project/vllm/releases/tag/v0.23.0"]),
                ("Mooncake v1.0.0", ["github.com/kvcache-ai/Mooncake/releases/tag/v1.0.0"]),
            ],
            id="a-release-table-is-a-release-a-row",
        ),
        pytest.param(RESULTS, [("吞吐", None)], id="a-table-of-one-subject-s-results-stays-its-points"),
        pytest.param(UPGRADE, [("升级前后", None)], id="one-project-at-two-versions-is-one-comparison"),
        pytest.param(
            DIGEST,
            [
                ("vLLM v0.23.0 发了", ["github.com/vllm-project/vllm/releases/tag/v0.23.0"]),
                ("TensorRT-LLM v1.4.0", ["github.com/NVIDIA/TensorRT-LLM/releases/tag/v1.4.0"]),
            ],
            id="a-digest-of-linked-one-liners-is-an-item-a-line",
        ),
        pytest.param(ONE_SUBJECT, [("vLLM 升级笔记", None)], id="steps-citing-one-link-stay-one-item"),
    ],
)
def test_a_list_of_subjects_is_read_as_items_each_with_its_own_links(
    text: str, items: list[tuple[str, list[str] | None]]
) -> None:
    """A release table's rows, or a digest's linked one-liners, each name a subject of their own:
    each is an item, linked to its own source only (so merge cannot join them by a shared link),
    and held like a table row (never more than a secondary anchor on its own)."""
    outline = parse_outline(text)
    assert [it.title for it in outline.items] == [title for title, _ in items]
    for it, (_, links) in zip(outline.items, items, strict=True):
        if links is not None:
            assert it.row and _urls(it, text) == links


ANSWERS = """
import json, sys
from pathlib import Path
from agent.extract.offline.extractor import OfflineExtractor
from agent.pipeline import Settings, plan
import datetime as dt
s = Settings(workspace=Path(sys.argv[1]), topic="inference", date=dt.date(2026, 9, 22), backend="offline")
p = plan(s, for_writing=False)
ex = OfflineExtractor({d.path: d for d in p.docs if d.read}, p.registry, "inference", p.ws.topic("inference"))
print(json.dumps([r.extraction.model_dump(mode="json") for r in ex.extract_all(p.requests) if r.extraction]))
"""


def test_the_offline_answers_do_not_depend_on_the_hash_seed() -> None:
    """Each process salts str hashes anew: an order taken from a set would change a relevance reason
    (the terms it names) from one run to the next, in the run log and in eval's pages."""
    import subprocess
    import sys

    answers = [
        subprocess.run(
            [sys.executable, "-c", ANSWERS, str(WORLD)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    ]
    assert answers[0] and answers[0] == answers[1] == answers[2]


ENGLISH_CONFIG = (
    CONFIG.replace(
        'living = "living/bare.md"',
        'living = "living/bare.md"\n\n[topics.db-en]\nliving = "living/databases.md"\n'
        'profile = "databases, PostgreSQL, replication, indexing, query planner, storage engines"',
    )
    + "\n[limits]\nmin_increments = 1\nmax_increments = 1\n"
)  # the second item goes to 五 and 六
ENGLISH_REPORT = """\
# Evening database watch

## Item 1: PostgreSQL 18 logical replication gets failover slots for standby servers in production

- Rating: ⭐⭐⭐⭐
- Logical replication slots now survive failover to a standby; lag drops 40% in the benchmark.

## Item 2: DuckDB 1.3 query planner rewrites correlated subqueries into joins automatically

- Rating: ⭐⭐⭐⭐
- The planner now decorrelates subqueries; TPC-H Q17 runs 12x faster on 100 GB.

## Item 3: A short note on indexing

- Rating: ⭐⭐
- B-tree against LSM storage engines, nothing new.
"""


def test_an_english_report_keeps_its_writers_stars_and_says_where_a_title_was_cut(tmp_path: Path) -> None:
    """English words count as words (Chinese in overlapping bigrams), so an English 4★ item on
    the topic is not capped at 3★; a title cut for 一, 二, 五 or 六 ends with an ellipsis."""
    root = workspace(tmp_path, {"inbox/ann/2026-03-14-0900-db-watch.md": ENGLISH_REPORT}, ENGLISH_CONFIG)
    report = offline_run(root, tmp_path, topic="db-en")
    (answer,) = [r.extraction for r in report.outcome.results if r.extraction]
    assert [c.stars for c in answer.claims] == [4, 4, 2], [(c.title, c.stars) for c in answer.claims]
    first, second = ("PostgreSQL 18 logical replication gets failover slots", "DuckDB 1.3 query planner rewrites")
    assert [c.title.endswith("…") for c in answer.claims] == [True, True, False], [c.title for c in answer.claims]
    md = report.markdown
    heads = (("一", "二"), ("二", "三"), ("五", "六"), ("六", "七"))
    blocks = {h: md.split(f"\n{h}、", 1)[1].split(f"\n{n}、", 1)[0] for h, n in heads}
    for name, block in blocks.items():
        cut = [ln for ln in block.splitlines() if first[:20] in ln or second[:20] in ln]
        assert cut and all(re.search(r"\w…", ln) for ln in cut), (name, cut)


@pytest.mark.parametrize(
    ("text", "n", "clipped"),
    [
        ("short title", 40, "short title"),
        ("PostgreSQL 18 logical replication gets failover slots", 40, "PostgreSQL 18 logical replication gets…"),
        ("vLLM 0.12 makes prefix caching the default", 40, "vLLM 0.12 makes prefix caching the…"),
        ("一" * 45, 40, "一" * 39 + "…"),
        ("x" * 45, 40, "x" * 39 + "…"),  # one word: cut inside it
    ],
)
def test_clip_cuts_between_words_and_says_so(text: str, n: int, clipped: str) -> None:
    from agent.extract.offline.extractor import clip

    assert clip(text, n) == clipped and len(clip(text, n)) <= n


def test_the_parts_past_max_parts_are_not_read_offline_either(tmp_path: Path) -> None:
    """A document cut at [llm] max_parts is reported unread past the cut; the offline extractor
    reads only as far as its requests reach, so nothing of the unread parts reaches the briefing."""
    entries = "\n".join(
        f"## 条目 {i}：PostgreSQL {i}.0 复制改进\n\n- 评级：⭐⭐⭐⭐\n\n"
        + "".join(f"- 逻辑复制第 {i}.{j} 项：延迟降低 {i + j}%，索引重建更快\n" for j in range(30))
        for i in range(1, 7)
    )
    files = {"inbox/fay/2026-03-14-long.md": f"# 长文\n\n{entries}"}
    config = CONFIG.replace('agent = "me"', 'agent = "me"\n\n[llm]\nchunk_tokens = 500\nmax_parts = 2')
    report = offline_run(workspace(tmp_path, files, config), tmp_path)
    assert report.outcome.partial and report.records[0].chunk == 0 and len(report.records) == 2
    said = report.markdown.split("五、", 1)[0]
    assert "PostgreSQL 1.0" in said and "PostgreSQL 6.0" not in said, said
