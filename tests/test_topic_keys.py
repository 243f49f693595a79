"""A cassette answers only its own request: the same document, part and topics (for a shared
request, the same topic set), whatever the prompt. Re-keying, stale replay, `cassettes check` and
the replay miss's advice all key on it, so no command the tool suggests moves one topic's answer
to another or deletes an answer it did not replace.

The two-topic rows run on `examples/world-1021`, whose cassette folder holds two topics' answers
to each document (inference and agents); every folder written to is a copy.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from agent.extract.llm.cassettes import CassetteIndex, topics_of
from eval.cases import load_case
from eval.runner import Variant, run_case
from tests.paths import ROOT, predigest

OVERLAP, OVERLAP_DATE = "examples/world-1021", "2026-10-21"
DEMO, DEMO_DATE = "examples/world", "2026-09-22"
FOLDER = {"folder", "record"}  # another folder, or a recording: what a request without its own answer can do


def control_edit(tmp_path: Path) -> Path:
    """prompts/extract.md with one full stop made an exclamation mark: a prompt change that no
    answer should notice, under the same file name."""
    text = (ROOT / "prompts" / "extract.md").read_text(encoding="utf-8")
    assert "written in the document." in text
    path = tmp_path / "mine" / "extract.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace("written in the document.", "written in the document!", 1), encoding="utf-8")
    return path


def answers(folder: Path) -> Counter[tuple[str, tuple[str, ...], str]]:
    """Every answer in a folder, by its document and topics: what no command may lose or move."""
    return Counter(
        (c.provenance.document, tuple(sorted(topics_of(c))), _answer(c.exchange.response_body))
        for c in CassetteIndex.load(folder).all()
    )


def _answer(completion: dict) -> str:
    """What the model (or the hand) said, whatever the completion's ids: the tool call's arguments."""
    message = completion["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    return json.dumps(json.loads(calls[0]["function"]["arguments"] if calls else message["content"]), sort_keys=True)


def files_of(folder: Path, topic: str) -> dict[str, bytes]:
    return {c.path.name: c.path.read_bytes() for c in CassetteIndex.load(folder).all() if topics_of(c) == (topic,)}


@pytest.mark.parametrize(
    ("topics", "edited", "moved"),
    [
        pytest.param(["inference"], True, ["inference"], id="edited-prompt-inference"),
        pytest.param(["agents"], True, ["agents"], id="edited-prompt-agents"),
        pytest.param(["inference", "agents"], False, [], id="shared-request-without-shared-answers"),
        pytest.param(["inference"], False, [], id="nothing-changed"),
        pytest.param(["llm-infra"], True, [], id="topic-without-answers-in-the-folder"),
    ],
)
def test_rekey_moves_only_the_answers_of_its_own_topic(
    tmp_path: Path, topics: list[str], edited: bool, moved: list[str]
) -> None:
    folder = tmp_path / "world-1021"
    shutil.copytree(ROOT / "cassettes" / "world-1021", folder)
    for c in CassetteIndex.load(folder).all():  # the evening as first answered: inference and agents only
        if topics_of(c) == ("llm-infra",):
            c.path.unlink()
    before, kept = answers(folder), {t: files_of(folder, t) for t in ("inference", "agents")}
    args = ["cassettes", "rekey", OVERLAP, "-d", OVERLAP_DATE, "--cassettes", str(folder)]
    args += [flag for t in topics for flag in ("-t", t)]
    args += ["--prompt", str(control_edit(tmp_path))] if edited else []
    r = predigest(*args)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"re-keyed {12 * len(moved)} reference cassette(s)" in r.stdout, r.stdout + r.stderr
    assert answers(folder) == before  # every answer kept, each under its own document and topic
    for topic, files in kept.items():
        if topic not in moved:
            assert files_of(folder, topic) == files, topic  # byte for byte
    for topic in moved:  # and the moved answers are the edited prompt's now (the composing answer is another prompt's)
        extracted = [c for c in CassetteIndex.load(folder).all() if not c.provenance.document.startswith("compose/")]
        prompts = {c.provenance.prompt.split("#")[1] for c in extracted if topics_of(c) == (topic,)}
        assert len(prompts) == 1 and prompts != {"a856b8cfedfd"}, prompts


@pytest.mark.parametrize("case", ["2026-10-21-inference", "2026-10-21-agents"])
def test_stale_replay_answers_each_topic_with_its_own_answers(tmp_path: Path, case: str) -> None:
    """Under the control edit, with --allow-stale, every request is answered by its own topic's
    answer under the old prompt: the briefing is the committed prompt's but for the footer's stamp."""
    row = load_case(ROOT / "eval" / "cases" / case).rows()[0]
    committed = run_case(row)
    stale = run_case(row, Variant(prompt_file=control_edit(tmp_path), allow_stale=True))
    assert not stale.errors and len(stale.results) == len(committed.results) == 12
    assert all(r.record.stale for r in stale.results)
    assert [r.extraction for r in stale.results] == [r.extraction for r in committed.results]
    differ = [
        (a, b) for a, b in zip(committed.markdown.splitlines(), stale.markdown.splitlines(), strict=True) if a != b
    ]
    assert len(differ) == 1 and "extract@3#" in differ[0][0], differ


def test_cassettes_check_counts_a_topics_answers_only_for_that_topic(tmp_path: Path) -> None:
    """The demo case's requests, checked against a folder of another topic's answers: all missing,
    none stale (they are llm-infra's, not answers to inference's requests under another prompt)."""
    sets = tmp_path / "sets"
    shutil.copytree(ROOT / "cassettes" / "world-llm-infra", sets / "world")
    r = predigest("cassettes", "check", "--case", "2026-09-22-inference", "--cassettes", str(sets), "--json")
    case = next(c for c in json.loads(r.stdout)["cases"] if c["case"] == "2026-09-22-inference")
    assert (case["answered"], case["stale"], len(case["missing"])) == (0, [], 14), case
    edited = predigest(
        "cassettes", "check", "--case", "2026-10-21-agents", "--prompt", str(control_edit(tmp_path)), "--json"
    )
    agents = next(c for c in json.loads(edited.stdout)["cases"] if c["case"] == "2026-10-21-agents")
    assert agents["answered"] == 0 and len(agents["stale"]) == 12 and agents["missing"] == [], agents


def _advice(stderr: str) -> set[str]:
    """The kinds of advice the run's miss lines give."""
    kinds = {
        "rekey": "predigest cassettes rekey",
        "folder": "pass --cassettes a folder that holds this topic's answers",
        "record": "--backend record",
        "relay": "predigest cassettes relay",
    }
    return {kind for kind, words in kinds.items() if words in stderr}


def _demo(folder: Path, out: Path, *extra: str) -> tuple[int, str]:
    args = ["run", DEMO, "--all-topics", "-d", DEMO_DATE, "--backend", "replay", "--cassettes", str(folder)]
    r = predigest(*args, "--out", str(out), "--force", *extra)
    return r.returncode, r.stderr


def test_following_every_miss_advice_on_the_demo_all_topics_run_loses_no_answer(tmp_path: Path) -> None:
    """The demo's all-topics run over the demo's own folder (inference's answers) misses for the
    other topics; each miss says which topic the folder lacks, never to re-key. Following that
    advice (a folder holding every topic's answers) runs green; after a control edit of the prompt
    each miss advises re-keying its own topic, and following each such command to the letter runs
    green again, every answer still under its own document and topic."""
    only = tmp_path / "world"
    shutil.copytree(ROOT / "cassettes" / "world", only)
    code, said = _demo(only, tmp_path / "out")
    assert code == 2 and _advice(said) == {"folder", "record"}, said
    assert "answers this document only for topic inference, not for topic llm-infra" in said
    every = tmp_path / "every"
    for name in ("world", "world-llm-infra", "world-risk"):
        shutil.copytree(ROOT / "cassettes" / name, every / name)
    code, said = _demo(every, tmp_path / "out")
    assert code == 0, said
    briefings = {p.name: p.read_text(encoding="utf-8") for p in (tmp_path / "out").glob("*.md")}
    before = answers(every)
    prompt = control_edit(tmp_path)
    code, said = _demo(every, tmp_path / "out", "--prompt", str(prompt))
    assert code == 2 and _advice(said) == {"rekey"}, said
    commands = sorted(set(re.findall(r"`(predigest cassettes rekey [^`]+)`", said)))
    assert len(commands) == 3, commands  # one per topic, each naming its own
    for command in commands:
        args = command.split()[1:]
        args = [DEMO if a == "WORKSPACE" else DEMO_DATE if a == "DATE" else a for a in args]
        assert predigest(*args, "--prompt", str(prompt)).returncode == 0
    assert answers(every) == before
    code, said = _demo(every, tmp_path / "out", "--prompt", str(prompt))
    assert code == 0, said
    assert len(briefings) == 3
    for name, text in briefings.items():
        then = (tmp_path / "out" / name).read_text(encoding="utf-8").splitlines()
        differ = [a for a, b in zip(text.splitlines(), then, strict=True) if a != b]
        assert len(differ) == 1 and "extract@3#" in differ[0], (name, differ)


def _edited(body: dict, old: str, new: str, message: int) -> dict:
    body = json.loads(json.dumps(body))
    body["messages"][message]["content"] = body["messages"][message]["content"].replace(old, new)
    return body


ADVICE_ROWS = [  # (cassette kind in the folder, edit of the request, request prompt, what is said, advice kinds)
    ("reference", (".", "!", 0), "extract@9#0", "(same document, part and topic inference", {"rekey"}),
    ("relayed", (".", "!", 0), "extract@9#0", "(same document, part and topic inference", {"relay"}),
    ("recorded", (".", "!", 0), "extract@9#0", "(same document, part and topic inference", {"record"}),
    ("reference", ("inference", "llm-infra", 1), "", "only for topic inference, not for topic llm-infra", FOLDER),
    ("reference", ("Document:", "Document :", 1), "", "its answer is another request's", FOLDER),
    ("none", (".", "!", 0), "extract@9#0", "the folder holds no cassettes", FOLDER),
]


@pytest.mark.parametrize(
    ("kind", "edit", "prompt", "said", "advised"),
    ADVICE_ROWS,
    ids=["reference-other-prompt", "relayed-other-prompt", "recorded-other-prompt", "other-topic", "same-prompt",
         "empty-folder"],
)  # fmt: skip
def test_a_miss_advises_rekey_only_for_its_own_reference_answer_under_another_prompt(
    tmp_path: Path, kind: str, edit: tuple[str, str, int], prompt: str, said: str, advised: set[str]
) -> None:
    folder = tmp_path / "set"
    folder.mkdir()
    source = next((ROOT / "cassettes" / "world").glob("inbox-jay-2026-09-22-1050-*.json"))
    data = json.loads(source.read_text(encoding="utf-8"))
    if kind != "none":
        data["provenance"]["kind"] = kind
        (folder / source.name).write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    body = _edited(data["request"]["body"], *edit)
    text = str(CassetteIndex.load(folder).miss(body, doc=data["provenance"]["document"], prompt=prompt))
    assert said in text and _advice(text) == advised, text
    if "rekey" in advised:
        assert f"-t inference --cassettes {folder}`" in text


def test_rekey_with_stale_extractions_moves_a_relayed_sets_composing_answer(tmp_path: Path) -> None:
    """A relayed set composes from its relayed extractions replayed stale: after a change to the
    composing prompt, `rekey --allow-stale` moves its reference composing answer and no relayed one."""
    folder = tmp_path / "world-relayed"
    shutil.copytree(ROOT / "cassettes" / "world-relayed", folder)
    (composing,) = folder.glob("compose-inference--*.json")
    data = json.loads(composing.read_text(encoding="utf-8"))
    data["request"]["body"]["messages"][0]["content"] += " "  # as an earlier composing prompt asked it
    data["key"] = "0" * 64
    stale = composing.with_name("compose-inference--000000000000.json")
    stale.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    composing.unlink()
    relayed = {p.name: p.read_bytes() for p in folder.glob("*.json") if p != stale}
    args = ("cassettes", "rekey", DEMO, "-t", "inference", "-d", DEMO_DATE, "--cassettes", str(folder))
    without = predigest(*args)
    assert "re-keyed 0 reference cassette(s)" in without.stdout, without.stdout + without.stderr
    r = predigest(*args, "--allow-stale")
    assert "re-keyed 1 reference cassette(s)" in r.stdout, r.stdout + r.stderr
    assert (folder / composing.name).is_file() and not stale.exists()
    assert {p.name: p.read_bytes() for p in folder.glob("*.json") if p.name != composing.name} == relayed
