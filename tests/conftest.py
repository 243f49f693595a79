"""Every test is isolated from the user's real directories and from any live endpoint."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PREDIGEST_MODEL", "PREDIGEST_CACHE_DIR"):
        monkeypatch.delenv(var, raising=False)
    assert not Path(home / "cache").exists()
