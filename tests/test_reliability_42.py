"""Issue 42's probes, one row each: prices that hung a run, inputs that crashed one, readings that
were silently wrong, writes that lost a file or printed a secret, and messages that said nothing.

The rows that fit `tests.test_reliability`'s harness (a copy of the demo workspace, one thing
broken, the command run as a user would, its exit status, one line and files checked) run through
it; the others check what the harness cannot see (a file's bytes, an entry of `inbox --json`).
Every server is on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent.extract.llm.cassettes import cached_tokens
from tests.fake_openai import FAKE_KEY, FakeOpenAI, Reply, world_answers, world_responder
from tests.paths import ROOT, SEED, predigest
from tests.test_reliability import ADJACENT, DAY, REPORT, Row, Setup, _beside, _toml
from tests.test_reliability import test_row as _through_the_harness

PRICE = '"gpt-4o-mini" = [0.15, 0.60, 0.075]'
PRICE_SAID = "predigest.toml: llm.prices: the price of 'gpt-4o-mini' is"
CASE = "2026-09-21-inference"


def _living_beside(absolute: bool) -> Setup:
    """The topic's living document kept outside the workspace, in a notes folder beside it."""

    def setup(ws: Path, tmp: Path) -> None:
        notes = tmp / "notes"
        notes.mkdir()
        shutil.copy(ws / "living" / "inference.md", notes / "inference.md")
        where = str(notes / "inference.md") if absolute else "../notes/inference.md"
        _toml('living = "living/inference.md"', f'living = "{where}"')(ws, tmp)

    return setup


NOT_UTF8 = b"2026-09-22-1612-jay-\xff\xfe.md"


def _report_named_not_utf8(ws: Path, tmp: Path) -> None:
    folder = os.fsencode(ws / "inbox" / "jay")
    with open(os.path.join(folder, NOT_UTF8), "wb") as f:
        f.write("## 条目 1：某推理框架发布\n- 吞吐提升 12%。\n".encode())


def _baseline(change: Callable[[dict[str, Any]], None]) -> Setup:
    """The committed baseline, changed by `change`, at {tmp}/baseline.json."""

    def setup(ws: Path, tmp: Path) -> None:
        data = json.loads((ROOT / "eval" / "baseline.json").read_text(encoding="utf-8"))
        change(data)
        (tmp / "baseline.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")

    return setup


def _deep_points(ws: Path, tmp: Path) -> None:
    """The seed briefing, one key point nested 1,500 levels deep (about 1 MB)."""
    lines = SEED.read_text(encoding="utf-8").split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("要点"))
    lines.insert(at + 1, "\n".join(" " * k + "- 点" for k in range(1, 1500)))
    (tmp / "deep.md").write_text("\n".join(lines), encoding="utf-8")


def _seed_heading(old: str, new: str) -> Setup:
    """The seed briefing with increment 2's stars written as `new`, at {tmp}/b.md."""

    def setup(ws: Path, tmp: Path) -> None:
        text = SEED.read_text(encoding="utf-8")
        heading = next(ln for ln in text.splitlines() if ln.startswith("增量 2："))
        assert heading.endswith(old)
        (tmp / "b.md").write_text(text.replace(heading, heading.removesuffix(old) + new), encoding="utf-8")

    return setup


def _topic(name: str) -> Setup:
    """A topic table named `name` (TOML text: quoted, with escapes) added to predigest.toml."""

    def setup(ws: Path, tmp: Path) -> None:
        with (ws / "predigest.toml").open("a", encoding="utf-8") as f:
            f.write(f'\n[topics.{name}]\nliving = "living/risk.md"\n')

    return setup


def _without_metric(data: dict[str, Any]) -> None:
    del data["cases"][CASE]["increment_f1"]


def _stamp_a_string(data: dict[str, Any]) -> None:
    data["stamps"][CASE] = "replay"


ROWS = [
    # --- hangs: a price that is not a finite number >= 0 never admitted a call under --max-cost -------
    *[
        Row(
            f"price-{name}{'-with-max-cost' if cap else ''}",
            setup=_toml(PRICE, f'"gpt-4o-mini" = {value}'),
            args=("--out", "-", *(("--max-cost", "1") if cap else ())),
            live=True,
            exit=2,
            message=f"{PRICE_SAID} {said}",
            max_requests=0,
        )
        for name, value, said in [
            ("negative", "[-1, -2]", "[-1, -2]"),
            ("nan", "[nan, nan]", "[nan, nan]"),
            ("inf", "[inf, 1]", "[inf, 1]"),
        ]
        for cap in (False, True)
    ],
    Row(
        "price-of-four-numbers-names-both-forms",
        setup=_toml(PRICE, '"gpt-4o-mini" = [1, 2, 3, 4]'),
        live=True,
        args=("--out", "-"),
        exit=2,
        message="give [input, output] or [input, output, cached input]",
        max_requests=0,
    ),
    # --- crashes ------------------------------------------------------------------------------------
    *[
        Row(
            f"living-outside-the-workspace-{how}",
            setup=_living_beside(how == "absolute"),
            args=("--backend", "offline", "--out", "-"),
            exists=("out/2026-09-22-inference-e1prep.md",),
        )
        for how in ("relative", "absolute")
    ],
    Row(
        "report-name-not-utf8",
        setup=_report_named_not_utf8,
        live=True,
        args=("--out", "-"),
        exists=("out/2026-09-22-inference-e1prep.md",),
        max_requests=14,  # the evening's 14 documents; none for a file that cannot be opened by its name
        listed=("inbox/jay/2026-09-22-1612-jay-\ufffd\ufffd.md", "its name is not UTF-8"),
    ),
    Row(
        "baseline-stamp-a-string",
        setup=_baseline(_stamp_a_string),
        command=("eval", "--case", CASE, "--baseline", "{tmp}/baseline.json"),
        exit=2,
        message=f"baseline.json: the stamp of {CASE} is 'replay', not an object of strings",
    ),
    Row(
        "update-baseline-unwritable",
        setup=_beside("file", "a file where a folder would be"),
        command=("eval", "--case", CASE, "--baseline", "{tmp}/file/baseline.json", "--update-baseline"),
        exit=2,
        message="cannot write the baseline",
    ),
    Row(
        "patch-of-a-deeply-nested-record",
        setup=_beside("deep.json", "[" * 100_000 + "]" * 100_000),
        command=("patch", "{tmp}/deep.json"),
        exit=2,
        message="nested too deeply to be a run record",
    ),
    Row(
        "parse-of-deeply-nested-points", setup=_deep_points, command=("parse", "{tmp}/deep.md"), message="increments: 6"
    ),
    # --- silent wrong: an increment heading swallowed into the one above ----------------------------
    Row(
        "heading-stars-after-a-word",
        setup=_seed_heading("（⭐⭐⭐⭐）", "（补充，⭐⭐⭐⭐）"),
        command=("parse", "{tmp}/b.md"),
        message="increments: 6",
    ),
    Row(
        "heading-without-stars",
        setup=_seed_heading("（⭐⭐⭐⭐）", "（补充）"),
        command=("parse", "{tmp}/b.md"),
        exit=2,
        message="b.md:36: an 增量 heading with no stars in its closing brackets",
    ),
    # --- data loss and security ---------------------------------------------------------------------
    Row(
        "eval-html-over-an-existing-file",
        setup=_beside("eval.html", "<p>my own page</p>"),
        command=("eval", "--case", CASE, "--html", "{tmp}/eval.html"),
        exit=2,
        message="eval.html already exists — pass --force",
    ),
    *[
        Row(
            f"topic-name-{name}",
            setup=_topic(toml),
            live=True,
            args=("--out", "-"),
            exit=2,
            message=said,
            max_requests=0,
        )
        for name, toml, said in [
            ("dot-dot-slash", '"../x"', "the topic name '../x' has '.'"),
            ("slash", '"a/b"', "the topic name 'a/b' has '/'"),
            ("newline", '"a\\nb"', "the topic name 'a\\nb' has '\\n'"),
            ("zero-width", '"a\\u200bb"', "has '\\u200b'"),
            ("right-to-left", '"ab\\u202e"', "has '\\u202e'"),
            ("300-characters", "x" * 300, "is 300 characters long"),
        ]
    ],
    # --- weak: a metric missing from a baseline row is gated ----------------------------------------
    Row(
        "baseline-row-without-a-metric",
        setup=_baseline(_without_metric),
        command=("eval", "--case", CASE, "--baseline", "{tmp}/baseline.json"),
        exit=1,
        message="unscored   increment_f1",
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_row(row: Row, world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _through_the_harness(row, world, tmp_path, monkeypatch)


@pytest.fixture
def world(tmp_path: Path) -> Path:
    from tests.test_reliability import _world_copy

    return _world_copy(tmp_path)


# --- rows the harness cannot check -------------------------------------------------------------------

CONTROLS = "\x1b[31m\x00\x07\x9b"
RAW = "\x1b\x00\x07\x9b"  # what must reach no file (the "[31m" after ESC is plain text)


def _controls_in_titles(body: object) -> Reply:
    """Reference answers, every claim's title and key points carrying raw control characters."""
    answers = json.loads(json.dumps(world_answers()))
    for answer in answers.values():
        for c in answer["claims"]:
            c["title"] = CONTROLS + c["title"]
            c["key_points"][0]["text"] += CONTROLS
    return world_responder(answers)(body)


def _echoes_the_key(body: object) -> Reply:
    return Reply(status=401, body={"error": {"message": f"Incorrect API key provided: {FAKE_KEY}."}})


def _live(world: Path, tmp: Path, reply: Callable[[object], Reply]) -> tuple[str, Path]:
    """A live run of the demo evening against `reply`, into {tmp}/out: what it said, and the folder."""
    env = {"PATH": os.environ.get("PATH", ""), "OPENAI_API_KEY": FAKE_KEY, "PREDIGEST_CACHE_DIR": str(tmp / "c")}
    with FakeOpenAI(default=reply) as server:
        r = predigest(
            "run", str(world), "-t", "inference", "-d", DAY, "--backend", "live", "--out", f"{tmp}/out/",
            env={**env, "OPENAI_BASE_URL": server.base_url},
        )  # fmt: skip
    said = r.stdout + r.stderr
    assert "Traceback" not in said and "unexpected" not in said, said
    return said, tmp / "out"


def test_a_models_control_characters_reach_no_file(world: Path, tmp_path: Path) -> None:
    said, out = _live(world, tmp_path, _controls_in_titles)
    written = {p.name: p.read_bytes() for p in out.iterdir()}
    assert f"{DAY}-inference-e1prep.md" in written, said
    for name, data in written.items():
        text = data.decode("utf-8")
        assert not any(c in text for c in RAW), name
    assert "[31m" in written[f"{DAY}-inference-e1prep.md"].decode("utf-8")  # the titles were written, without ESC


def test_a_key_echoed_in_a_401_is_not_printed(world: Path, tmp_path: Path) -> None:
    said, _ = _live(world, tmp_path, _echoes_the_key)
    assert "HTTP 401" in said and "Incorrect API key provided: [API key]" in said, said
    assert FAKE_KEY not in said


def test_a_topic_named_2026_is_a_briefing_not_a_2026_report(world: Path) -> None:
    _topic('"2026"')(world, world)
    shutil.copy(world / ADJACENT, world / "inbox/tom/2026-09-22-2026-e1prep.md")
    r = predigest("inbox", str(world), "-t", "inference", "-d", DAY, "--json")
    assert r.returncode == 0, r.stderr
    entry = next(d for d in json.loads(r.stdout) if d["path"] == "inbox/tom/2026-09-22-2026-e1prep.md")
    assert (entry["kind"], entry["topic"], entry["read"]) == ("adjacent", "2026", True), entry
    assert REPORT in r.stdout  # the other reports are read as before


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (("logs",), "the run log is off (PREDIGEST_LOGS_DB=off): nothing is logged — unset PREDIGEST_LOGS_DB"),
        (("logs", "show", "last"), "error: the run log is off (PREDIGEST_LOGS_DB=off) — unset PREDIGEST_LOGS_DB"),
        (("eval", "--compare", "last~1", "last"), "error: the run log is off"),
    ],
    ids=["list", "show", "compare"],
)
def test_the_logs_say_the_log_is_off(command: tuple[str, ...], said: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PREDIGEST_LOGS_DB", "off")
    r = predigest(*command)
    assert said in r.stdout + r.stderr and "None" not in r.stdout + r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize(
    ("usage", "cached"),
    [
        ({"prompt_tokens": 2000, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1536}}, 1536),
        ({"prompt_tokens": 2000, "completion_tokens": 9, "prompt_cache_hit_tokens": 1536}, 1536),  # DeepSeek
        (
            {
                "prompt_tokens": 2000,
                "completion_tokens": 9,
                "prompt_cache_hit_tokens": 1536,
                "prompt_cache_miss_tokens": 464,
            },
            1536,
        ),
        (
            {"prompt_tokens": 2000, "completion_tokens": 9, "prompt_cache_hit_tokens": 5000},
            2000,
        ),  # never above the prompt
        ({"prompt_tokens": 2000, "completion_tokens": 9}, 0),
    ],
    ids=["openai", "deepseek", "deepseek-with-misses", "deepseek-over", "none"],
)
def test_cached_tokens_of_the_common_providers(usage: dict[str, Any], cached: int) -> None:
    assert cached_tokens(usage) == cached
