"""agent.core.arxiv: finding, normalising and validating arXiv IDs, table-driven."""

from __future__ import annotations

import dataclasses
import re
from datetime import date
from pathlib import Path

import pytest

from agent.core.arxiv import ArxivId, find_ids, id_keys, normalise, validate

BRIEFING_DATE = date(2026, 9, 22)
SEED = Path(__file__).resolve().parents[1] / "eval" / "cases" / "2026-09-22-inference" / "gold.md"


# --- find_ids ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("arXiv:2605.11093v1 HookPoint", ["2605.11093v1"], id="prefix-colon-version"),
        pytest.param("见 arXiv 2605.11093 原文", ["2605.11093"], id="prefix-space"),
        pytest.param("arXiv：2605.11093", ["2605.11093"], id="prefix-fullwidth-colon"),
        pytest.param("ARXIV:2605.11093", ["2605.11093"], id="prefix-uppercase"),
        pytest.param("| 2609.19657 | H100 Prefix Reuse |", ["2609.19657"], id="bare-in-table"),
        pytest.param("arXiv 号2609.19657。", ["2609.19657"], id="bare-touching-chinese"),
        pytest.param("(2609.19657)", ["2609.19657"], id="bare-in-parens"),
        pytest.param("ends a sentence 2609.19657.", ["2609.19657"], id="bare-before-full-stop"),
        pytest.param("https://arxiv.org/abs/2506.09713v2", ["2506.09713v2"], id="url-abs"),
        pytest.param("arxiv.org/pdf/2506.09713v2.pdf", ["2506.09713v2"], id="url-pdf"),
        pytest.param("https://export.arxiv.org/abs/hep-th/9901001", ["hep-th/9901001"], id="url-old-style"),
        pytest.param("hep-th/9901001 and astro-ph/0601001v3", ["hep-th/9901001", "astro-ph/0601001v3"], id="old-style"),
        pytest.param("arXiv:math.GT/0309136", ["math.GT/0309136"], id="old-style-subject-class"),
        pytest.param("２６０９．１９６５７", ["2609.19657"], id="fullwidth-digits"),
        pytest.param("arXiv:０７０４．０００１", ["0704.0001"], id="fullwidth-four-digit-era"),
        pytest.param("see 0704.0001 for the first", ["0704.0001"], id="bare-four-digit-era"),
        pytest.param("2605.11093 then 2605.11093v2", ["2605.11093", "2605.11093v2"], id="in-order"),
        pytest.param("arXiv:2613.12345", ["2613.12345"], id="found-even-if-invalid"),
    ],
)
def test_find_ids(text: str, expected: list[str]) -> None:
    assert [m.id.display for m in find_ids(text)] == expected


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("SGLang v0.5.19", id="v-version"),
        pytest.param("升级到 0.5.19 后", id="dotted-version"),
        pytest.param("NVIDIA Dynamo 1.0", id="short-version"),
        pytest.param("2026.09.22", id="dotted-date"),
        pytest.param("2026-09-22", id="iso-date"),
        pytest.param("overhead 3.6%", id="percent"),
        pytest.param("~16,200 tok/s", id="thousands"),
        pytest.param("192.168.10.12", id="ip-address"),
        pytest.param("Qwen3.8", id="model-name"),
        pytest.param("#27988", id="pr-ref"),
        pytest.param("1432-2609-19499", id="dashed-card-name"),
        pytest.param("v2605.11093", id="letter-before"),
        pytest.param("2605.11093abc", id="letter-after"),
        pytest.param("12605.11093", id="digit-before"),
        pytest.param("2605.110931", id="six-digits"),
        pytest.param("1.2605.11093", id="dot-digit-before"),
        pytest.param("2605.11093.5", id="dot-digit-after"),
        pytest.param("ratio 1234.5678", id="bare-four-digit-outside-era"),
        pytest.param("2026.0922", id="bare-four-digit-date-like"),
        pytest.param("path/to/1234567", id="unknown-archive"),
    ],
)
def test_find_ids_ignores_junk(text: str) -> None:
    assert find_ids(text) == []


def test_find_ids_spans_index_the_original_text() -> None:
    text = "增量：arXiv:2605.11093v1，另见 https://arxiv.org/pdf/2506.09713v2.pdf 与 ２６０９．１９６５７。"
    matches = find_ids(text)
    assert [text[m.start : m.end] for m in matches] == ["2605.11093v1", "2506.09713v2", "２６０９．１９６５７"]
    assert [m.via for m in matches] == ["prefix", "url", "bare"]
    assert all(normalise(text[m.start : m.end]) == m.id for m in matches)
    assert matches[0].span == (matches[0].start, matches[0].end)


# --- normalise ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "key", "version", "display", "old_style", "yymm"),
    [
        pytest.param("2605.11093v1", "2605.11093", 1, "2605.11093v1", False, "2605", id="new-v1"),
        pytest.param("2605.11093v2", "2605.11093", 2, "2605.11093v2", False, "2605", id="new-v2"),
        pytest.param("2605.11093", "2605.11093", None, "2605.11093", False, "2605", id="new-versionless"),
        pytest.param(" arXiv:2605.11093v1 ", "2605.11093", 1, "2605.11093v1", False, "2605", id="prefixed"),
        pytest.param(
            "https://arxiv.org/pdf/2506.09713v2.pdf", "2506.09713", 2, "2506.09713v2", False, "2506", id="url"
        ),
        pytest.param("０９０１．１２３４", "0901.1234", None, "0901.1234", False, "0901", id="fullwidth"),
        pytest.param("hep-th/9901001", "hep-th/9901001", None, "hep-th/9901001", True, "9901", id="old"),
        pytest.param("HEP-TH/9901001v2", "hep-th/9901001", 2, "hep-th/9901001v2", True, "9901", id="old-upper"),
        pytest.param("math.GT/0309136", "math/0309136", None, "math.GT/0309136", True, "0309", id="old-subject"),
    ],
)
def test_normalise(raw: str, key: str, version: int | None, display: str, old_style: bool, yymm: str) -> None:
    arxiv_id = normalise(raw)
    assert (arxiv_id.key, arxiv_id.version, arxiv_id.display, arxiv_id.old_style) == (key, version, display, old_style)
    assert arxiv_id.yymm == yymm
    assert str(arxiv_id) == display


@pytest.mark.parametrize("raw", ["", "2605", "2605.123", "v0.5.19", "hello", "2605.11093v"], ids=repr)
def test_normalise_rejects_non_ids(raw: str) -> None:
    with pytest.raises(ValueError, match="not shaped like an arXiv ID"):
        normalise(raw)


def test_arxiv_id_is_frozen() -> None:
    arxiv_id = normalise("2605.11093")
    with pytest.raises(dataclasses.FrozenInstanceError):
        arxiv_id.key = "x"  # type: ignore[misc]


# --- validate ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param("2605.11093v1", id="new-five-digit"),
        pytest.param("2609.19657", id="briefing-month"),
        pytest.param("1501.00001", id="first-five-digit-month"),
        pytest.param("1412.9999", id="last-four-digit-month"),
        pytest.param("0704.0001", id="first-new-style"),
        pytest.param("hep-th/9108001", id="first-old-style-month"),
        pytest.param("hep-th/9901001v3", id="old-style"),
        pytest.param("arXiv:math.GT/0309136", id="old-style-subject"),
        pytest.param("cond-mat/0703001", id="last-old-style-month"),
        pytest.param(normalise("2506.09713v2"), id="arxiv-id-object"),
    ],
)
def test_validate_accepts(raw: str | ArxivId) -> None:
    verdict = validate(raw, not_after=BRIEFING_DATE)
    assert verdict.ok, verdict.reason
    assert verdict.reason == ""
    assert verdict.id is not None


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param("2600.12345", "month 00 is not a month", id="month-00"),
        pytest.param("2613.12345", "month 13 is not a month", id="month-13"),
        pytest.param("hep-th/9913001", "month 13 is not a month", id="old-month-13"),
        pytest.param(
            "2610.00001", "2610.00001 is from 2026-10, after the briefing date 2026-09-22", id="after-briefing"
        ),
        pytest.param("2701.00001v1", "is from 2027-01, after the briefing date", id="next-year"),
        pytest.param("1501.1234", "5-digit number", id="four-digits-after-2015"),
        pytest.param("2605.1109", "5-digit number", id="four-digits-recent"),
        pytest.param("1412.12345", "4-digit number", id="five-digits-before-2015"),
        pytest.param("0703.1234", "began in 2007-04", id="new-style-too-early"),
        pytest.param("hep-th/0801001", "old-style IDs run from 1991-08 to 2007-03", id="old-style-too-late"),
        pytest.param("hep-th/9001001", "old-style IDs run from 1991-08 to 2007-03", id="old-style-too-early"),
        pytest.param("foo/9901001", "'foo' is not an arXiv archive", id="unknown-archive"),
        pytest.param("2605.00000", "never issued", id="number-zero"),
        pytest.param("2605.11093v0", "no v0", id="version-zero"),
        pytest.param("Qwen3.8", "not shaped like an arXiv ID", id="not-an-id"),
    ],
)
def test_validate_rejects_with_reason(raw: str, reason: str) -> None:
    verdict = validate(raw, not_after=BRIEFING_DATE)
    assert not verdict.ok
    assert reason in verdict.reason


def test_validate_without_date_skips_only_the_date_check() -> None:
    assert validate("2610.00001", not_after=None).ok
    assert not validate("2613.00001", not_after=None).ok


def test_validate_keeps_the_parsed_id_when_rejecting() -> None:
    verdict = validate("arXiv:2613.12345v2", not_after=BRIEFING_DATE)
    assert verdict.id == normalise("2613.12345v2")


def test_validate_requires_the_date_to_be_passed() -> None:
    with pytest.raises(TypeError):
        validate("2605.11093")  # type: ignore[call-arg]


# --- the seed briefing -------------------------------------------------------------------------


def _seed_text() -> str:
    return SEED.read_text(encoding="utf-8")


def _seed_table_ids(text: str) -> set[str]:
    """The first column of section 四 (可引用 arXiv 号列表), read without agent.core.arxiv."""
    section = text.split("四、可引用 arXiv 号列表", 1)[1].split("五、", 1)[0]
    return {m[1] for m in re.finditer(r"^\| (\d{4}\.\d{4,5})(?:v\d+)? \|", section, re.MULTILINE)}


def test_every_seed_id_is_found_and_valid() -> None:
    text = _seed_text()
    table = _seed_table_ids(text)
    assert len(table) == 24
    matches = find_ids(text)
    # Nothing else in the seed is an ID: versions, dates, percentages and PR numbers stay out.
    assert {m.id.key for m in matches} == table
    for m in matches:
        verdict = validate(m.id, not_after=BRIEFING_DATE)
        assert verdict.ok, verdict.reason
        assert normalise(text[m.start : m.end]) == m.id


def test_seed_tally_ids_are_found_in_order() -> None:
    text = _seed_text()
    tally = next(line for line in text.splitlines() if line.startswith("- 涉及 arXiv 号"))
    assert [m.id.display for m in find_ids(tally)] == [
        "2605.11093",
        "2603.04428",
        "2506.09713",
        "2609.19657",
        "2607.02574",
    ]


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        pytest.param("arXiv:2605.11093v1", "2605.11093", id="prefixed-versioned"),
        pytest.param("2605.11093v2", "2605.11093", id="v2-same-key"),
        pytest.param("https://arxiv.org/abs/2506.09713v2", "2506.09713", id="url"),
        pytest.param("hep-th/9901001", "hep-th/9901001", id="old-style"),
        pytest.param("HookPoint 2605.11093", None, id="free-text-is-not-one-id"),
        pytest.param("0.5.19", None, id="version-string"),
    ],
)
def test_key_of_one_id(raw: str, key: str | None) -> None:
    from agent.core.arxiv import key_of

    assert key_of(raw) == key


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("见 arXiv:2605.11093v2 与 https://arxiv.org/abs/2605.11093", {"2605.11093"}),
        ("hep-th/9901001 和 arXiv 2609.20755", {"hep-th/9901001", "2609.20755"}),
        ("v0.5.19 发布于 2026.09.22", set()),
    ],
)
def test_id_keys_are_the_keys_find_ids_finds(text: str, keys: set[str]) -> None:
    assert id_keys(text) == {m.id.key for m in find_ids(text)} == keys
