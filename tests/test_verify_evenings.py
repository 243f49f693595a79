"""Three evenings in a row on a tiny workspace (issue 41, item 5): each evening's briefing written into
the inbox by `predigest run --backend offline` before the next is planned, and what 三 carries on
the last one — the living document's open question and the first evening's dispute, which no
document settled, and none of the earlier evenings' lesser doubts."""

from __future__ import annotations

from pathlib import Path

from agent.plan.parse import parse
from tests.paths import predigest

CONFIG = """\
[workspace]
timezone = "Europe/Berlin"
window_end = "22:00"
agent = "wren"
inbox_dir = "inbox"

[topics.inference]
living = "living/inference.md"
profile = \"\"\"
推理引擎与 KV Cache：vLLM / SGLang / TensorRT-LLM / Mooncake 的版本、破坏性变更、默认值与实测；
KV Cache 分层与前缀缓存；推理论文。
\"\"\"
adjacent = "训练与集群（归 llm-infra）。"
"""

LIVING = """\
# inference 活文档

> 最近一次 E2 更新：2026-11-01 23:00（依据 11-01 inference e1prep）

## §1.1 推理引擎

- **SGLang v0.6.0**：HiCache 分层缓存默认开启。（10-30 inference e1prep；实测命中率待核实）

## §1.2 KV Cache

- **LMCache v0.3**：生产级 KV Cache 缓存层。（10-28 inference e1prep）

## 附 B：开放待核实

- SGLang v0.6.0 HiCache 实测命中率（10-30 起，中风险）
"""


def item(title: str, url: str, *points: str, remark: str = "", n: int = 1) -> str:
    """One item of an upstream report, as the example inboxes write them."""
    said = "".join(f"  - {p}\n" for p in points)
    tail = f"- 点评：{remark}\n" if remark else ""
    return f"## 条目 {n}：{title}\n\n- 评级：⭐⭐⭐⭐\n- 来源：{url}\n- 要点：\n{said}{tail}\n"


MOONCAKE = "https://github.com/kvcache-ai/Mooncake/releases/tag/v1.0.0"
REPORTS = {
    # the first evening: two reports give Mooncake's speedup differently (a dispute), and doubts of 中 risk
    "kai/2026-11-02-1200-kai-release-watch.md": item(
        "Mooncake v1.0", MOONCAKE, "KV Cache 跨实例前缀缓存命中：TTFT 降低 2.1×", "新增 `--kv-pool-size` 参数",
        remark="测试配置未给出，待核实",
    ) + item(
        "vLLM v0.24.0", "https://github.com/vllm-project/vllm/releases/tag/v0.24.0",
        "移除 `--enable-chunked-prefill`，默认开启", "FP8 KV cache 转正", remark="吞吐数字未给出", n=2,
    ),
    "lin/2026-11-02-1930-lin-daily-digest.md": item(
        "Mooncake v1.0 发布", MOONCAKE, "KV Cache 跨实例前缀缓存命中：TTFT 降低 1.6×", "新增 `--kv-pool-size` 参数"
    ),
    "kai/2026-11-03-1200-kai-release-watch.md": item(
        "TensorRT-LLM v1.5.0", "https://github.com/NVIDIA/TensorRT-LLM/releases/tag/v1.5.0",
        "NVFP4 KV cache 转正", "B300 上 decode 吞吐 +35%", remark="对比基线未说明",
    ),
    "kai/2026-11-04-1200-kai-release-watch.md": item(
        "TensorRT-LLM v1.5.1", "https://github.com/NVIDIA/TensorRT-LLM/releases/tag/v1.5.1",
        "新增 `--kv-cache-offload` 参数，KV Cache 可卸载到 CPU", "修复 NVFP4 KV cache 在 B300 上的精度回退",
        remark="卸载延迟未给出",
    ),
}  # fmt: skip


def workspace(root: Path) -> Path:
    for path, text in {"predigest.toml": CONFIG, "living/inference.md": LIVING}.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    for path, text in REPORTS.items():
        (root / "inbox" / path).parent.mkdir(parents=True, exist_ok=True)
        (root / "inbox" / path).write_text(text, encoding="utf-8")
    return root


def test_the_third_evening_carries_the_living_question_the_dispute_and_only_yesterdays_lesser_doubts(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path / "ws")
    for day in ("2026-11-02", "2026-11-03", "2026-11-04"):
        done = predigest("run", str(ws), "--topic", "inference", "--date", day, "--backend", "offline")
        assert done.returncode == 0, done.stderr
    first = parse((ws / "inbox" / "wren" / "2026-11-02-inference-e1prep.md").read_text(encoding="utf-8"))
    assert any("还是" in v.title for v in first.to_verify)  # the evening raised its dispute
    assert any(not v.carried_from and "还是" not in v.title for v in first.to_verify)  # and its own doubts

    last = parse((ws / "inbox" / "wren" / "2026-11-04-inference-e1prep.md").read_text(encoding="utf-8"))
    held = {(v.title, v.carried_from) for v in last.to_verify}
    assert ("SGLang v0.6.0 HiCache 实测命中率", "10-30") in held  # the living document's, a fifth evening on
    (dispute,) = [v for v in last.to_verify if "还是" in v.title]
    assert "2.1×" in dispute.title and "1.6×" in dispute.title and dispute.carried_from == "11-2"
    # the evening before's lesser doubt is asked again once (tonight's like one folds into it); 11-02's are gone
    assert ("TensorRT-LLM v1.5.0 待核实", "11-3") in held and len(last.to_verify) == 3
    for gone in ("vLLM v0.24.0", "Mooncake v1.0 待核实"):
        assert not any(v.title.startswith(gone) for v in last.to_verify), gone
