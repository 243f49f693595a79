"""Shared extraction (`--extraction shared`): one request per document of the evening for every
topic selected, its answer split by topic for the rule layer. The demo evening (three topics,
2026-09-22) against the loopback endpoint, through the real CLI entry point."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent.core.labels import ZH
from agent.core.settings import LLMSettings, Settings
from agent.extract.chunking import estimate_tokens
from agent.extract.llm.budget import WORST_ANSWER_TOKENS, Budget
from agent.extract.llm.cassettes import CACHE_MIN_TOKENS, CACHE_STEP_TOKENS, cached_tokens
from agent.extract.prompting import SHARED, response_schema
from agent.pipeline import plan_topics
from benchmarks.endpoint import is_composing, simulated
from schemas.extraction import SharedExtraction
from tests.fake_openai import FAKE_KEY, WORLD_SETS, FakeOpenAI, SeenRequest, shared_responder, world_topic_answers
from tests.paths import ROOT, WORLD, predigest

TOPICS = ("inference", "llm-infra", "risk")
DAY = "2026-09-22"
DOC = "inbox/jay/2026-09-22-1050-jay-engineering-filter.md"


def _name(topic: str) -> str:
    return f"{DAY}-{topic}-e1prep.md"


def _shared_run(tmp: Path, server: FakeOpenAI, *extra: str) -> Any:
    """The demo evening for every topic with shared extraction; the rules assemble each topic's
    briefing (--no-compose) unless `extra` says --compose, so these tests weigh the extraction alone."""
    extra = extra if "--compose" in extra else ("--no-compose", *extra)
    env = {
        **os.environ,
        "OPENAI_API_KEY": FAKE_KEY,
        "OPENAI_BASE_URL": server.base_url,
        "PREDIGEST_CACHE_DIR": str(tmp / "cache"),
    }
    out = f"{tmp / 'shared'}/"
    return predigest(
        "run", str(WORLD), "--all-topics", "-d", DAY, "--out", out, "--backend", "live", "--extraction", "shared",
        *extra, env=env,
    )  # fmt: skip


def _lines(stdout: str) -> dict[str, str]:
    return {ln.split(":", 1)[0]: ln for ln in stdout.splitlines() if ln.startswith(TOPICS)}


def _without_run_specifics(md: str) -> list[str]:
    """A briefing's lines but for where this run wrote its siblings, the footer's stamp and what each
    source held (a shared answer says it once for every topic, each topic's own answer its own way)."""
    lines = [ln for ln in md.splitlines() if "本次运行同晚" not in ln and not ln.startswith("本报告由 predigest")]
    return [" | ".join(c.split("（")[0] for c in ln.split(" | ")) if ln.startswith("| ") else ln for ln in lines]


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The shared run answered with each topic's reference answers: what it printed, what the
    endpoint saw, and the folder it ran in (its outputs under shared/)."""
    tmp = tmp_path_factory.mktemp("answered")
    with FakeOpenAI(default=shared_responder(world_topic_answers())) as server:
        r = _shared_run(tmp, server)
        return {"run": r, "count": server.count, "requests": list(server.requests), "tmp": tmp}


def test_one_request_per_document_for_all_topics_and_the_same_briefings(
    answered: dict[str, Any], tmp_path: Path
) -> None:
    """Answered with each topic's reference answers, the shared run writes what the per-topic
    run writes from the same answers, with 14 requests in place of 40."""
    union = tmp_path / "cassettes"
    for name in WORLD_SETS.values():
        shutil.copytree(ROOT / "cassettes" / name, union / name)
    per = predigest(
        "run", str(WORLD), "--all-topics", "-d", DAY, "--out", f"{tmp_path / 'per'}/",
        "--backend", "replay", "--no-cache", "--cassettes", str(union), "--no-compose",
    )  # fmt: skip
    assert per.returncode == 0, per.stderr
    r, ran = answered["run"], answered["tmp"]
    assert answered["count"] == 14
    assert r.returncode == 0, r.stderr
    assert "topics 3 · calls 14 ·" in r.stdout.splitlines()[-1]
    asked: dict[str, str] = {}
    for topic in TOPICS:
        shared = (ran / "shared" / _name(topic)).read_text(encoding="utf-8")
        alone = (tmp_path / "per" / _name(topic)).read_text(encoding="utf-8")
        assert _without_run_specifics(shared) == _without_run_specifics(alone), topic
        assert f"prompt {SHARED}@3#" in shared.splitlines()[-1], "stamped with the prompt that asked"
        calls = (ran / "shared" / _name(topic)).with_suffix(".calls.jsonl").read_text(encoding="utf-8")
        asked.update({json.loads(c)["doc_path"]: json.loads(c)["topics"] for c in calls.splitlines()})
    # a document is asked for the topics that read it: a topic's own briefing of tonight is not its source
    assert asked.pop("inbox/flyp/2026-09-22-risk-e1prep.md") == "inference, llm-infra"
    assert asked.pop("inbox/spark/2026-09-22-llm-infra-e1prep.md") == "inference, risk"
    assert set(asked.values()) == {", ".join(TOPICS)} and len(asked) == 12


def test_a_shared_evening_composes_each_topic_once(tmp_path: Path) -> None:
    """Shared extraction, then one composing call per topic, each read from that topic's parts."""
    with FakeOpenAI(default=shared_responder(world_topic_answers())) as server:
        r = _shared_run(tmp_path, server, "--compose")
        composing = [s.body for s in server.requests if is_composing(s.body)]
    assert r.returncode == 0, r.stderr
    assert len(composing) == len(TOPICS) and "topics 3 · calls 17 ·" in r.stdout.splitlines()[-1]
    for topic in TOPICS:
        (asked,) = [b for b in composing if f"· topic: {topic}\n" in b["messages"][1]["content"]]
        assert len(asked["messages"]) == 2, "valid the first time: no re-ask"
        written = tmp_path / "shared" / _name(topic)
        assert "compose compose@" in written.read_text(encoding="utf-8").splitlines()[-1], "the footer names it"
        record = json.loads(written.with_suffix(".json").read_text(encoding="utf-8"))
        assert not [f for f in record["findings"] if f["decision"] == "floor"], topic


def _prefix(seen: SeenRequest) -> str:
    """Everything of a request but its last message, as the provider sees it."""
    body = dict(seen.body)
    return json.dumps({**body, "messages": body["messages"][:-1]}, sort_keys=True, ensure_ascii=False)


def test_what_every_request_shares_comes_first_and_is_the_same_bytes(answered: dict[str, Any]) -> None:
    assert answered["run"].returncode == 0
    seen = answered["requests"]
    assert len(seen) == 14 and len({_prefix(s) for s in seen}) == 1, "system message, tools and settings alike"
    system = seen[0].body["messages"][0]["content"]
    assert all(f'### Topic "{t}"' in system for t in TOPICS) and "<document" not in system
    users = [s.body["messages"][-1]["content"] for s in seen]
    assert all(u.rstrip().endswith("</document>") for u in users), "the document last"
    assert len(set(users)) == 14


def test_the_shared_prompts_are_at_most_half_the_per_topic_ones() -> None:
    """Estimated prompt tokens of the evening's requests, with the response schema each one
    carries (a provider counts the tool definition as prompt)."""
    base = {"workspace": WORLD, "topic": TOPICS[0], "date": DAY}
    per = plan_topics(Settings(**base), TOPICS, for_writing=False)
    shared = plan_topics(Settings(**base, llm={"extraction": "shared"}), TOPICS, for_writing=False)

    def tokens(es: Any) -> int:
        def one(r: Any) -> str:
            schema = json.dumps(response_schema(r.prompt.name).model_json_schema(), ensure_ascii=False)
            return "".join(m["content"] for m in r.messages) + schema

        return sum(estimate_tokens(one(r)) for r in es.requests)

    assert (len(per.requests), len(shared.requests)) == (40, 14)
    assert tokens(shared) <= 0.5 * tokens(per)


def test_a_topic_the_answer_leaves_out_is_that_topics_failure_for_that_document(tmp_path: Path) -> None:
    answers = shared_responder(world_topic_answers(), left_out=(DOC, "risk"))
    with FakeOpenAI(default=answers) as server:
        r = _shared_run(tmp_path, server)
        assert server.count == 14, "not re-asked: the answer is valid for the topics it holds"
    assert r.returncode == 3, r.stderr  # risk is partial, the evening's status is the worst
    lines = _lines(r.stdout)
    assert lines["inference"].endswith("exit 0") and lines["llm-infra"].endswith("exit 0")
    assert lines["risk"].endswith("exit 3")
    risk = (tmp_path / "shared" / _name("risk")).read_text(encoding="utf-8")
    unread = risk.split(ZH.no_increment, 1)[1]
    assert DOC in unread and "no part for topic risk" in unread
    for topic in ("inference", "llm-infra"):
        assert "no part for topic" not in (tmp_path / "shared" / _name(topic)).read_text(encoding="utf-8")


def test_an_answer_naming_a_topic_not_asked_is_asked_again(tmp_path: Path) -> None:
    answers = shared_responder(world_topic_answers(), misnamed=(DOC, "inferense"))
    with FakeOpenAI(default=answers) as server:
        r = _shared_run(tmp_path, server)
        assert server.count == 15
        reask = [s.body for s in server.requests if len(s.body["messages"]) > 2]
    assert r.returncode == 0, r.stderr
    assert len(reask) == 1 and "inferense" in json.dumps(reask[0]["messages"][2:], ensure_ascii=False)


def test_cached_prompt_tokens_are_counted_priced_and_shown(tmp_path: Path) -> None:
    toml = (WORLD / "predigest.toml").read_text(encoding="utf-8")
    ws = tmp_path / "world"
    shutil.copytree(WORLD, ws)
    demo_price = '"gpt-4o-mini" = [0.15, 0.60, 0.075]'
    assert demo_price in toml
    (ws / "predigest.toml").write_text(toml.replace(demo_price, '"gpt-4o-mini" = [1.0, 10.0, 0.25]'), encoding="utf-8")
    with FakeOpenAI(default=shared_responder(world_topic_answers(), cached=4000)) as server:
        env = {
            **os.environ,
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": server.base_url,
            "PREDIGEST_LOGS_DB": str(tmp_path / "logs.db"),
        }
        r = predigest(
            "run", str(ws), "--all-topics", "-d", DAY, "--out", f"{tmp_path / 'out'}/", "--backend", "live",
            "--extraction", "shared", "--no-cache", "--no-compose", env=env,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    evening = r.stdout.splitlines()[-1]
    # 14 calls of 6000 prompt tokens (4000 of them cached) and 900 completion tokens
    per_call = (2000 * 1.0 + 4000 * 0.25 + 900 * 10.0) / 1_000_000
    assert "tokens 84000 in / 12600 out · cached 56000 in" in evening
    assert f"cost ${14 * per_call:.4f}" in evening
    logged = predigest("logs", "show", "last", "--doc", DOC, env=env)  # the last topic's run: risk
    assert logged.returncode == 0, logged.stderr
    call = next(ln for ln in logged.stdout.splitlines() if ln.startswith(DOC))
    assert "6000 (4000 cached)+900 tokens" in call and f"${per_call:.4f}" in call
    assert call.endswith("shared by inference, llm-infra, risk")


@pytest.mark.parametrize(
    ("usage", "cached"),
    [
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 80}}, 80),
        ({"prompt_tokens": 100}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": None}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": -5}}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": "lots"}}, 0),
        ({"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 500}}, 100),
    ],
)
def test_cached_tokens_are_read_from_the_usage_or_are_zero(usage: dict[str, Any], cached: int) -> None:
    assert cached_tokens(usage) == cached


@pytest.mark.parametrize(
    ("price", "expected"),
    [
        ((1.0, 10.0, 0.25), (200 * 1.0 + 800 * 0.25 + 50 * 10.0) / 1e6),
        ((1.0, 10.0), (1000 * 1.0 + 50 * 10.0) / 1e6),  # no cached price: a cached token is an input token
    ],
)
def test_a_cached_input_token_costs_the_cached_price(price: tuple[float, ...], expected: float) -> None:
    llm = LLMSettings(model="m", prices={"m": price})
    assert llm.cost_usd(1000, 50, cached_tokens=800) == pytest.approx(expected)


def _reading(topic: str) -> dict[str, Any]:
    return {"topic": topic, "relevance": "参考", "relevance_reason": "r"}


@pytest.mark.parametrize(
    ("parts", "error"),
    [
        (["inference", "risk"], ""),
        (["inference"], ""),  # a topic left out is that topic's failure, not an invalid answer
        (["inference", "nope"], "not among the topics this document is read for"),
        (["inference", "inference"], "several parts"),
    ],
)
def test_a_shared_answer_is_valid_for_the_topics_asked_only(parts: list[str], error: str) -> None:
    data = {"held": "h", "topics": [_reading(t) for t in parts]}
    if not error:
        answer = SharedExtraction.model_validate(data, context={"topics": ["inference", "risk"]})
        assert (answer.for_topic("risk") is None) == ("risk" not in parts)
        return
    with pytest.raises(ValidationError, match=error):
        SharedExtraction.model_validate(data, context={"topics": ["inference", "risk"]})


def test_prompt_show_prints_the_one_shared_request_with_its_schema() -> None:
    r = predigest(
        "prompt", "show", str(WORLD), "--all-topics", "-d", DAY, "--doc", DOC, "--extraction", "shared", "--json"
    )
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["prompt"].startswith(f"{SHARED}@3#") and len(shown["requests"]) == 1
    assert shown["response_schema"]["title"] == "SharedExtraction"
    system, user = (m["content"] for m in shown["requests"][0]["messages"])
    assert "every topic of the evening: inference, llm-infra, risk" in system
    assert "topics: inference, llm-infra, risk\n" in user  # the document is read by all three


def test_the_simulated_endpoint_answers_every_topic_and_serves_the_shared_prefix_from_its_cache(
    tmp_path: Path,
) -> None:
    """benchmarks.endpoint's provider: a part per topic asked, and the prompt prefix it has seen
    before reported as cached, as a provider with prefix caching does."""
    with FakeOpenAI(default=simulated()) as server:
        r = _shared_run(tmp_path, server, "--concurrency", "1")
        prefix = server.stats()["common_prefix_tokens"]
    assert r.returncode == 0, r.stderr
    calls = [
        json.loads(c)
        for c in (tmp_path / "shared" / _name("risk")).with_suffix(".calls.jsonl").read_text("utf-8").splitlines()
    ]
    assert len(calls) == 13 and prefix >= CACHE_MIN_TOKENS
    cached = [c["cached_tokens"] for c in calls]
    assert sum(1 for c in cached if c == 0) <= 1, "only the evening's first request finds nothing cached"
    assert all(c % CACHE_STEP_TOKENS == 0 and c > prefix - CACHE_STEP_TOKENS for c in cached if c)
    assert all(c["cached_tokens"] < c["input_tokens"] for c in calls), "the document itself is never cached"
    assert "· cached " in r.stdout.splitlines()[-1]


@pytest.mark.parametrize("answers", [1, 3])
def test_a_shared_call_reserves_a_worst_answer_per_topic(answers: int) -> None:
    """Under --max-cost a call reserves its worst case before it is sent: a shared answer holds a
    reading per topic, so it may be that many times as long."""
    llm = LLMSettings(model="m", prices={"m": (1.0, 10.0)}, max_cost_usd=1.0)
    reserved = Budget(llm).reserve(1000, answers)
    assert reserved == pytest.approx(llm.cost_usd(1000, WORST_ANSWER_TOKENS * answers))


@pytest.mark.parametrize(
    ("template", "said"),
    [
        ("extract.md", "is a one-topic prompt"),  # its answer has no part per topic
        ("extract-shared.md", ""),
    ],
)
def test_a_prompt_file_for_shared_extraction_names_itself_so(template: str, said: str, tmp_path: Path) -> None:
    variant = tmp_path / "variant.md"
    text = (ROOT / "prompts" / template).read_text(encoding="utf-8")
    variant.write_text(text.replace("You are the extraction stage", "You are the careful extraction stage"), "utf-8")
    r = predigest(
        "prompt", "show", str(WORLD), "--all-topics", "-d", DAY, "--doc", DOC, "--extraction", "shared",
        "--prompt", str(variant), "--json",
    )  # fmt: skip
    if said:
        assert r.returncode == 2 and said in r.stderr and len(r.stderr.strip().splitlines()) == 1
        return
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert shown["prompt"].startswith(f"{SHARED}@3#") and "careful extraction" in json.dumps(shown, ensure_ascii=False)
