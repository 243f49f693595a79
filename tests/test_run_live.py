"""`predigest run` as a user runs it against an OpenAI-compatible endpoint: here a server on
127.0.0.1 that answers each document with its reference answer. Real client, real HTTP."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from agent.llm.cassettes import read_cassette
from agent.parse import parse
from tests.fake_openai import FAKE_KEY, FakeOpenAI, Reply, completion
from tests.paths import ROOT, WORLD, predigest

REFERENCE = ROOT / "cassettes" / "world"


def _answers() -> dict[str, Any]:
    """document path → its reference extraction, read from the committed cassettes."""
    out = {}
    for f in REFERENCE.glob("*.json"):
        c = read_cassette(f)
        msg = c.exchange.response_body["choices"][0]["message"]
        args = msg["tool_calls"][0]["function"]["arguments"] if msg.get("tool_calls") else msg["content"]
        out[c.provenance.document] = json.loads(args)
    return out


def _responder(answers: dict[str, Any]):  # type: ignore[no-untyped-def]
    def answer(body: Any) -> Reply:
        user = body["messages"][-1]["content"]
        doc = re.search(r'<document path="([^"]+)">', user)
        if doc is None or doc.group(1) not in answers:
            return Reply(status=400, body={"error": {"message": "unknown document"}})
        return Reply(body=completion(body, answers[doc.group(1)], usage=(2000, 300)))

    return answer


def test_live_record_then_cached_rerun(tmp_path: Path) -> None:
    answers = _answers()
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
    with FakeOpenAI(default=_responder(answers)) as server:
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
        assert calls == len(answers)
        assert server.max_in_flight <= 3
        assert all(r.headers.get("authorization") == f"Bearer {FAKE_KEY}" for r in server.requests)
        second = predigest(*args, "--force", env=env)
        assert second.returncode == 0, second.stderr
        assert server.count == calls, "the cached re-run must not call the endpoint"
        assert "cache" in second.stdout
    written = list(cassettes.glob("*.json"))
    assert len(written) == len(answers)
    for f in written:
        text = f.read_text(encoding="utf-8")
        assert FAKE_KEY not in text and "authorization" not in text.lower()
        assert json.loads(text)["provenance"]["kind"] == "recorded"

    def body(p: Path) -> Any:
        return parse(p.read_text(encoding="utf-8")).model_copy(update={"footer": ""})

    assert body(tmp_path / "live.md") == body(tmp_path / "replay.md")
