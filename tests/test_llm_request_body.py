"""The request body built without instructor (agent/llm/body.py) is the one the real client sends,
byte for byte once canonical, in both modes, for every document of the demo evening: this is
what lets a replay skip importing openai and instructor, so it is proven against the client
(both the body it builds and the body a loopback server receives over real HTTP)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent.extract import ExtractionRequest
from agent.extract.llm import LLMExtractor
from agent.extract.llm import body as body_module
from agent.extract.llm.body import cassettes_answer, request_body
from agent.extract.llm.cassettes import body_key, canonical_json
from agent.extract.llm.reference import current_request_body
from agent.pipeline import Settings, plan
from tests.fake_openai import FakeOpenAI, make_config
from tests.paths import ROOT, WORLD

MODES = ["tools", "json_schema"]


def _demo_requests() -> list[ExtractionRequest]:
    evening = plan(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22)), for_writing=False)
    assert len(evening.requests) >= 14
    return list(evening.requests)


@pytest.mark.parametrize("mode", MODES)
def test_the_built_body_is_the_clients_for_every_demo_document(tmp_path: Path, mode: str) -> None:
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", mode=mode, backend="replay")
    for request in _demo_requests():
        built = request_body(request, config)
        assert built is not None
        assert canonical_json(built) == canonical_json(current_request_body(request, config)), request.doc_path


@pytest.mark.parametrize("mode", MODES)
def test_the_built_body_is_what_the_server_receives(server: FakeOpenAI, tmp_path: Path, mode: str) -> None:
    requests = _demo_requests()[:4]
    config = make_config(tmp_path, server.base_url, mode=mode, cache_dir=None, concurrency=1)
    with LLMExtractor(config) as extractor:  # record: every request goes through the client
        results = extractor.extract_all(requests)
    assert all(r.extraction is not None for r in results)
    received = {canonical_json(seen.body) for seen in server.requests}
    assert len(received) == len(requests)
    for request, result in zip(requests, results, strict=True):
        built = request_body(request, config)
        assert canonical_json(built) in received
        assert body_key(built) == result.record.request_hash


def test_the_demo_cassettes_answer_the_built_bodies() -> None:
    evening = plan(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22)), for_writing=False)
    assert cassettes_answer(list(evening.requests), evening.llm)
    with LLMExtractor(evening.llm.with_(backend="replay")) as extractor:
        results = extractor.extract_all(evening.requests)
        assert extractor._client is None  # every answer was a stored one: the client was never built
    assert all(r.record.source == "cassette" and r.record.cassette for r in results)


@pytest.mark.parametrize(
    ("version", "mode"),
    [("1.18.0", "tools"), ("2.0.0", "json_schema"), ("1.17.0", "md_json")],
    ids=["newer-minor", "newer-major", "unmirrored-mode"],
)
def test_nothing_is_built_for_what_is_not_mirrored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str, mode: str
) -> None:
    monkeypatch.setattr(body_module.metadata, "version", lambda _name: version)
    body_module.mirrors_installed_instructor.cache_clear()
    try:
        config = make_config(tmp_path, "http://127.0.0.1:9/v1", backend="replay").model_copy(update={"mode": mode})
        assert request_body(_demo_requests()[0], config) is None
    finally:
        body_module.mirrors_installed_instructor.cache_clear()


def test_a_replayed_demo_run_never_imports_openai_or_instructor(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from agent.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "finally:\n"
        "    print('LOADED', sorted(m for m in ('openai', 'instructor') if m in sys.modules))\n"
    )
    args = ["run", "examples/world", "--topic", "inference", "--date", "2026-09-22", "--backend", "replay"]
    args += ["--out", str(tmp_path) + "/", "--force"]
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    r = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert "LOADED []" in r.stdout, r.stdout + r.stderr
    assert (tmp_path / "2026-09-22-inference-e1prep.md").exists()


def test_with_another_instructor_the_body_is_learnt_through_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(body_module.metadata, "version", lambda _name: "1.18.0")
    body_module.mirrors_installed_instructor.cache_clear()
    try:
        evening = plan(Settings(workspace=WORLD, topic="inference", date=dt.date(2026, 9, 22)), for_writing=False)
        with LLMExtractor(evening.llm.with_(backend="replay")) as extractor:
            results = extractor.extract_all(evening.requests)
            assert extractor._template is not None  # learnt through the real client, as before
    finally:
        body_module.mirrors_installed_instructor.cache_clear()
    assert all(r.record.source == "cassette" and r.extraction is not None for r in results)
