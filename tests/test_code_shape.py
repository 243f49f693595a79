"""How the code must read, checked on the code itself: short functions, one vocabulary of rule
decisions, and no briefing phrase spelled outside agent/labels.py."""

from __future__ import annotations

import ast
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
