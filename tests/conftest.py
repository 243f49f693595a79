"""Every test is isolated from the user's real directories and from any live endpoint."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fake_openai import FakeOpenAI


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    for var in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.setenv(var, str(home / var.lower()))
    for var in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_ORG_ID",
        "OPENAI_PROJECT_ID",
        "PREDIGEST_MODEL",
        "PREDIGEST_CACHE_DIR",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    """An OpenAI-compatible server on 127.0.0.1 for the test, stopped after it."""
    with FakeOpenAI() as fake:
        yield fake
