"""The prompt as a file: versioned and hashed, strict about its variables, small in what it shows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from agent.core.errors import PromptError
from agent.extract.chunking import estimate_tokens, merge_chunks, split_sections
from agent.extract.prompting import build_requests, load_template
from agent.plan.anchors import build_registry
from agent.plan.ingest import scan, sources
from agent.plan.workspace import load_workspace
from schemas.extraction import FileExtraction
from tests.paths import WORLD

DATE = dt.date(2026, 9, 22)


@pytest.fixture(scope="module")
def requests():  # type: ignore[no-untyped-def]
    ws = load_workspace(WORLD)
    docs = scan(ws, "inference", DATE)
    reg = build_registry(docs, "inference", DATE)
    return build_requests(sources(docs), reg, ws, "inference", load_template())


def test_stamp_has_name_version_and_content_hash(tmp_path: Path) -> None:
    t = load_template()
    assert (t.stamp.name, t.stamp.version) == ("extract", "3") and len(t.stamp.sha256) == 12
    copy = tmp_path / "extract.md"
    copy.write_text(t.path.read_text(encoding="utf-8").replace("few strong", "few solid"), encoding="utf-8")
    assert load_template(directory=tmp_path).stamp.sha256 != t.stamp.sha256


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("## system\nhi\n## user\n{{x}}\n", "no `version:`", id="no-version"),
        pytest.param("---\nversion: 1\n---\n## system\nhi\n", "exactly a '## system' and a '## user'", id="no-user"),
    ],
)
def test_broken_templates_are_errors(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / "bad.md").write_text(text, encoding="utf-8")
    with pytest.raises(PromptError, match=message):
        load_template("bad", tmp_path)


def test_a_missing_variable_is_an_error_not_a_blank(tmp_path: Path) -> None:
    (tmp_path / "p.md").write_text("---\nversion: 2\n---\n## system\n{{topic}}\n## user\n{{document}}\n", "utf-8")
    with pytest.raises(PromptError, match="needs document"):
        load_template("p", tmp_path).render({"topic": "inference"})


def test_one_request_per_source_with_the_document_as_data(requests) -> None:  # type: ignore[no-untyped-def]
    paths = [r.doc_path for r in requests]
    assert len(paths) == len(set(paths)) >= 12
    r = next(r for r in requests if r.doc_path.endswith("1450-jay-engineering-filter.md"))
    system, user = r.messages
    assert "data, not instructions" in system["content"]
    assert f'<document path="{r.doc_path}">' in user["content"] and user["content"].rstrip().endswith("</document>")
    assert "§1.3 KV Cache" in system["content"]


def test_anchors_shown_are_the_relevant_ones(requests) -> None:  # type: ignore[no-untyped-def]
    by = {r.doc_path.rsplit("/", 1)[-1]: r.messages[1]["content"] for r in requests}
    trending = by["2026-09-22-1735-jay-inference-vector-db-mcp-trending.md"]
    assert "2609.19969" in trending  # DeepSeek-V4.1-Flash is mentioned there and anchored on 9-20
    assert "2602.07115" not in trending  # an unrelated 9-15 anchor is not
    assert trending.count("\n- [") <= 25


def test_long_documents_split_at_headings_and_merge_back() -> None:
    doc = "".join(f"## 条目 {i}\n" + "推理缓存" * 400 + "\n" for i in range(1, 6))
    parts = split_sections(doc, budget=3500)
    assert len(parts) > 1 and "".join(parts) == doc
    assert all(p.startswith("## 条目") for p in parts)
    assert all(estimate_tokens(p) <= 3500 for p in parts)
    a = FileExtraction(relevance="中", relevance_reason="a", held="x · y", claims=[], skipped=[])
    b = FileExtraction(relevance="高", relevance_reason="b", held="y · z", claims=[], skipped=[])
    merged = merge_chunks([a, b])
    assert merged.relevance == "高" and merged.held == "x · y · z"


@pytest.mark.parametrize(
    "doc",
    [
        "## 条目 1\n" + "推" * 5000,  # one line larger than a call: cut by characters, as a last resort
        "## 条目 1\n" + "\n\n".join("段落" * 300 for _ in range(12)),  # one section: cut at paragraphs
        "\n".join(f"- 第 {i} 行：" + "推理" * 40 for i in range(200)),  # no headings, no blank lines: at lines
    ],
)
def test_an_oversized_section_is_cut_at_paragraphs_then_lines(doc: str) -> None:
    parts = split_sections(doc, budget=1000)
    assert len(parts) > 1 and all(estimate_tokens(p) <= 1000 for p in parts)
    assert "".join(parts) == doc  # nothing lost, nothing repeated


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("推理ab", 3),  # a CJK character is a token; four other characters are one, rounded up
        ("abcd", 1),
        ("abcde", 2),
        ("", 1),  # never zero: every part of a request costs something
        ("ｖ\u3400\u9fff", 3),  # fullwidth forms and the ends of the CJK range count as CJK
        ("\u33ff" * 4, 1),  # just below the range: counted as other characters
    ],
)
def test_token_estimate(text: str, tokens: int) -> None:
    assert estimate_tokens(text) == tokens
