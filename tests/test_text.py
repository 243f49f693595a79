"""agent.core.text: folding, character-level grounding of quotes, facts and similarity."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from agent.core.arxiv import find_ids
from agent.core.text import _MATCH_MAP, Alignment, facts, fold, fold_map, locate, similarity

SEED = Path(__file__).resolve().parents[1] / "eval" / "cases" / "2026-09-22-inference" / "gold.md"

HOOKPOINT = "HookPoint 自定义 CUDA kernel：overhead 仅 0.4–6.8%（平均 3.6%）"
DOC = f"""要点：
- 三种方案 overhead 对比：
- **{HOOKPOINT}**
- PyTorch forward hooks：overhead 34.0–59.8%（平均 46.9%）
| 2605.11093v1 | HookPoint: Performant Model-Internal Observability | 高 |
1. --shm-size 1g → vLLM 需加 `--ipc=host`（否则 CUDA shared memory error）
"""


# --- fold --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "folded"),
    [
        pytest.param("２０２６：（平均）", "2026:(平均)", id="fullwidth-digits-colon-parens"),
        pytest.param("ＡＢＣ ａｂｃ", "ABC abc", id="fullwidth-letters"),
        pytest.param("0.4–6.8% — a−b ‐ c", "0.4-6.8%-a-b-c", id="dashes"),
        pytest.param("“引号”「括号」‘x’", '"引号""括号"\'x\'', id="quotes"),
        pytest.param("  a \t\n  b  ", "a b", id="whitespace-runs"),
        pytest.param("CUDA kernel 自定义 算子", "CUDA kernel自定义算子", id="no-spaces-around-cjk"),
        pytest.param("**粗体** 和 `code` *斜体*", "粗体和code斜体", id="markdown-emphasis"),
        pytest.param("- 条目\n  * 子条目\n1. 第一\n## 标题\n> 引用", "条目子条目第一标题引用", id="line-markers"),
        pytest.param("| a | b |", "a b", id="table-pipes"),
        pytest.param("a\u3000b", "a b", id="ideographic-space"),
        pytest.param("--ipc=host", "--ipc=host", id="flags-untouched"),
        pytest.param("", "", id="empty"),
    ],
)
def test_fold(raw: str, folded: str) -> None:
    assert fold(raw) == folded


@pytest.mark.parametrize(
    ("raw", "text", "spans"),
    [
        pytest.param("aＢ－c", "aB-c", [(0, 1), (1, 2), (2, 3), (3, 4)], id="one-to-one"),
        pytest.param("e\u0301x", "éx", [(0, 2), (2, 3)], id="a-mark-normalises-with-its-character"),
        pytest.param("ﬁ⑩号", "fi10号", [(0, 1), (0, 1), (1, 2), (1, 2), (2, 3)], id="expansions-share-a-span"),
        pytest.param("**粗**`x`", "粗x", [(2, 3), (6, 7)], id="markup-dropped"),
        pytest.param("- 条目\n  * 二", "条目二", [(2, 3), (3, 4), (9, 10)], id="line-markers-dropped"),
        pytest.param("a \t b\u3000c", "a b c", [(0, 1), (1, 2), (4, 5), (5, 6), (6, 7)], id="a-space-run-is-its-first"),
    ],
)
def test_fold_map_knows_where_each_character_came_from(raw: str, text: str, spans: list[tuple[int, int]]) -> None:
    folded = fold_map(raw)
    assert folded.text == text
    assert list(zip(folded.starts, folded.ends, strict=True)) == spans


def test_every_character_of_the_bmp_folds_as_its_definition_says() -> None:
    """NFKC, then the match map, whitespace as one space: one character at a time, between two
    letters (a combining mark would join the letter before it, so marks are the row above)."""
    for o in range(0x10000):
        c = chr(o)
        if unicodedata.combining(c) or 0xD800 <= o <= 0xDFFF:
            continue
        own = "".join(_MATCH_MAP.get(x, x) for x in unicodedata.normalize("NFKC", c))
        want = "a" + re.sub(r"\s+", " ", own) + "b"
        assert fold_map(f"a{c}b", squeeze=False).text == want, hex(o)


# --- locate ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("quote", "kind", "matched"),
    [
        pytest.param(HOOKPOINT, "exact", HOOKPOINT, id="exact-chinese-mixed"),
        pytest.param("34.0–59.8%", "exact", "34.0–59.8%", id="exact-short"),
        pytest.param(
            "HookPoint 自定义 CUDA kernel: overhead 仅 0.4-6.8% (平均 3.6%)",
            "folded",
            HOOKPOINT,
            id="halfwidth-colon-parens-hyphen",
        ),
        pytest.param("HookPoint自定义CUDA kernel：overhead仅0.4–6.8%", "folded", HOOKPOINT[:45], id="spacing"),
        pytest.param(
            "1. **HookPoint 自定义 CUDA kernel**：overhead 仅 0.4–6.8%", "folded", HOOKPOINT[:45], id="bullet-and-bold"
        ),
        pytest.param("vLLM 需加 --ipc=host（否则", "folded", "vLLM 需加 `--ipc=host`（否则", id="backticks"),
        pytest.param(
            "2605.11093v1 HookPoint: Performant", "folded", "2605.11093v1 | HookPoint: Performant", id="table-pipes"
        ),
        pytest.param(
            "ＰｙＴｏｒｃｈ ｆｏｒｗａｒｄ ｈｏｏｋｓ", "folded", "PyTorch forward hooks", id="fullwidth-quote"
        ),
        pytest.param("HookPoint 自定义 CUDA kernal：overhead 仅 0.4–6.8%（平均 3.6%）", "fuzzy", HOOKPOINT, id="typo"),
        pytest.param(
            "PyTorch forward hook：overhead 34.0–59.8%（平均 46.9%）",
            "fuzzy",
            "PyTorch forward hooks：overhead 34.0–59.8%（平均 46.9%）",
            id="one-char-dropped",
        ),
        pytest.param("NNsight：overhead 54.1–71.2%（平均 62.3%）", "none", None, id="absent"),
        pytest.param("三种方案 overhead 对比翻倍", "none", None, id="source-plus-invented-words"),
        pytest.param("三种方案对比", "none", None, id="short-quotes-are-not-fuzzed"),
        pytest.param("   ", "none", None, id="blank"),
        pytest.param("``", "none", None, id="only-markup"),
    ],
)
def test_locate(quote: str, kind: str, matched: str | None) -> None:
    alignment = locate(quote, DOC)
    assert alignment.kind == kind
    if matched is None:
        assert (alignment.start, alignment.end, alignment.found) == (-1, -1, False)
    else:
        assert DOC[alignment.start : alignment.end] == matched
        assert alignment.found


def test_locate_scores() -> None:
    assert locate(HOOKPOINT, DOC).score == 1.0
    assert locate(HOOKPOINT.replace(":", "："), DOC).score == 1.0
    fuzzy = locate("HookPoint 自定义 CUDA kernal：overhead 仅 0.4–6.8%（平均 3.6%）", DOC)
    assert 0.9 <= fuzzy.score < 1.0


def test_locate_threshold_is_a_parameter() -> None:
    quote = "HookPoint 自定义 GPU 内核：overhead 仅 0.5–6.8%（平均 3.6%）"
    strict = locate(quote, DOC)
    assert strict.kind == "none"
    assert 0.5 < strict.score < 0.9  # a near miss says how near
    loose = locate(quote, DOC, threshold=0.7)
    assert loose.kind == "fuzzy"
    assert DOC[loose.start : loose.end].startswith("HookPoint")


def test_locate_does_not_fuzz_short_quotes() -> None:
    assert locate("平均 3.7%", DOC).kind == "none"
    assert locate("平均 3.7%", DOC, min_fuzzy_len=4, threshold=0.8).kind == "fuzzy"


def test_locate_folded_offsets_map_back_through_expansions() -> None:
    text = "前文 ＡＢＣ：ｘｙｚ （一二三） 后文"
    alignment = locate("ABC:xyz(一二三)", text)
    assert alignment.kind == "folded"
    assert text[alignment.start : alignment.end] == "ＡＢＣ：ｘｙｚ （一二三）"


def test_alignment_is_frozen() -> None:
    with pytest.raises(AttributeError):
        Alignment("exact", 0, 1, 1.0).start = 2  # type: ignore[misc]


_ALPHABET = st.sampled_from(
    list("推理引擎的内存缓存量化可观测性") + list("abcXYZ019") + list(" \n\t:：()（）%.-–*`|#>，。") + ["ＡＢ", "１２"]
)
_TEXTS = st.lists(_ALPHABET, min_size=4, max_size=120).map("".join)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), text=_TEXTS)
def test_locate_finds_any_substring(data: st.DataObject, text: str) -> None:
    i = data.draw(st.integers(0, len(text) - 4), label="i")
    j = data.draw(st.integers(i + 4, len(text)), label="j")
    assume(text[i:j].strip())  # a blank quote grounds nothing, by design
    alignment = locate(text[i:j], text)
    assert alignment.found
    assert text[alignment.start : alignment.end] == text[i:j]


_TO_FULLWIDTH = str.maketrans({c: chr(ord(c) + 0xFEE0) for c in "0123456789abcXYZ:()%"})
_PLAIN = st.sampled_from(list("推理引擎的内存缓存量化") + list("abcXYZ019 :()%-*`"))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), text=st.lists(_PLAIN, min_size=6, max_size=120).map("".join))
def test_locate_finds_fullwidth_variants_of_any_substring(data: st.DataObject, text: str) -> None:
    # "0) …" opens a numbered item, whose marker folding drops: a quote starting inside it ("） …")
    # quotes markup the text no longer has
    assume(not re.match(r"[0-9]{1,2}[.)] ", text))
    i = data.draw(st.integers(0, len(text) - 4), label="i")
    j = data.draw(st.integers(i + 4, len(text)), label="j")
    quote = text[i:j].translate(_TO_FULLWIDTH)
    alignment = locate(quote, text)
    if alignment.kind == "exact":  # nothing in the substring had a fullwidth form
        assert text[alignment.start : alignment.end] == quote
    elif fold(quote):
        assert alignment.kind == "folded"
        # Folded in its context, the span ends the same: a "- " or a "0) " opens an item, which
        # folding drops, only at a line start, so the span alone is folded after a character that
        # keeps it from starting a line, as it does not in the text
        assert fold(text[: alignment.end]).endswith(fold(quote))
        assert fold("推" + text[alignment.start : alignment.end]).endswith(fold(quote).lstrip("-*+ "))
    else:  # only spaces and markup: nothing to ground
        assert not alignment.found


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("overhead 仅 0.4–6.8%（平均 3.6%）", {"0.4-6.8%", "0.4%", "6.8%", "3.6%"}, id="range-and-percent"),
        pytest.param("34.0–59.8%", {"34-59.8%", "34%", "59.8%"}, id="range-trailing-zero"),
        pytest.param("throughput 提升 >10%", {">10%"}, id="greater-than"),
        pytest.param("至少 ≥ 2×，最多 <= 5x", {"≥2×", "≤5×"}, id="comparators"),
        pytest.param("TurboQuant（~3bit）", {"3bit"}, id="approx-dropped"),
        pytest.param("内存节省约 50%", {"50%"}, id="chinese-approx-dropped"),
        pytest.param("5–6.5× TTFT 加速", {"5-6.5×", "5×", "6.5×"}, id="multiplier-range"),
        pytest.param("1.9x decode speedup", {"1.9×"}, id="x-multiplier"),
        pytest.param("~16,200 tok/s vs ~12,500 tok/s", {"16200", "12500"}, id="thousands-unit-dropped"),
        pytest.param("下降 -3%，上升 +4%", {"-3%", "4%"}, id="signs"),
        pytest.param("200K-Token，35.5k ★，$12.93B", {"200K", "35.5K", "$12.93B"}, id="magnitudes"),
        pytest.param("推荐设 0.92", {"0.92"}, id="bare-decimal"),
        pytest.param("SGLang v0.5.19", {"0.5.19"}, id="v-version"),
        pytest.param("vLLM 0.20 引入", {"0.20"}, id="short-version-keeps-zero"),
        pytest.param("升级到 1.0.x、vLLM v0.24.x、Python 3.X", {"1.0.x", "0.24.x", "3.x"}, id="release-series"),
        pytest.param("1.0.x 分支上 1.5x 提升", {"1.0.x", "1.5×"}, id="series-not-the-release-or-a-multiplier"),
        pytest.param(
            "--enable-deepep-waterfill → --enable-waterfill",
            {"--enable-deepep-waterfill", "--enable-waterfill"},
            id="flags",
        ),
        pytest.param("需加 --ipc=host（否则报错）", {"--ipc=host"}, id="flag-with-value"),
        pytest.param("- --a-flag\n- --b-flag", {"--a-flag", "--b-flag"}, id="flags-on-lines"),
        pytest.param("DSpark 回归 #34759、KV 损坏 #34189", {"#34759", "#34189"}, id="refs"),
        pytest.param("arXiv:2605.11093v1 与 2506.09713v2", {"2605.11093", "2506.09713"}, id="arxiv-keys"),
        pytest.param("hep-th/9901001v2", {"hep-th/9901001"}, id="arxiv-old-style"),
        pytest.param("Qwen3-14B batch=64 时 OOM", {"qwen3-14b", "64"}, id="model-and-number"),
        pytest.param("DeepSeek-V4 与 DeepSeek V3", {"deepseek-v4", "deepseek-v3"}, id="model-hyphen-or-space"),
        pytest.param("H100/H200/Blackwell、Qwen3.8", {"h100", "h200", "qwen3.8"}, id="model-names"),
        pytest.param(
            "2026-03-21 归档；2025-12 维护；2026年9月22日", {"2026-03-21", "2025-12", "2026-09-22"}, id="dates"
        ),
        pytest.param("9-22 22:00：无", {"9-22", "9", "22", "22:00"}, id="time-before-colon"),
        pytest.param("inbox/jay/2026-09-22-1050-jay.md", {"2026-09-22", "1050"}, id="file-name-not-negative"),
        pytest.param("① SGLang ② TGI", set(), id="circled-enumerators"),
        pytest.param("替代写法——`--kv-offload-gb <N>`", {"--kv-offload-gb"}, id="a-flag-after-an-em-dash"),
        pytest.param("TGI 已死——HF 官方建议迁移", set(), id="an-em-dash-makes-no-flag"),
        pytest.param("**3.6%**", {"3.6%"}, id="markdown"),
        pytest.param("３．６％ 与 ｖ０．５．１９", {"3.6%", "0.5.19"}, id="fullwidth"),
        pytest.param("没有任何数字", set(), id="none"),
    ],
)
def test_facts(raw: str, expected: set[str]) -> None:
    assert facts(raw) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        pytest.param("SGLang v0.5.19", "SGLang 0.5.19", id="version-v"),
        pytest.param("平均 3.6%", "平均 3.60 %", id="trailing-zero"),
        pytest.param("16,200 tok/s", "16200 tokens/s", id="thousands"),
        pytest.param("DeepSeek V4", "deepseek-v4", id="model-case-and-space"),
        pytest.param("0.4–6.8%", "0.4-6.8%", id="dash"),
        pytest.param("５–６.５×", "5-6.5x", id="fullwidth-multiplier"),
    ],
)
def test_facts_normalise_consistently(a: str, b: str) -> None:
    assert facts(a) == facts(b)


def test_facts_tell_different_numbers_apart() -> None:
    assert facts("平均 3.6%") != facts("平均 3.7%")
    assert facts(">10%") != facts("10%")
    assert facts("Qwen3-14B") != facts("Qwen3-32B")


def test_facts_agree_with_arxiv_finder_on_the_seed() -> None:
    seed = SEED.read_text(encoding="utf-8")
    keys = {m.id.key for m in find_ids(seed)}
    assert keys <= facts(seed)
    assert {"0.5.19", "--ipc=host", "#34759", "3.6%", ">10%", "16200", "qwen3-14b", "deepseek-v4"} <= facts(seed)


# --- similarity --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        pytest.param("HookPoint 推理可观测性", "HookPoint 推理可观测性", 1.0, 1.0, id="identical"),
        pytest.param("HookPoint 推理可观测性", "ｈｏｏｋｐｏｉｎｔ推理可观测性", 1.0, 1.0, id="case-width-spacing"),
        pytest.param("vLLM FP8 KV-Cache 验证报告", "vLLM FP8 KV Cache 生产验证", 0.5, 0.9, id="paraphrase"),
        pytest.param("TGI 正式死亡", "NVIDIA Dynamo 1.0", 0.0, 0.0, id="unrelated"),
        pytest.param("", "", 1.0, 1.0, id="both-empty"),
        pytest.param("a", "", 0.0, 0.0, id="one-empty"),
        pytest.param("推", "推", 1.0, 1.0, id="single-character"),
    ],
)
def test_similarity(a: str, b: str, low: float, high: float) -> None:
    score = similarity(a, b)
    assert low <= score <= high
    assert similarity(b, a) == score


# From the relayed answer for inbox/jay/2026-09-22-inference-engineering-filter.md: the release
# notes' sentence, and the cuts a model makes in it.
RELEASE = (
    "v0.5.19 有两处 CLI flag 重命名，且没有保留废弃别名（no deprecation alias is provided），"
    "旧参数名启动时直接报错 `unrecognized arguments`。" + "填充" * 200 + "另见 sglang.kernels 命名空间重组。"
)


@pytest.mark.parametrize(
    ("quote", "kind"),
    [
        ("两处 CLI flag 重命名……旧参数名启动时直接报错", "elided"),
        ("两处 CLI flag 重命名...直接报错 unrecognized arguments", "elided"),
        ("两处CLI flag重命名", "folded"),  # spaces dropped around and between words
        ("两处CLIflag重命名，且没有保留废弃别名", "folded"),
        ("旧参数名启动时直接报错……两处 CLI flag 重命名", "none"),  # parts out of order
        ("两处 CLI flag 重命名……sglang.kernels 命名空间重组", "none"),  # parts too far apart
        ("两处……直接报错", "none"),  # a part too short to say where it is
        ("两处 CLI flag 重命名……从未说过的话", "none"),
    ],
)
def test_elided_and_spaceless_quotes(quote: str, kind: str) -> None:
    assert locate(quote, RELEASE).kind == kind
