"""`facts` is its reference, only faster.

The reference below is `facts` as it was before its patterns were rewritten for speed (13 passes
of patterns that all begin with a lookbehind, which `re` cannot skip ahead for), over the
per-character reference fold. Every rule layer decision compares fact sets, so the fast version
is held to it exactly: on generated text dense in the characters the patterns look at, on every
Markdown file of the repository's examples and eval cases, and on a generated evening.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.core.text import _fold_map_by_char, facts
from benchmarks.evening import write_evening

ROOT = Path(__file__).resolve().parents[1]

# --- the reference ---------------------------------------------------------------------------

_BLANK = "\x00"
_ENUMERATOR_RE = re.compile("[\u2460-\u24ff\u2776-\u2793\u3251-\u325f\u32b1-\u32bf]")
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNIT = r"%|‰|×|[xX](?![A-Za-z0-9])|bits?(?![A-Za-z])|[KkMBGT](?![A-Za-z])"
_END = r"(?![0-9]|\.\d)"
_FLAG_RE = re.compile(r"(?<![\w-])--[A-Za-z][A-Za-z0-9_-]*(?:=[A-Za-z0-9_.:/@+%-]+)?")
_ARXIV_NEW_RE = re.compile(r"(?<![0-9A-Za-z])(?<![0-9]\.)(\d{4}\.\d{4,5})(?:v\d+)?(?![0-9A-Za-z])" + _END)
_ARXIV_OLD_RE = re.compile(
    r"(?<![0-9A-Za-z])([a-z]+(?:-[a-z]+)?)(?:\.[A-Za-z][A-Za-z-]{1,9})?/(\d{7})(?:v\d+)?(?![0-9])"
)
_REF_RE = re.compile(r"(?<![&0-9])#(\d+)(?![0-9])")
_DATE_RE = re.compile(r"(?<![0-9])((?:19|20)\d\d)[-/.年](\d{1,2})[-/.月](\d{1,2})日?" + _END)
_MONTH_RE = re.compile(r"(?<![0-9])((?:19|20)\d\d)[-/年](\d{1,2})月?" + _END)
_TIME_RE = re.compile(r"(?<![0-9])(?<!\d:)([01]?\d|2[0-3]):([0-5]\d)(?![0-9]|:\d)")
_JOINED_NAME_RE = re.compile(r"(?<![0-9A-Za-z])([A-Z][A-Za-z]+) ([A-Z]\d{1,2}(?:\.\d+)?)(?![0-9A-Za-z.-])")
_NAME_RE = re.compile(r"(?<![0-9A-Za-z_\x00])[A-Za-z][A-Za-z0-9]*(?:[-.][A-Za-z0-9]+)*")
_V_VERSION_RE = re.compile(r"[vV](\d+(?:\.\d+)+)")
_VERSION_RE = re.compile(r"(?<![0-9A-Za-z.\x00])\d+\.\d+\.\d+(?:\.\d+)?(?![0-9A-Za-z])" + _END)
_CHAIN_RE = re.compile(r"(?<![0-9A-Za-z.\x00-])\d+(?:-\d+){2,}(?![0-9A-Za-z])")
_RANGE_RE = re.compile(
    rf"(?<![0-9A-Za-z.\x00])(?:(?P<cmp>>=|<=|[<>≤≥~≈]|约)\s?)?"
    rf"(?P<a>{_NUM})(?P<ua>{_UNIT})?\s?(?:-|~|至|到)\s?(?P<b>{_NUM})\s?(?P<ub>{_UNIT})?" + _END
)
_NUMBER_RE = re.compile(
    rf"(?<![0-9A-Za-z.\x00])(?:(?P<cmp>>=|<=|[<>≤≥~≈]|约)\s?)?(?P<sign>[-+]?)(?P<cur>[$¥€£]?)"
    rf"(?P<n>{_NUM})(?:\s?(?P<u>%|‰|×)|(?P<u2>{_UNIT}))?" + _END
)
_UNIT_CANON = {"x": "×", "X": "×", "k": "K", "bits": "bit"}
_CMP_CANON = {">=": "≥", "<=": "≤", "~": "", "≈": "", "约": ""}

Render = Callable[[re.Match[str]], "str | list[str] | None"]


def _digits(n: str, *, measured: bool) -> str:
    n = n.replace(",", "")
    if measured and "." in n:
        n = n.rstrip("0").rstrip(".")
    return n


def _unit(u: str | None) -> str:
    return _UNIT_CANON.get(u, u) if u else ""


def _number(n: str, unit: str | None) -> str:
    return _digits(n, measured=bool(unit)) + _unit(unit)


def _take(work: str, pattern: re.Pattern[str], render: Render, found: set[str]) -> str:
    def replace(m: re.Match[str]) -> str:
        fact = render(m)
        if fact is None:
            return m.group()
        found.update([fact] if isinstance(fact, str) else fact)
        return _BLANK * (m.end() - m.start())

    return pattern.sub(replace, work)


def _reference_facts(s: str) -> set[str]:
    work = _fold_map_by_char(_ENUMERATOR_RE.sub(" ", s), squeeze=False).text
    found: set[str] = set()
    steps: list[tuple[re.Pattern[str], Render]] = [
        (_FLAG_RE, lambda m: m.group()),
        (_ARXIV_NEW_RE, lambda m: m[1]),
        (_ARXIV_OLD_RE, lambda m: f"{m[1].lower()}/{m[2]}"),
        (_REF_RE, lambda m: f"#{m[1]}"),
        (_DATE_RE, _render_date),
        (_MONTH_RE, _render_month),
        (_TIME_RE, lambda m: f"{int(m[1]):02d}:{m[2]}"),
        (_JOINED_NAME_RE, lambda m: f"{m[1]}-{m[2]}".lower()),
        (_NAME_RE, _render_name),
        (_VERSION_RE, lambda m: m.group()),
        (_CHAIN_RE, lambda m: m.group()),
        (_RANGE_RE, _render_range),
        (_NUMBER_RE, _render_number),
    ]
    for pattern, render in steps:
        work = _take(work, pattern, render, found)
    return found


def _render_date(m: re.Match[str]) -> str | None:
    year, month, day = int(m[1]), int(m[2]), int(m[3])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"{year}-{month:02d}-{day:02d}"


def _render_month(m: re.Match[str]) -> str | None:
    month = int(m[2])
    return f"{m[1]}-{month:02d}" if 1 <= month <= 12 else None


def _render_name(m: re.Match[str]) -> str | None:
    token = m.group()
    if v := _V_VERSION_RE.fullmatch(token):
        return v[1]
    return token.lower() if any(c.isdigit() for c in token) else None


def _render_range(m: re.Match[str]) -> list[str]:
    ua, ub = m["ua"] or m["ub"], m["ub"]
    cmp = _CMP_CANON.get(m["cmp"] or "", m["cmp"] or "")
    a, b = _number(m["a"], ua), _number(m["b"], ub)
    low = _digits(m["a"], measured=bool(ua)) if ua == ub else a
    return [f"{cmp}{low}-{b}", f"{cmp}{a}", b]


def _render_number(m: re.Match[str]) -> str:
    cmp = _CMP_CANON.get(m["cmp"] or "", m["cmp"] or "")
    sign = "-" if m["sign"] == "-" else ""
    return f"{cmp}{sign}{m['cur']}{_number(m['n'], m['u'] or m['u2'])}"


# --- the comparison --------------------------------------------------------------------------

# Every character some pattern, lookbehind or unit looks at, and their fullwidth twins.
ALPHABET = (
    "0123456789" "0123456789" "٣" ".,-:/#%&×xXvVbitsKkMBGT" "<>≤≥~≈=+$¥€£‰"
    "年月日至到约推理" "aAzZqQeHhmp_@" "  \n\t\u3000" "①❷㉑" "－—–〜：．，／＃％"
    "０１２９ｖＶｘ" "*`|" "é\u0301"
)  # fmt: skip
PIECES = [
    "2026", "-09", "-22", "年", "9月", "22日", "22:00", ":", "0.5.19", "v0.5", "V4", "Qwen3", "-14B", " ",
    "DeepSeek V4", "H100", "--ipc=host", "--a", "#34759", "&#12", "arXiv:", "2605.11093", "v2", "hep-th/9901001",
    "math.GT/", "0309136", "3.6%", "16,200", "1,2", ",000", "~", "约", "≈", ">=", "<", "至", "到", "5", "6.5×",
    "x", "X ", "bits", "bit", "K", "k", "B", "$", "¥", "-", "+", "1-2-3", "0.4–6.8%", "\n", "\n- ", "\n1. ",
    "**", "１．", "①", "\x00", "推理", "．", "% ", "‰", "T", "GB", "1", "12", "7", "19", "20", ":30", ":5", "/1",
    "-1", ".1", ".", "a", "Z", "_", "&", "=", "=1", "٣",
]  # fmt: skip

text_from_alphabet = st.text(alphabet=ALPHABET, max_size=80)
text_from_pieces = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(text_from_alphabet, text_from_pieces))
def test_facts_is_the_reference_on_generated_text(s: str) -> None:
    assert facts(s) == _reference_facts(s)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(text_from_alphabet, text_from_pieces), max_size=6).map("".join))
def test_facts_is_the_reference_on_mixed_text(s: str) -> None:
    assert facts(s) == _reference_facts(s)


@pytest.mark.parametrize(
    "s",
    [
        pytest.param("x--a-flag --b=1", id="flag-after-word"),
        pytest.param("1:2:3 12:30 23:59 24:00 9:05 012:30 1:12:30 22:00:22:00", id="times"),
        pytest.param("2026-09-22-1050 1999/1/2 2031年12月 12019-01-01 x2019-01 32019年1月", id="dates"),
        pytest.param("foo-bar.-5 abc.d1 a-b-c9 v1.2.3 V4.0", id="names-with-and-without-digits"),
        pytest.param("约 5-6 ~3至4 >=1,000–2,000x 2bits-3bit", id="ranges"),
        pytest.param("-3% +4 $12.93B ¥5 ≈7 约 8 < 9", id="numbers"),
        pytest.param("2605.11093v1.2 1.2605.11093 ２６０５．１１０９３", id="arxiv-edges"),
        pytest.param("\x00\x001 \x00a1 .5", id="after-blanks"),
    ],
)
def test_facts_is_the_reference_on_edges(s: str) -> None:
    assert facts(s) == _reference_facts(s)


def _repository_markdown() -> list[Path]:
    return sorted([*(ROOT / "examples").rglob("*.md"), *(ROOT / "eval" / "cases").rglob("*.md")])


@pytest.mark.parametrize("path", _repository_markdown(), ids=lambda p: str(p.relative_to(ROOT)))
def test_facts_is_the_reference_on_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert facts(text) == _reference_facts(text)
    for line in text.splitlines():  # key points are single lines; their facts are compared too
        assert facts(line) == _reference_facts(line), line


def test_facts_is_the_reference_on_a_generated_evening(tmp_path: Path) -> None:
    write_evening(tmp_path, 30)
    reports = sorted((tmp_path / "inbox").rglob("*.md"))
    assert len(reports) > 30  # tonight's reports and a baseline
    for path in reports:
        text = path.read_text(encoding="utf-8")
        assert facts(text) == _reference_facts(text), path.name
