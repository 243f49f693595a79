"""One settings model: a field reaches the run from predigest.toml, the environment and a flag, in
that order of precedence, and 0 is a value, not "unset"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.core.errors import PredigestError
from agent.core.settings import LLMSettings, Settings, evening_date
from agent.pipeline import plan, settings_from
from tests.paths import ROOT, WORLD


@pytest.fixture
def world(tmp_path: Path) -> Path:
    ws = tmp_path / "world"
    shutil.copytree(WORLD, ws)
    toml = ws / "predigest.toml"
    text = toml.read_text(encoding="utf-8").replace('"../../cassettes/', f'"{ROOT / "cassettes"}/')
    toml.write_text(text.replace("concurrency = 4", "concurrency = 2\nmax_calls = 7\nmax_parts = 3"), encoding="utf-8")
    return ws


def _llm(ws: Path, flags: dict[str, object], env: dict[str, str] | None = None) -> LLMSettings:
    base = {"workspace": ws, "topic": "inference", "date": evening_date("2026-09-22")}
    return plan(settings_from({**base, **flags}, env or {}), for_writing=False).llm


@pytest.mark.parametrize(
    ("field", "flag", "from_file", "from_flag"),
    [
        ("concurrency", 5, 2, 5),
        ("max_calls", 0, 7, 0),  # 0 is a value: no request at all
        ("max_parts", 1, 3, 1),  # a setting added this round: the model and the flag, nothing else
    ],
)
def test_a_field_reaches_the_run_from_the_file_and_from_a_flag(
    world: Path, field: str, flag: int, from_file: int, from_flag: int
) -> None:
    assert getattr(_llm(world, {}), field) == from_file
    assert getattr(_llm(world, {field: flag}), field) == from_flag


def test_flags_beat_the_environment_which_beats_the_file(world: Path) -> None:
    env = {"PREDIGEST_MODEL": "env-model", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-SECRET"}
    assert _llm(world, {}, env).model == "env-model"
    assert _llm(world, {"model": "flag-model"}, env).model == "flag-model"
    assert _llm(world, {}).model == "gpt-4o-mini"  # the file's
    assert _llm(world, {}, env).effective_backend == "live"
    assert "sk-SECRET" not in repr(_llm(world, {}, env)) and "api_key" not in _llm(world, {}, env).model_dump()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"concurrency": 0}, "concurrency = 0"),
        ({"max_calls": -1}, "max_calls = -1"),
        ({"mode": "xml"}, "mode = 'xml'"),
        ({"backend": "cloud"}, "backend = 'cloud'"),
    ],
)
def test_an_impossible_value_is_one_line_naming_the_setting(
    world: Path, flags: dict[str, object], message: str
) -> None:
    with pytest.raises(PredigestError, match=message):
        _llm(world, flags)


def test_no_cache_is_a_setting_too(world: Path) -> None:
    assert _llm(world, {"no_cache": True}).cache_dir is None
    assert _llm(world, {}).cache_dir is not None


def test_a_key_in_the_file_is_refused(world: Path) -> None:
    toml = world / "predigest.toml"
    toml.write_text(toml.read_text(encoding="utf-8").replace("[llm]\n", '[llm]\napi_key = "sk-x"\n'), encoding="utf-8")
    with pytest.raises(PredigestError, match="OPENAI_API_KEY"):
        _llm(world, {})


def test_settings_read_like_the_command_line() -> None:
    s = Settings(workspace=WORLD, topic="inference", date="2026-09-22", backend="replay", max_calls=0, model=None)
    assert s.llm == {"backend": "replay", "max_calls": 0}
