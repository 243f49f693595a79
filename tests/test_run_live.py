"""`predigest run` as a user runs it against an OpenAI-compatible endpoint: here a server on
127.0.0.1 that answers each document with its reference answer. Real client, real HTTP."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent.plan.parse import parse
from tests.fake_openai import FAKE_KEY, FakeOpenAI, world_answers, world_composition, world_responder
from tests.paths import WORLD, predigest


def test_live_record_then_cached_rerun(tmp_path: Path) -> None:
    answers = world_answers()
    replayed = predigest(
        "run",
        str(WORLD),
        "-t",
        "inference",
        "-d",
        "2026-09-22",
        "--out",
        str(tmp_path / "replay.md"),
        "--backend",
        "replay",
        env={**os.environ},
    )
    assert replayed.returncode == 0, replayed.stderr
    with FakeOpenAI(default=world_responder(answers), composer=world_composition()) as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": server.base_url,
            "PREDIGEST_CACHE_DIR": str(tmp_path / "cache"),
        }
        cassettes = tmp_path / "recorded"
        args = (
            "run",
            str(WORLD),
            "-t",
            "inference",
            "-d",
            "2026-09-22",
            "--out",
            str(tmp_path / "live.md"),
            "--backend",
            "record",
            "--cassettes",
            str(cassettes),
            "--concurrency",
            "3",
        )
        first = predigest(*args, env=env)
        assert first.returncode == 0, first.stderr
        calls = server.count
        assert calls == len(answers) + 1  # a document each, and the evening's composing call
        assert server.max_in_flight <= 3
        assert all(r.headers.get("authorization") == f"Bearer {FAKE_KEY}" for r in server.requests)
        second = predigest(*args, "--force", env=env)
        assert second.returncode == 0, second.stderr
        assert server.count == calls, "the cached re-run must not call the endpoint"
        assert "cache" in second.stdout
    written = list(cassettes.glob("*.json"))
    assert len(written) == len(answers) + 1
    for f in written:
        text = f.read_text(encoding="utf-8")
        assert FAKE_KEY not in text and "authorization" not in text.lower()
        assert json.loads(text)["provenance"]["kind"] == "recorded"

    def body(p: Path) -> Any:
        return parse(p.read_text(encoding="utf-8")).model_copy(update={"footer": ""})

    assert body(tmp_path / "live.md") == body(tmp_path / "replay.md")
