"""Record, cache and replay through the real openai client; misses explain themselves."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from agent.extract.llm import LLMExtractor, rekey_reference_cassettes, write_reference_cassette
from agent.extract.llm.cassettes import doc_slug, request_key, shared_prefix
from schemas.extraction import FileExtraction
from tests.fake_openai import (
    FAKE_KEY,
    SYSTEM,
    FakeOpenAI,
    make_config,
    make_request,
    sample_extraction,
)

DOCS = ["inbox/jay/2026-09-22-vllm.md", "inbox/jay/2026-09-22-sglang.md", "paper_cards/2209/1405-2509-12345.md"]


def _run(config, requests):
    with LLMExtractor(config) as extractor:
        return extractor.extract_all(requests)


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_record_then_cache_then_replay(server: FakeOpenAI, tmp_path: Path, mode: str) -> None:
    requests = [make_request(doc) for doc in DOCS]
    config = make_config(tmp_path, server.base_url, mode=mode)

    first = _run(config, requests)
    assert server.count == 3
    assert [r.record.source for r in first] == ["live"] * 3
    assert all(r.extraction is not None and not r.record.error for r in first)
    assert all(r.record.input_tokens == 120 and r.record.output_tokens == 40 for r in first)

    files = sorted(config.cassette_dir.glob("*.json"))
    assert len(files) == 3
    header_names = {name.lower() for seen in server.requests for name in seen.headers}
    assert "authorization" in header_names and any(n.startswith("x-stainless") for n in header_names)
    for path in files:
        text = path.read_text(encoding="utf-8")
        lowered = text.lower()
        assert FAKE_KEY not in text and "bearer" not in lowered
        assert not [name for name in header_names if f'"{name}"' in lowered], path.name
        assert "x-stainless" not in lowered
        data = json.loads(text)
        assert set(data) == {"key", "provenance", "request", "response", "usage", "latency_s"}
        assert data["provenance"]["kind"] == "recorded"
        assert data["provenance"]["prompt"] == "extract@1#0123456789ab"
        assert data["provenance"]["document"] in DOCS
        assert path.name.endswith(f"--{data['key'][:12]}.json")
        assert data["request"]["body"]["messages"][0]["content"] == SYSTEM  # parsed, readable
    assert {f.name.split("--")[0] for f in files} == {
        "inbox-jay-2026-09-22-vllm",
        "inbox-jay-2026-09-22-sglang",
        "paper_cards-2209-1405-2509-12345",
    }

    saved = {f.name: f.read_text() for f in files}
    second = _run(config, requests)  # a new extractor over the same cache dir
    assert server.count == 3
    assert [r.record.source for r in second] == ["cache"] * 3
    assert [r.record.cost_usd for r in second] == [0.0] * 3
    assert {f.name: f.read_text() for f in files} == saved  # a cache hit rewrites nothing

    # cassettes deleted: recording again is answered by the cache, dates and all
    for f in files:
        f.unlink()
    _run(config, requests)
    assert server.count == 3
    assert {f.name: f.read_text() for f in config.cassette_dir.glob("*.json")} == saved

    replay = config.with_(backend="replay", api_key="", cache_dir=None)
    third = _run(replay, requests)
    assert server.count == 3
    assert [r.record.source for r in third] == ["cassette"] * 3
    assert [r.extraction for r in third] == [r.extraction for r in first]
    recorded = {json.loads(f.read_text())["provenance"]["document"]: json.loads(f.read_text()) for f in files}
    for result in third:
        cassette = recorded[result.request.doc_path]
        assert result.record.latency_s == pytest.approx(cassette["latency_s"], abs=1e-3)
        assert result.record.input_tokens == cassette["usage"]["prompt_tokens"]
        assert result.record.cassette.endswith(f"--{cassette['key'][:12]}.json")


def test_auto_without_key_replays(server: FakeOpenAI, tmp_path: Path) -> None:
    config = make_config(tmp_path, server.base_url)
    _run(config, [make_request()])
    auto = config.with_(backend="auto", api_key="", cache_dir=None)
    (result,) = _run(auto, [make_request()])
    assert result.record.source == "cassette" and result.extraction is not None
    assert server.count == 1


@pytest.mark.parametrize(
    ("asked", "answers"),
    [
        (make_request(), True),
        (make_request(system=SYSTEM.replace("verbatim", "exactly"), version="2"), False),  # a prompt edit
        (make_request("inbox/jay/2026-09-22-other.md"), False),  # a document no cassette was made for
    ],
    ids=["recorded", "prompt-edited", "unseen-document"],
)
def test_cassettes_answer_only_the_requests_they_were_recorded_for(
    server: FakeOpenAI, tmp_path: Path, asked, answers: bool
) -> None:
    """What `auto` without a key decides on: replay when the cassettes answer the evening."""
    from agent.extract.llm import cassettes_answer

    config = make_config(tmp_path, server.base_url)
    assert not cassettes_answer([make_request()], config)  # an empty folder answers nothing
    _run(config, [make_request()])
    assert cassettes_answer([asked], config.with_(backend="auto", api_key="")) is answers
    assert server.count == 1  # deciding sends nothing


def test_replay_miss_names_nearest_cassette_and_what_changed(server: FakeOpenAI, tmp_path: Path) -> None:
    config = make_config(tmp_path, server.base_url)
    _run(config, [make_request(doc) for doc in DOCS])
    (vllm_cassette,) = config.cassette_dir.glob("inbox-jay-2026-09-22-vllm--*.json")
    replay = config.with_(backend="replay", cache_dir=None)

    edited = make_request(system=SYSTEM.replace("verbatim", "exactly"), version="2")
    (result,) = _run(replay, [edited])
    assert result.extraction is None
    assert result.record.source == "cassette" and result.record.attempts == 0
    error = result.record.error
    assert "system prompt changed" in error
    assert vllm_cassette.name in error  # the same document's cassette, not another's
    assert '"verbatim' in error or "verbatim" in error  # shows where the texts part
    assert "extract@1#" in error and "extract@2#" in error
    assert "document changed" not in error

    (result,) = _run(replay.with_(model="other-model"), [make_request()])
    assert "model changed" in result.record.error and vllm_cassette.name in result.record.error

    (result,) = _run(replay.with_(temperature=0.7), [make_request()])
    assert "parameters changed (temperature" in result.record.error

    (result,) = _run(replay, [make_request(document="vLLM 0.12 is out.")])
    assert "document changed" in result.record.error

    (result,) = _run(replay.with_(mode="json_schema"), [make_request()])
    assert "schema changed" in result.record.error
    assert server.count == 3  # replay never called out


def _replay(config, request):
    offline = config.with_(backend="replay", api_key="", cache_dir=None)
    (result,) = _run(offline, [request])
    return result


@pytest.mark.parametrize("mode", ["tools", "json_schema"])
def test_reference_cassette_replays_and_rekeys(tmp_path: Path, mode: str) -> None:
    config = make_config(tmp_path, "http://127.0.0.1:9/v1", mode=mode, backend="replay", api_key="")
    request = make_request()
    expected = FileExtraction.model_validate(sample_extraction("hand-written expected answer"))

    path = write_reference_cassette(request, expected, config, note="gold for 2026-09-22")
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["provenance"]["kind"] == "reference"
    assert data["provenance"]["model"] == "fake-model"
    assert data["provenance"]["note"] == "gold for 2026-09-22"
    assert data["usage"]["prompt_tokens"] > 100 and data["usage"]["completion_tokens"] > 50
    assert "hand-written expected answer" in path.read_text(encoding="utf-8")  # readable, not escaped

    result = _replay(config, request)
    assert result.extraction == expected and result.record.source == "cassette"

    edited = make_request(system=SYSTEM + " Answer in Chinese.", version="2")
    assert "system prompt changed" in _replay(config, edited).record.error

    written = rekey_reference_cassettes(config.cassette_dir, [edited], config)
    assert len(written) == 1 and written[0] != path
    assert not path.exists() and written[0].exists()
    assert json.loads(written[0].read_text())["provenance"]["prompt"] == "extract@2#0123456789ab"
    assert _replay(config, edited).extraction == expected

    # nothing changed since: a second rekey writes nothing
    assert rekey_reference_cassettes(config.cassette_dir, [edited], config) == []


def test_rekey_leaves_recorded_cassettes_alone_and_reports_them(
    server: FakeOpenAI, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = make_config(tmp_path, server.base_url)
    request = make_request()
    _run(config, [request])
    (recorded,) = config.cassette_dir.glob("*.json")
    before = recorded.read_text()

    edited = make_request(system=SYSTEM + " Be brief.", version="2")
    with caplog.at_level(logging.WARNING):
        assert rekey_reference_cassettes(config.cassette_dir, [edited], config) == []
    assert recorded.read_text() == before
    assert recorded.name in caplog.text and "re-record" in caplog.text and "system prompt" in caplog.text


def test_key_is_the_canonical_body_only() -> None:
    a = b'{"model": "m", "messages": [{"role": "user", "content": "\\u9ad8"}], "temperature": 0}'
    b = '{"temperature":0,"messages":[{"content":"高","role":"user"}],"model":"m"}'.encode()
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key(b.replace(b'"m"', b'"n"'))
    assert doc_slug("inbox/jay/2026-09-22-1050 vLLM notes.md") == "inbox-jay-2026-09-22-1050-vLLM-notes"
    assert doc_slug("living/推理.md") == "living-推理"


def test_the_answer_is_stored_readable_and_replayed_byte_for_byte() -> None:
    from agent.extract.llm.cassettes import readable_answer, wire_answer
    from tests.fake_openai import completion, sample_extraction

    for request in ({"tools": [{"function": {"name": "FileExtraction"}}]}, {"response_format": {}}):
        wire = completion(request, sample_extraction())
        stored = readable_answer(wire)
        message = stored["choices"][0]["message"]
        answer = message["tool_calls"][0]["function"]["arguments"] if "tools" in request else message["content"]
        assert isinstance(answer, dict) and answer["claims"][0]["stars"] == 4
        assert wire_answer(stored) == wire
    not_json = {"choices": [{"message": {"content": "{broken"}}]}
    assert wire_answer(readable_answer(not_json)) == not_json


def test_two_sets_answering_one_request_differently_are_refused(tmp_path: Path) -> None:
    """Two sets answering the same request (a reference answer and a real model's, say): loading
    their parent folder would pick one answer per request silently."""
    from agent.core.errors import PredigestError
    from agent.extract.llm.cassettes import CassetteIndex
    from tests.paths import ROOT

    one = next((ROOT / "cassettes" / "world").glob("work-queue-*.json"))
    for name, relevance in (("a", "高"), ("b", "参考")):
        data = json.loads(one.read_text(encoding="utf-8"))
        call = data["response"]["body"]["choices"][0]["message"]["tool_calls"][0]["function"]
        answer = call["arguments"] if isinstance(call["arguments"], dict) else json.loads(call["arguments"])
        call["arguments"] = {**answer, "relevance": relevance}
        (tmp_path / name).mkdir()
        (tmp_path / name / one.name).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(PredigestError, match="answer the same request differently"):
        CassetteIndex.load(tmp_path)


@pytest.mark.parametrize(
    ("given", "part"), [({"part": None}, None), ({}, None), ({"part": 2}, 2)], ids=["null", "absent", "2"]
)
def test_a_cassette_that_does_not_say_its_part_is_read_as_not_saying(
    tmp_path: Path, given: dict[str, object], part: int | None
) -> None:
    """`part` written as null, as an older writer may, reads as left out; a number reads as it is."""
    from agent.extract.llm.cassettes import read_cassette
    from tests.paths import ROOT

    data = json.loads(next((ROOT / "cassettes" / "world").glob("*.json")).read_text(encoding="utf-8"))
    data["provenance"] = {k: v for k, v in data["provenance"].items() if k != "part"} | given
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    assert read_cassette(path).provenance.part == part


@pytest.mark.parametrize(
    ("a", "b", "shared"),
    [
        ("", "", 0),
        ("abc", "", 0),
        ("abc", "abc", 3),
        ("abc", "abcdef", 3),
        ("xbc", "abc", 0),
        ("推理引擎A", "推理引擎B", 4),
        ("a" * 9000 + "x", "a" * 9000 + "y", 9000),
    ],
)
def test_shared_prefix_counts_the_leading_characters_two_prompts_share(a: str, b: str, shared: int) -> None:
    assert shared_prefix(a, b) == shared == shared_prefix(b, a)
