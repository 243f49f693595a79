"""Generated workspaces for the load benchmark: an evening of N Chinese reports, with or without
months of history behind it.

Everything is drawn from a seeded `random.Random`, so the same arguments give the same bytes:
the benchmark's prompt tokens and prefix shares are comparable from run to run. The reports look
like the demo's upstream reports (numbered entries, figures, flags, versions, arXiv IDs, links),
sized 2–20 kB of UTF-8 each; the history is real briefings (the seed's, re-dated and varied,
rendered by `agent.write.render` so that `agent.plan.parse` reads them back) and a living document with
about 2,000 anchors.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

from agent.core.dates import month_day
from agent.plan.parse import parse
from agent.write.render import render
from schemas.briefing import ArxivRow, Briefing

ROOT = Path(__file__).resolve().parent.parent
SEED_GOLD = ROOT / "eval" / "cases" / "2026-09-22-inference" / "gold.md"
DATE = dt.date(2026, 9, 22)
TOPIC = "inference"

_ENGINES = ["vLLM", "SGLang", "TensorRT-LLM", "LMDeploy", "llama.cpp", "Ollama", "MLX", "RTP-LLM", "Dynamo", "llm-d"]
_FEATURES = [
    "前缀缓存", "FP8 KV Cache", "投机解码", "PD 分离", "分块预填充", "连续批处理", "专家并行", "KV 卸载", "请求路由",
    "量化内核", "多 LoRA 服务", "结构化输出",
]  # fmt: skip
_HARDWARE = ["H100", "H200", "B200", "MI300X", "L40S", "M3 Ultra", "A100"]
_MODELS = ["Qwen3-32B", "DeepSeek-V4", "Llama-3.1-8B", "Qwen3-235B-A22B", "GLM-4.6", "Kimi-K2"]
_FILLER = [
    "社区对这一改动的讨论集中在默认值是否合理，多数维护者倾向于先在夜间版本里观察一周",
    "报告作者提醒，这一结果只在单一负载上测得，生产环境的请求长度分布差异很大",
    "上游文档尚未同步更新，迁移时需要对照变更记录逐项核对启动参数",
    "这一方向与活文档里已有的调度脉络相关，但给出的细节比此前的快讯更具体",
    "多位用户在 issue 里反馈了相同的现象，维护者已确认会在下一个补丁版本中处理",
    "文章同时比较了三种部署拓扑，结论是小集群上收益有限而大集群上差距明显",
]
_AGENTS = ["jay", "kai", "lin"]
_LIVING_SECTIONS = [
    "§1.1 框架格局", "§1.2 推理调度", "§1.3 KV Cache", "§1.4 推理可靠性", "§1.5 量化与内核", "§1.6 硬件实测",
    "§1.7 边缘推理", "§1.8 服务编排",
]  # fmt: skip


def _arxiv(rng: random.Random, before: dt.date) -> str:
    """A well-formed arXiv ID no later than `before` (the rules reject later ones)."""
    year = rng.randint(23, before.year % 100)
    last = before.month if year == before.year % 100 else 12
    return f"{year:02d}{rng.randint(1, last):02d}.{rng.randint(1, 99999):05d}"


def _sentence(rng: random.Random, date: dt.date) -> str:
    engine, feature, hw, model = rng.choice(_ENGINES), rng.choice(_FEATURES), rng.choice(_HARDWARE), rng.choice(_MODELS)
    kind = rng.randrange(6)
    if kind == 0:
        return (
            f"{engine} 在 {hw} 上开启{feature}后，{model} 的吞吐提升 {rng.randint(3, 60)}.{rng.randint(0, 9)}%，"
            f"P99 延迟降到 {rng.randint(20, 900)} ms。"
        )
    if kind == 1:
        return (
            f"论文 arXiv:{_arxiv(rng, date)} 给出了{feature}的消融实验，{model} 上显存占用减少 {rng.randint(5, 70)}%。"
        )
    if kind == 2:
        major, minor, patch = rng.randint(0, 2), rng.randint(1, 20), rng.randint(0, 30)
        return (
            f"{engine} v{major}.{minor}.{patch} 把 --enable-{feature.encode().hex()[:6]} 改为默认开启，"
            f"旧参数 --legacy-{rng.randint(1, 9)} 将在下个版本移除。"
        )
    if kind == 3:
        return f"详见 github.com/{engine.lower()}-project/{engine.lower()}/issues/{rng.randint(1000, 40000)} 的讨论。"
    return rng.choice(_FILLER) + "。"


# What an entry is about: a project's made-up name and version, and what about it (24 × 24), so
# that two reports share a subject about as rarely as real ones do (the hot subjects aside).
_SUBJECT_A = [
    "分层", "异步", "弹性", "零拷贝", "自适应", "混合精度", "稀疏", "流水线", "多租户", "跨节点", "边缘", "动态",
    "分页", "无锁", "批量", "增量", "预测式", "共享", "持久化", "轻量", "分布式", "确定性", "抢占式", "层级",
]  # fmt: skip
_SUBJECT_B = [
    "调度器", "缓存池", "路由层", "内核", "编译器", "量化器", "采样器", "预取器", "分配器", "监控", "回放工具",
    "压测框架", "网关", "控制面", "存储层", "执行器", "注意力实现", "通信库", "检查点", "日志管线", "插件",
    "配置中心", "故障注入", "限流器",
]  # fmt: skip
_SYLLABLES = ["ka", "lo", "vex", "zor", "mi", "tu", "ran", "pel", "qui", "dor", "sen", "fa", "ny", "gro", "bel", "tis"]
HOT_SUBJECTS = 8  # subjects several reports of one evening cover, as a release or a paper does
HOT_SHARE = 0.1  # share of entries about one of them


def _hot_entry(k: int, date: dt.date) -> tuple[str, str]:
    """The heading and text of hot subject `k`: the same in every report that covers it (the
    reports agree on it, so the rules merge them without a contradiction)."""
    rng = random.Random(f"hot-{k}")
    heading = f"{_ENGINES[k % len(_ENGINES)]} {_FEATURES[k % len(_FEATURES)]}：本周热点 {k + 1}"
    return heading, "".join(_sentence(rng, date) for _ in range(3))


def report(rng: random.Random, size_bytes: int, date: dt.date = DATE) -> str:
    """One upstream report of about `size_bytes` UTF-8 bytes: a title, then numbered entries.

    Most entries are about a subject of their own;
    about one in ten covers one of a few hot subjects that other reports of the evening also
    cover, so merging has work to do at the rate a real evening gives it."""
    lines = [f"# {rng.choice(_AGENTS)} 推理工程筛选（{month_day(date)}）", ""]
    entry = 0
    while len("\n".join(lines).encode()) < size_bytes:
        entry += 1
        if rng.random() < HOT_SHARE:
            heading, text = _hot_entry(rng.randrange(HOT_SUBJECTS), date)
            lines += [f"## {entry}. {heading}", "", text, ""]
            continue
        name = "".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize()  # a project of its own
        subject = f"{name} {rng.randint(0, 9)}.{rng.randint(0, 30)}：{rng.choice(_SUBJECT_A)}{rng.choice(_SUBJECT_B)}"
        lines += [f"## {entry}. {subject}", ""]
        lines += ["".join(_sentence(rng, date) for _ in range(rng.randint(2, 5))) for _ in range(rng.randint(1, 3))]
        lines.append("")
    return "\n".join(lines)


# the other topics of a three-topic evening: (profile, adjacent), as the demo workspace words them
OTHER_TOPICS = {
    "llm-infra": (
        "训练与后训练基础设施：分布式训练、checkpoint 与故障恢复；GPU 集群运维（NCCL、IB / RoCE、排障复盘）；"
        "云原生调度（Kubernetes、Kueue）；LLMOps 工具。",
        "推理引擎与 KV Cache（归 inference）、agent 框架、风险与合规。",
    ),
    "risk": (
        "AI 基础设施的风险面：推理服务与 agent 的漏洞和攻击面、模型与镜像供应链、产业并购与生态集中度、数据合规。",
        "推理引擎的性能与格局（归 inference）、集群运维（归 llm-infra）。",
    ),
}


def _other_topic(topic: str) -> str:
    profile, adjacent = OTHER_TOPICS[topic]
    return f"""
[topics.{topic}]
living = "living/{topic}.md"
profile = "{profile}"
adjacent = "{adjacent}"
"""


def _config(living: str = "living/inference.md") -> str:
    return f"""# generated by benchmarks/evening.py for the load benchmark
[workspace]
timezone = "Asia/Shanghai"
window_end = "22:00"
agent = "tom"

[llm]
model = "bench-model"
mode = "tools"
concurrency = 4

[topics.{TOPIC}]
living = "{living}"
profile = \"\"\"
LLM 推理与服务：推理引擎的版本、格局、破坏性变更与迁移；请求调度、批处理、PD 分离与路由；
KV Cache 的压缩、复用、卸载；推理可观测性与可靠性；面向推理的 kernel 与硬件实测。
\"\"\"
adjacent = "训练与集群运维、agent 框架、向量数据库、风险与合规。"
"""


def living_document(rng: random.Random, anchors: int, date: dt.date = DATE, topic: str = TOPIC) -> str:
    """A living document with about `anchors` anchors: each bullet names a subject, an arXiv ID
    and a link, and says which evening first anchored it."""
    lines = [f"# {topic} 活文档", "", "> 生成的活文档，供负载基准使用。", ""]
    per_line = 3  # subject + arXiv + URL
    bullets = max(1, anchors // per_line)
    per_section = -(-bullets // len(_LIVING_SECTIONS))
    for i in range(bullets):
        if i % per_section == 0:
            lines += ["", f"## {_LIVING_SECTIONS[i // per_section]}", ""]
        first = date - dt.timedelta(days=rng.randint(1, 200))
        subject = f"{rng.choice(_ENGINES)} {rng.choice(_FEATURES)} 第{i + 1}号"
        lines.append(
            f"- **{subject}**：{rng.choice(_FILLER)}，arXiv {_arxiv(rng, first)}，"
            f"github.com/anchor-{i}/repo。（{month_day(first)} {topic} e1prep）"
        )
    return "\n".join(lines) + "\n"


def baseline(template: Briefing, rng: random.Random, date: dt.date) -> str:
    """The seed's briefing re-dated to `date`, with its subjects and arXiv IDs varied, rendered."""
    md = month_day(date)
    increments = [
        inc.model_copy(
            update={
                "title": f"{rng.choice(_ENGINES)} {rng.choice(_FEATURES)} {md} 第{i + 1}条",
                "arxiv_line": f"arXiv:{_arxiv(rng, date)} {inc.title}" if inc.arxiv_line else "",
            }
        )
        for i, inc in enumerate(template.increments)
    ]
    rows = [
        ArxivRow(arxiv_id=_arxiv(rng, date), title=r.title, credibility=r.credibility, relation=r.relation)
        for r in template.arxiv_rows
    ]
    prev = date - dt.timedelta(days=1)
    window = f"{prev.isoformat()} 22:00 ~ {date.isoformat()} 22:00"
    summary = template.summary.model_copy(
        update={
            "window": window,
            "headlines": [i.title for i in increments],
            "new_arxiv": [r.arxiv_id for r in rows[:5]],
        }
    )
    b = template.model_copy(update={"date": date, "increments": increments, "arxiv_rows": rows, "summary": summary})
    return render(b)


def write_evening(
    root: Path,
    docs: int,
    *,
    history: int = 1,
    living_anchors: int = 60,
    seed: int = 0,
    topics: int = 1,
    evenings: int = 1,
) -> Path:
    """A workspace at `root`: tonight's `docs` reports, `history` earlier briefings of the topic
    and a living document with about `living_anchors` anchors. With `topics` 3, the workspace also
    has llm-infra and risk, each with a living document of its own. With `evenings` N, the inbox
    holds `docs` reports for each of the N evenings ending tonight (`span_dates`), for a span to
    run in order, and the history ends the evening before the first of them. Returns `root`."""
    rng = random.Random(seed + 1)  # the history's own stream: tonight's reports do not depend on it
    days = span_dates(evenings)
    (root / "living").mkdir(parents=True, exist_ok=True)
    others = list(OTHER_TOPICS)[: topics - 1]
    (root / "predigest.toml").write_text(_config() + "".join(map(_other_topic, others)), encoding="utf-8")
    # anchored before the first evening: a span's evenings find no anchor from their future
    (root / "living" / f"{TOPIC}.md").write_text(living_document(rng, living_anchors, days[0]), encoding="utf-8")
    for topic in others:  # after inference's: the one-topic workspace's bytes do not change
        (root / "living" / f"{topic}.md").write_text(
            living_document(random.Random(f"{seed}-{topic}"), living_anchors, topic=topic), encoding="utf-8"
        )
    template = parse(SEED_GOLD.read_text(encoding="utf-8"))
    own = root / "inbox" / "tom"
    own.mkdir(parents=True, exist_ok=True)
    for d in range(1, history + 1):
        day = days[0] - dt.timedelta(days=d)
        (own / f"{day.isoformat()}-{TOPIC}-e1prep.md").write_text(baseline(template, rng, day), encoding="utf-8")
    for day in days:
        # tonight's stream is `seed` (the first k reports are the same whatever `docs` and the
        # history, and a one-evening workspace's bytes whatever `evenings`); an earlier evening of
        # a span has a stream of its own, so no two evenings hold the same reports
        _write_reports(root, docs, day, random.Random(seed if day == DATE else f"{seed}-{day.isoformat()}"))
    return root


def span_dates(evenings: int) -> list[dt.date]:
    """The `evenings` consecutive evenings ending tonight (`DATE`), oldest first."""
    return [DATE - dt.timedelta(days=evenings - 1 - i) for i in range(evenings)]


def _write_reports(root: Path, docs: int, day: dt.date, rng: random.Random) -> None:
    """`docs` reports of the evening `day` in the agents' inbox folders, named and timed inside its window."""
    for i in range(docs):
        agent = _AGENTS[i % len(_AGENTS)]
        folder = root / "inbox" / agent
        folder.mkdir(parents=True, exist_ok=True)
        minute = (i * 7) % 1320  # 00:00–22:00: inside the evening's window, whatever `docs`
        name = f"{day.isoformat()}-{minute // 60:02d}{minute % 60:02d}-{agent}-report-{i:03d}.md"
        (folder / name).write_text(report(rng, rng.randint(2000, 20000), day), encoding="utf-8")
