"""Relayed cassettes: a real model's saved answers, replayed over real HTTP through the real client.

The committed set (`cassettes/world-relayed`) must be exactly what `predigest cassettes relay`
makes of its answers, each request must be the one the model was shown, and a request that
differs from the printout must be refused.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent.core.errors import PredigestError
from agent.extract.llm.cassettes import Cassette, CassetteIndex, read_cassette
from agent.extract.llm.reference import extraction_from_completion
from agent.extract.llm.relay import RelayedAnswer, read_printed_prompt, relay_answers
from agent.pipeline import Settings, plan
from eval.relay import relay_folder
from tests.paths import ROOT, WORLD, predigest

RELAYED = ROOT / "cassettes" / "world-relayed"
DATE = "2026-09-22"
Messages = list[dict[str, str]]


@pytest.fixture(scope="module")
def committed() -> list[Cassette]:
    found = (read_cassette(p) for p in RELAYED.glob("*.json"))
    # the folder's composing answer is a reference answer over the relayed extractions, not a relayed one
    return sorted(
        (c for c in found if not c.provenance.document.startswith("compose/")), key=lambda c: c.provenance.document
    )


def _settings(cassettes: Path) -> Settings:
    return Settings(workspace=WORLD, topic="inference", date=dt.date.fromisoformat(DATE), cassette_dir=cassettes)


def _saved_answer(cassette: Cassette) -> str:
    """The answer text as a cassette stores it (readable JSON, re-serialised for the wire)."""
    message = cassette.exchange.response_body["choices"][0]["message"]
    return message["tool_calls"][0]["function"]["arguments"]


def _folder(tmp_path: Path, committed: list[Cassette], printouts: dict[str, str]) -> Path:
    """A folder laid out as answers are handed over: answers/<doc>.json, prompts/<doc>.txt."""
    folder = tmp_path / "answers-folder"
    for c in committed:
        doc = c.provenance.document
        answer = folder / "answers" / f"{doc}.json"
        answer.parent.mkdir(parents=True, exist_ok=True)
        answer.write_text(_saved_answer(c), encoding="utf-8")
        prompt = folder / "prompts" / f"{doc}.txt"
        prompt.parent.mkdir(parents=True, exist_ok=True)
        prompt.write_text(printouts[doc], encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def printouts() -> dict[str, str]:
    """`predigest prompt show` for every source of the evening, as the model was shown it."""
    out = {}
    for r in plan(_settings(RELAYED), for_writing=False).requests:
        shown = predigest("prompt", "show", str(WORLD), "-t", "inference", "-d", DATE, "--doc", r.doc_path)
        assert shown.returncode == 0, shown.stderr
        out[r.doc_path] = shown.stdout
    return out


def test_the_committed_set_covers_the_evening_and_says_where_it_came_from(committed: list[Cassette]) -> None:
    requests = plan(_settings(RELAYED), for_writing=False).requests
    assert sorted(c.provenance.document for c in committed) == sorted(r.doc_path for r in requests)
    for c in committed:
        p = c.provenance
        assert p.kind == "relayed" and p.model
        # one prompt answered (an earlier one than today's, replayed stale as the case says, until new answers come)
        assert p.prompt == committed[0].provenance.prompt and p.date == "2026-11-30" and "unedited" in p.note
        assert c.exchange.request_body["tools"], "relayed in the demo's mode (tools)"
        assert extraction_from_completion(c.exchange.response_body).claims is not None


def test_a_printout_reads_back_as_the_request_messages(printouts: dict[str, str]) -> None:
    for r in plan(_settings(RELAYED), for_writing=False).requests:
        assert read_printed_prompt(printouts[r.doc_path]) == list(r.messages)


def test_relaying_the_answers_again_gives_the_committed_cassettes(
    tmp_path: Path, committed: list[Cassette], printouts: dict[str, str]
) -> None:
    folder = _folder(tmp_path, committed, printouts)
    out = tmp_path / "relayed"
    paths = relay_folder(_settings(out), folder, model=committed[0].provenance.model, obtained="2026-11-30")
    again = {c.provenance.document: c for c in CassetteIndex.load(out).all()}
    assert len(paths) == len(committed) and set(again) == {c.provenance.document for c in committed}
    requests = {r.doc_path: r for r in plan(_settings(out), for_writing=False).requests}
    for c in committed:
        mine = again[c.provenance.document]
        assert mine.exchange.request_body["messages"] == list(requests[c.provenance.document].messages)  # as shown
        assert json.loads(_saved_answer(mine)) == json.loads(_saved_answer(c))  # the answer, unedited
        assert mine.provenance.kind == "relayed"
        # relayed to today's prompt, the same answers are the committed ones when the committed set is not stale
        assert (mine.path.name == c.path.name) is (
            c.provenance.prompt == str(requests[mine.provenance.document].prompt)
        )


def test_a_request_the_model_was_not_shown_is_refused(
    tmp_path: Path, committed: list[Cassette], printouts: dict[str, str]
) -> None:
    doc = committed[0].provenance.document
    edited = {**printouts, doc: printouts[doc].replace("Evening: 2026-09-22", "Evening: 2026-09-23")}
    folder = _folder(tmp_path, committed, edited)
    out = tmp_path / "relayed"
    with pytest.raises(PredigestError, match=f"{doc}: the user message differs at char"):
        relay_folder(_settings(out), folder, model="m", obtained="2026-11-30")
    assert not out.exists()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda shown: [shown[0], {**shown[1], "content": shown[1]["content"].replace("2026-09-22", "2026-09-23")}],
            r'the user message differs at char \d+: ".*2026-09-23.*" -> ".*2026-09-22.*" \(shown -> request\)',
        ),
        (
            lambda shown: [shown[0], {"role": shown[1]["role"]}],
            r'the user message differs at char 0: "" -> ".+" \(shown -> request\)',
        ),
        (lambda shown: shown[:1], r"the model was shown 1 message\(s\), the request has 2"),
    ],
    ids=["content", "no-content", "count"],
)
def test_a_request_that_departs_from_the_printout_says_which_side_is_which(
    tmp_path: Path, committed: list[Cassette], edit: Callable[[Messages], Messages], message: str
) -> None:
    p = plan(_settings(tmp_path), for_writing=False)
    request = p.requests[0]
    (saved,) = (c for c in committed if c.provenance.document == request.doc_path)
    shown = edit(list(request.messages))
    with pytest.raises(PredigestError, match=f"{request.doc_path}: {message}"):
        relay_answers(
            p.requests,
            [RelayedAnswer(request.doc_path, _saved_answer(saved), shown)],
            p.llm,
            model="m",
            date="2026-11-30",
        )


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ('{"relevance": "高"}', "not a FileExtraction"),
        ("not json", "not a FileExtraction"),
    ],
)
def test_an_answer_that_is_not_an_extraction_is_refused(tmp_path: Path, answer: str, message: str) -> None:
    p = plan(_settings(tmp_path), for_writing=False)
    request = p.requests[0]
    with pytest.raises(PredigestError, match=message):
        relay_answers(
            p.requests,
            [RelayedAnswer(request.doc_path, answer)],
            p.llm,
            model="m",
            date="2026-11-30",
        )


def test_an_evening_with_an_unanswered_source_is_refused(
    tmp_path: Path, committed: list[Cassette], printouts: dict[str, str]
) -> None:
    folder = _folder(tmp_path, committed[1:], printouts)
    with pytest.raises(PredigestError, match=f"no saved answer for 1 source.*{committed[0].provenance.document}"):
        relay_folder(_settings(tmp_path / "out"), folder, model="m", obtained="2026-11-30")


@pytest.mark.parametrize(
    ("answers", "obtained", "message"),
    [
        ("no-such-folder", "2026-11-30", "has no answers/ folder"),
        ("eval", "30.11.2026", "is not a date"),
    ],
)
def test_bad_relay_input_is_one_line(tmp_path: Path, answers: str, obtained: str, message: str) -> None:
    r = predigest(
        "cassettes", "relay", str(WORLD), "-t", "inference", "-d", DATE,
        "--answers", str(ROOT / answers), "--cassettes", str(tmp_path / "out"),
        "--model", "m", "--obtained", obtained,
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "out").exists()


def test_answers_to_the_shared_prompt_relay_over_loopback_and_replay_as_the_evening(tmp_path: Path) -> None:
    """With every topic, the saved answers are the shared requests': relayed through the real
    client over loopback HTTP, each becomes the cassette of the request its printout shows, keyed
    as the committed shared set is. An answer with a part for a topic not asked is refused whole."""
    shared = ROOT / "cassettes" / "world-shared"
    found = (read_cassette(p) for p in shared.glob("*.json"))
    committed = sorted(
        (c for c in found if not c.provenance.document.startswith("compose/")), key=lambda c: c.provenance.document
    )
    printouts = {}
    for c in committed:
        doc = c.provenance.document
        args = ("prompt", "show", str(WORLD), "--all-topics", "-d", DATE, "--extraction", "shared", "--doc", doc)
        shown = predigest(*args)
        assert shown.returncode == 0, shown.stderr
        printouts[doc] = shown.stdout
    folder = _folder(tmp_path, committed, printouts)
    out = tmp_path / "relayed"
    args = ("cassettes", "relay", str(WORLD), "--all-topics", "-d", DATE, "--answers", str(folder))
    r = predigest(*args, "--cassettes", str(out), "--model", "a capable LLM", "--obtained", "2026-12-01")
    assert r.returncode == 0, r.stderr
    relayed = CassetteIndex.load(out).all()
    assert sorted(c.exchange.key for c in relayed) == sorted(c.exchange.key for c in committed)
    assert {c.provenance.kind for c in relayed} == {"relayed"}
    assert {c.provenance.prompt.split("@")[0] for c in relayed} == {"extract-shared"}
    first = folder / "answers" / f"{committed[0].provenance.document}.json"
    answer = json.loads(first.read_text(encoding="utf-8"))
    answer["topics"][-1]["topic"] = "security"
    first.write_text(json.dumps(answer, ensure_ascii=False), encoding="utf-8")
    refused = predigest(*args, "--cassettes", str(tmp_path / "none"), "--model", "m", "--obtained", "2026-12-01")
    assert refused.returncode == 2 and "is not a SharedExtraction" in refused.stderr
    assert not (tmp_path / "none").exists()


def _composing_printout() -> str:
    """`prompt show --doc compose/inference` over the relayed extractions: what the model was shown."""
    args = ("prompt", "show", str(WORLD), "-t", "inference", "-d", DATE, "--doc", "compose/inference")
    shown = predigest(*args, "--cassettes", str(RELAYED), "--allow-stale")
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_composing_answer_relays_after_the_extractions_and_composes_the_replay(
    tmp_path: Path, committed: list[Cassette], printouts: dict[str, str]
) -> None:
    """answers/compose/<topic>.json is the model's answer to the topic's composing call, asked from
    the extractions as they replay once relayed: it is stored as relayed, and a replay composes from it."""
    folder = _folder(tmp_path, committed, printouts)
    (reference,) = [read_cassette(p) for p in RELAYED.glob("compose-inference--*.json")]
    composing = folder / "answers" / "compose" / "inference.json"
    composing.parent.mkdir(parents=True)
    composing.write_text(_saved_answer(reference), encoding="utf-8")
    (folder / "prompts" / "compose").mkdir()
    (folder / "prompts" / "compose" / "inference.txt").write_text(_composing_printout(), encoding="utf-8")
    out = tmp_path / "relayed"
    paths = relay_folder(_settings(out), folder, model="m", obtained="2026-11-30", note="test")
    stored = {read_cassette(p).provenance.document: read_cassette(p) for p in paths}
    assert stored["compose/inference"].provenance.kind == "relayed"
    assert stored["compose/inference"].path.name == reference.path.name  # the same request, so the same key
    run = predigest(
        "run", str(WORLD), "-t", "inference", "-d", DATE, "--out", f"{tmp_path / 'o'}/", "--backend", "replay",
        "--cassettes", str(out), "--no-cache",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    footer = (tmp_path / "o" / f"{DATE}-inference-e1prep.md").read_text(encoding="utf-8").splitlines()[-1]
    assert "compose compose@" in footer


def test_a_composing_answer_for_a_topic_not_asked_is_refused(
    tmp_path: Path, committed: list[Cassette], printouts: dict[str, str]
) -> None:
    folder = _folder(tmp_path, committed, printouts)
    stray = folder / "answers" / "compose" / "risk.json"
    stray.parent.mkdir(parents=True)
    stray.write_text("{}", encoding="utf-8")
    (folder / "prompts" / "compose").mkdir()
    (folder / "prompts" / "compose" / "risk.txt").write_text(_composing_printout(), encoding="utf-8")
    with pytest.raises(PredigestError, match="answers no topic of this run"):
        relay_folder(_settings(tmp_path / "relayed"), folder, model="m", obtained="2026-11-30")
