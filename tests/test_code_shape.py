"""How the code must read, checked on the code itself: short functions, one vocabulary of rule
decisions, and no briefing phrase spelled outside agent/labels.py."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

from schemas.run import Decision, Rule
from tests.paths import ROOT

PACKAGES = ("agent", "eval", "schemas")


def _modules(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def _finding_calls(tree: ast.AST) -> list[ast.Call]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Finding"]


def _literal_values(node: ast.expr) -> list[str]:
    """The strings an argument can be: a constant, or either branch of a conditional."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.IfExp):
        return [*_literal_values(node.body), *_literal_values(node.orelse)]
    return []


def test_every_finding_names_a_known_rule_and_decision() -> None:
    """`Finding.rule` and `.decision` are Literals; a typo in a rule would only show at runtime
    (when the run record validates it), so every call site is read here."""
    seen = 0
    wrong: list[str] = []
    for path in _modules("agent", "eval"):
        for call in _finding_calls(ast.parse(path.read_text(encoding="utf-8"))):
            rule, decision = call.args[0], call.args[3]
            rules, decisions = _literal_values(rule), _literal_values(decision)
            assert rules and decisions, f"{path.name}:{call.lineno}: spell the rule and decision as literals"
            seen += 1
            wrong += [f"{path.name}:{call.lineno}: rule {r!r}" for r in rules if r not in get_args(Rule)]
            wrong += [f"{path.name}:{call.lineno}: decision {d!r}" for d in decisions if d not in get_args(Decision)]
    assert seen > 20
    assert wrong == []


# --- no function longer than 60 lines ----------------------------------------------------------------

MAX_LINES = 60


def long_functions(source: str, name: str = "<source>") -> list[str]:
    """Functions (and methods) whose body runs over `MAX_LINES` lines, decorators and docstring
    included: the length a reader has to hold."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            n = (node.end_lineno or node.lineno) - first + 1
            if n > MAX_LINES:
                out.append(f"{name}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_no_function_is_longer_than_sixty_lines() -> None:
    too_long = [
        f
        for path in _modules(*PACKAGES)
        for f in long_functions(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    ]
    assert too_long == []


def test_the_length_check_sees_a_long_function() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    assert long_functions(f"def f() -> None:\n{body}\n") == ["<source>:1 f (61 lines)"]
    assert long_functions(f"def f() -> None:\n{body[: body.rindex(chr(10))]}\n") == []


# --- every briefing phrase in agent/labels.py ------------------------------------------------------------

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")  # words; punctuation alone is layout glue
LEVELS = {"高", "中高", "中", "低", "邻接", "参考", "基线"}  # the schema's level values (schemas/extraction.py)
# Modules whose Chinese is the vocabulary of what they read, not of what the briefing says.
READERS = {
    "agent/extract/offline/outline.py": "reads the structure upstream reports are written in (条目 N, 来源, 可信度 …)",
    "agent/rules/injection.py": "patterns of orders planted in documents (忽略以上 …), matched, never printed",
    "agent/core/text.py": "how documents write figures and dates (约, 年月日, 至), for grounding",
    "agent/rules/edit.py": "how documents write what a figure measures (降低, 提升, 倍, 秒), to find disputes",
    "agent/extract/chunking.py": "CJK character ranges and level values, to estimate tokens and rank chunks",
    "benchmarks/bench.py": "writes synthetic upstream documents to time the rules on",
    "benchmarks/evening.py": "writes a synthetic evening (reports, living document) for the load benchmark",
    "benchmarks/endpoint.py": "a stand-in endpoint's answers (FileExtraction text) for the load benchmark",
}
# Single literals elsewhere that read rather than write, each with its reason.
INPUT_PATTERNS = {
    ("agent/extract/offline/extractor.py", "[的与和及或"): "function words left out of the topic profile's terms",
    ("agent/extract/offline/extractor.py", "无关|不涉及"): "how a report says an item is off its topic",
    ("agent/extract/offline/extractor.py", "待核实|待补"): "how a report says a figure is not verified yet",
    ("agent/extract/offline/extractor.py", "发布说明|更新日志"): "how a source names release notes (its credibility)",
    ("agent/extract/offline/extractor.py", "公众号|转载|论坛"): "forums and reposts (credibility)",
    ("agent/extract/offline/extractor.py", "官方|official"): "how a source names official docs (its credibility)",
    ("agent/extract/offline/extractor.py", "blog|博客"): "how a source names a blog (its credibility)",
    ("agent/plan/parse.py", "暂无"): "how other agents mark an empty block",
    ("agent/plan/anchors.py", "|与|和|及"): "the words joining two papers on a living-document line",
    ("eval/metrics.py", "还是"): "how a gold's 三 names a disputed figure ('2.1× 还是 1.6×')",
    ("agent/core/errors.py", "状态摘要"): "errors.py sits below labels.py; the hint names the blocks",
    ("agent/rules/editor.py", "(?!\\d+\\.\\d+\\.\\d)[<>+\\-]?(?:\\d+(?:\\.\\d+)?(?:%|×|x|倍"): (
        "a figure's units, as the checker reads a point"
    ),
    ("eval/metrics.py", "年"): "a year said in words in a gold key point (2026 年), which is not a key fact",
    (
        "eval/metrics.py",
        "|即使|但是?|而且?",
    ): "connectives a sentence cut mid-clause ends on, as cut_sentences reads it",
}


def _documentation(tree: ast.AST) -> set[int]:
    """ids of string nodes that document rather than say: docstrings, bare strings, help texts."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            out.add(id(node.value))
        if isinstance(node, ast.keyword) and node.arg in ("description", "help"):
            out |= {id(n) for n in ast.walk(node.value)}
    return out


def han_literals(source: str, name: str) -> list[str]:
    """String literals with Chinese words that are neither documentation nor allowed above."""
    tree = ast.parse(source)
    docs = _documentation(tree)
    out = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in docs:
            continue
        text = node.value
        if not HAN.search(text) or text in LEVELS:
            continue
        if any(name == f and pattern in text for f, pattern in INPUT_PATTERNS):
            continue
        out.append(f"{name}:{node.lineno} {text[:40]!r}")
    return out


def test_no_briefing_phrase_outside_labels() -> None:
    found = []
    for path in _modules("agent", "eval"):
        name = path.relative_to(ROOT).as_posix()
        if name != "agent/core/labels.py" and name not in READERS:
            found += han_literals(path.read_text(encoding="utf-8"), name)
    assert found == [], "put briefing phrases in agent/labels.py (or say why a reading pattern is allowed)"


def test_the_phrase_check_sees_a_new_phrase() -> None:
    source = '"""文档说明不算。"""\nNOTE = "已核实"\nLEVEL = "高"\nGLUE = "；"\n'
    assert han_literals(source, "agent/layout.py") == ["agent/layout.py:2 '已核实'"]
    assert han_literals('x = f"写入 {y}"\n', "agent/compose.py") == ["agent/compose.py:1 '写入 '"]
