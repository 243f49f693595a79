"""The prompt workbench as a prompt engineer uses it: edit a prompt, score it against a live model
(here an OpenAI-compatible server on 127.0.0.1, real client, real HTTP), compare with the replayed
baseline run, and read why each item moved.

The loopback "model" answers each document of the demo evening with its reference answer; asked
with the second prompt (tests/prompts/extract-terse.md, recognised by its system message) it
answers three documents differently, as a terser model might: it leaves out the Dynamo claim,
paraphrases the FP8 claim's quotes, and rates HookPoint 3★. Each change must surface as a
flipped item with the stage of the pipeline that lost it.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from agent.runlog import MIGRATIONS, connect
from eval.cases import load_cases
from schemas.runlog import CallEntry
from tests.fake_openai import FAKE_KEY, FakeOpenAI, Reply, completion, world_answers, world_responder
from tests.paths import ROOT, WORLD, predigest

CASE = "2026-09-22-inference"
TERSE = ROOT / "tests" / "prompts" / "extract-terse.md"
DYNAMO = "inbox/jay/2026-09-22-database-backend-cloudnative-inference.md"
FP8 = "inbox/jay/2026-09-22-1735-jay-inference-vector-db-mcp-trending.md"
HOOK = "inbox/jay/2026-09-22-1450-jay-engineering-filter.md"


def terse_answers() -> dict[str, Any]:
    answers = copy.deepcopy(world_answers())
    answers[DYNAMO]["claims"] = [c for c in answers[DYNAMO]["claims"] if not c["title"].startswith("NVIDIA Dynamo")]
    fp8 = next(c for c in answers[FP8]["claims"] if c["title"].startswith("vLLM FP8"))
    fp8["evidence"] = ["FP8 KV cache is production ready on Hopper and Blackwell"]  # paraphrased, not copied
    hook = next(c for c in answers[HOOK]["claims"] if c["title"].startswith("HookPoint"))
    hook["stars"] = 3
    return answers


def variant_responder() -> Any:
    """The reference answers for the committed prompt, the terse ones for the second prompt."""
    plain, terse = world_responder(world_answers()), world_responder(terse_answers())

    def answer(body: Any) -> Reply:
        system = body["messages"][0]["content"]
        return (terse if "Be terse" in system else plain)(body)

    return answer


@pytest.fixture(scope="module")
def workbench(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("workbench")
    # piped with no width (COLUMNS empty; a test worker may set it): the report's whole lines and every column
    env = {**os.environ, "PREDIGEST_LOGS_DB": str(tmp / "logs.db"), "COLUMNS": ""}
    base = predigest("eval", "--case", CASE, env=env)
    with FakeOpenAI(default=variant_responder()) as server:
        live_env = {**env, "OPENAI_API_KEY": FAKE_KEY, "OPENAI_BASE_URL": server.base_url}
        args = ("eval", "--case", CASE, "--backend", "record", "--prompt", str(TERSE))
        args += ("--cassettes", str(tmp / "cassettes"), "--cache-dir", str(tmp / "cache"))
        live = predigest(*args, env=live_env)
        calls = server.count
    listed = predigest("logs", "--json", env=env)
    runs = json.loads(listed.stdout)
    ids = {r["backend"]: r["id"] for r in runs}
    page = tmp / "compare.html"
    compared = predigest("eval", "--compare", ids["replay"], ids["record"], "--json", "--html", str(page), env=env)
    return {
        "tmp": tmp,
        "env": env,
        "base": base,
        "live": live,
        "calls": calls,
        "runs": runs,
        "ids": ids,
        "compared": compared,
        "page": page,
        "server_requests": calls,
    }


def test_eval_records_the_second_prompt_against_the_endpoint(workbench: dict[str, Any]) -> None:
    assert workbench["base"].returncode == 0, workbench["base"].stdout + workbench["base"].stderr
    live = workbench["live"]
    assert live.returncode == 1, live.stdout + live.stderr  # scores fell below the baseline: the run says so
    assert "below" in live.stdout
    assert workbench["calls"] == 14 + 1  # every document of the evening asked once, over HTTP, and the composing call
    recorded = list((workbench["tmp"] / "cassettes" / "world").glob("*.json"))
    assert len(recorded) == 14 + 1
    provenance = [json.loads(p.read_text(encoding="utf-8"))["provenance"] for p in recorded]
    assert {p["kind"] for p in provenance} == {"recorded"}
    assert {p["prompt"].split("#")[0] for p in provenance} == {"extract-terse@1", "compose@2"}
    assert all(FAKE_KEY not in p.read_text(encoding="utf-8") for p in recorded)


def test_logs_list_both_runs(workbench: dict[str, Any]) -> None:
    runs = workbench["runs"]
    assert [r["backend"] for r in runs] == ["record", "replay"]  # newest first
    assert runs[0]["prompt"].startswith("extract-terse@1#") and runs[1]["prompt"].startswith("extract@3#")
    assert runs[0]["command"][:3] == ["eval", "--case", CASE]
    assert not runs[0]["ok"] and runs[1]["ok"]
    text = predigest("logs", env=workbench["env"]).stdout
    assert workbench["ids"]["record"] in text and workbench["ids"]["replay"] in text


def test_compare_names_every_flipped_item_and_the_stage_that_lost_it(workbench: dict[str, Any]) -> None:
    r = workbench["compared"]
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    case = next(c for c in data["cases"] if c["case"] == CASE)
    assert case["metrics"]["increment_recall"]["delta"] == pytest.approx(-0.5)
    flips = {(f["metric"], f["item"]): f for f in case["flips"]}
    incs = {item: f for (metric, item), f in flips.items() if metric == "increment_recall"}
    assert set(incs) == {
        "增量 3：NVIDIA Dynamo 1.0 — 分布式推理编排层",
        "增量 4：vLLM FP8 KV-Cache 验证报告 — H100/H200/Blackwell 生产可用",
        "增量 5：HookPoint — 推理可观测性 3.6% overhead",
    }
    assert all(f["matched_in"] == "A" for f in incs.values())
    dynamo = incs["增量 3：NVIDIA Dynamo 1.0 — 分布式推理编排层"]
    assert dynamo["stage"] == "not extracted" and DYNAMO in dynamo["detail"]
    fp8 = incs["增量 4：vLLM FP8 KV-Cache 验证报告 — H100/H200/Blackwell 生产可用"]
    assert fp8["stage"] == "ungrounded" and "quote not in the document" in fp8["detail"]
    hook = incs["增量 5：HookPoint — 推理可观测性 3.6% overhead"]
    assert hook["stage"] == "demoted by select" and "3★ < 4★" in hook["detail"]
    # the lost increments' doubts go with them
    assert flips[("to_verify_recall", "vLLM FP8 KV-Cache 具体压缩比和 latency 改善")]["stage"] == "not raised"
    # every flipped item carries its stage and reason; a score that did not move lists none
    assert all(f["stage"] and "no recorded reason" not in f["detail"] for c in data["cases"] for f in c["flips"])
    for c in data["cases"]:
        still = {m for m, d in c["metrics"].items() if d["delta"] == 0}
        assert not [f for f in c["flips"] if f["metric"] in still], c["case"]
    # the key facts of an unmatched increment are one line, and they are facts
    facts = [f for f in case["flips"] if f["metric"] == "key_fact_recall" and f["matched_in"] == "A"]
    # what the second run states that the first run's editor left out is a flip the other way, said as such
    gained = [f for f in case["flips"] if f["metric"] == "key_fact_recall" and f["matched_in"] == "B"]
    assert all(f["stage"] == "not stated" and "its matched output increment" in f["detail"] for f in gained)
    assert [f["item"].split(":", 1)[0] for f in facts] == [
        "2 key facts of unmatched 增量 3",
        "6 key facts of unmatched 增量 4",
        "15 key facts of unmatched 增量 5",
    ]
    assert facts[0]["stage"] == "not extracted" and facts[2]["stage"] == "demoted by select"
    counted = [x.split(" · ", 1)[1].removesuffix("（增量未匹配）") for f in facts for x in f["items"]]
    assert len(counted) == 23 and not {"20", "9", "2026", "--SGLang"} & set(counted)
    # the header names what differs: the prompt, and the cassette set the second run was recorded into
    differs = " ".join(data["differs"])
    assert "prompt extract@3#" in differs and "→ extract-terse@1#" in differs
    assert f"under {workbench['tmp'] / 'cassettes'}" in differs and "(each case's own)" in differs
    # what answered differs: hand-written reference answers on one side, the recorded model on the other
    assert any(d.startswith("model reference answers") for d in data["differs"]), data["differs"]
    # the offline row does not depend on the prompt: nothing of it flipped
    offline = next(c for c in data["cases"] if c["case"].endswith("offline"))
    assert offline["flips"] == []
    page = workbench["page"].read_text(encoding="utf-8")
    assert page.count("<tr class='flip ") == sum(len(c["flips"]) for c in data["cases"])
    assert "demoted by select" in page and "<script" not in page


def test_logs_show_doc_prints_the_answer_and_each_claims_fate(workbench: dict[str, Any]) -> None:
    env = workbench["env"]
    r = predigest("logs", "show", workbench["ids"]["record"], "--doc", FP8, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "FP8 KV cache is production ready on Hopper and Blackwell" in r.stdout  # the answer, as the model gave it
    assert "→ ungrounded: quote not in the document" in r.stdout
    assert "source live" not in r.stdout and "· live ·" in r.stdout
    whole = predigest("logs", "show", workbench["ids"]["record"], env=env)
    assert "missed 增量 3：NVIDIA Dynamo 1.0 — 分布式推理编排层 — not extracted" in whole.stdout
    bad = predigest("logs", "show", "nosuchrun", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: no logged run 'nosuchrun'")


def test_the_log_is_sqlite_with_numbered_migrations(workbench: dict[str, Any]) -> None:
    db = sqlite3.connect(workbench["tmp"] / "logs.db")
    applied = [row[0] for row in db.execute("SELECT name FROM _migrations ORDER BY name")]
    assert applied == [name for name, _ in MIGRATIONS]
    hashes = db.execute("SELECT COUNT(DISTINCT request_hash) FROM calls WHERE source = 'live'").fetchone()[0]
    assert hashes == 14
    db.close()


def test_an_old_log_gains_the_new_tables(tmp_path: Path) -> None:
    """A log written before m002 existed opens, gets m002, and keeps its runs."""
    path = tmp_path / "logs.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
    for statement in filter(str.strip, MIGRATIONS[0][1].split(";")):
        db.execute(statement)
    db.execute("INSERT INTO _migrations VALUES ('m001_runs', 'then')")
    db.commit()
    db.close()
    db = connect(path)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "calls" in tables
    assert [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY name")] == ["m001_runs", "m002_calls"]


def test_a_logged_call_carries_every_field_its_record_shares_with_the_log() -> None:
    """call_entry names each field it copies, so a field added to both CallRecord and CallEntry must be added there."""
    from dataclasses import fields

    from agent.extract import CallRecord, ExtractionRequest, ExtractionResult, PromptStamp
    from agent.runlog import call_entry

    shared = {f.name for f in fields(CallRecord)} & set(CallEntry.model_fields)
    values: dict[str, Any] = {name: f"{name}-value" for name in shared if name != "source"}
    values.update(attempts=2, input_tokens=3, output_tokens=4, cached_tokens=1, cost_usd=0.5, latency_s=0.25)
    record = CallRecord(doc_path="inbox/x.md", chunk=1, source="cassette", **values)
    request = ExtractionRequest("inbox/x.md", (), PromptStamp("extract", "1", "abc"), chunk=1, chunks=2)
    entry = call_entry(ExtractionResult(request, None, record))
    assert {name: getattr(entry, name) for name in shared} == {name: getattr(record, name) for name in shared}
    assert (entry.doc, entry.part, entry.parts) == ("inbox/x.md", 1, 2)


def test_record_without_a_key_is_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PREDIGEST_LOGS_DB": str(tmp_path / "logs.db")}
    r = predigest("eval", "--case", CASE, "--backend", "record", env=env)
    assert r.returncode == 2
    assert r.stderr.startswith("error: eval --backend record needs an API key")
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_loopback_answer_reaches_the_row_through_the_settings_path(tmp_path: Path) -> None:
    """--backend live with --model: the model name goes into every request, no cassette is written."""
    env = {**os.environ, "PREDIGEST_LOGS_DB": "off"}
    with FakeOpenAI(default=world_responder(world_answers())) as server:
        env.update(OPENAI_API_KEY=FAKE_KEY, OPENAI_BASE_URL=server.base_url)
        r = predigest("eval", "--case", CASE, "--backend", "live", "--model", "fake-7b", "--no-cache", env=env)
        models = {req.body["model"] for req in server.requests}
    assert models == {"fake-7b"}
    assert "fake-7b" in r.stdout, r.stdout + r.stderr
    _ = completion  # the responder builds completions with it


@pytest.fixture(scope="module")
def stale(workbench: dict[str, Any]) -> dict[str, Any]:
    """The terse recordings replayed under the committed prompt with --allow-stale: its JSON, its
    page, and the log's account of it, read as soon as it is logged. The terse prompt has no
    shared form: the shared row replays the committed shared answers, copied in beside them."""
    env, tmp = workbench["env"], workbench["tmp"]
    answers = tmp / "stale-cassettes"
    shutil.copytree(tmp / "cassettes", answers)
    shutil.copytree(ROOT / "cassettes" / "world-shared", answers / "world-shared")
    page = tmp / "report.html"
    args = ("eval", "--case", CASE, "--cassettes", str(answers), "--allow-stale", "--json", "--html", str(page))
    r = predigest(*args, env=env)
    return {"r": r, "page": page, "rows": tmp / "report-rows", "shown": predigest("logs", "show", "last", env=env)}


def test_stale_answers_replay_under_the_new_prompt_and_say_so(workbench: dict[str, Any], stale: dict[str, Any]) -> None:
    """The terse recordings, replayed under the committed prompt: a miss without --allow-stale;
    with it, the answers a model gave to the older prompt, and every report says whose they were."""
    env, recorded = workbench["env"], str(workbench["tmp"] / "cassettes")
    strict = predigest("eval", "--case", CASE, "--cassettes", recorded, env=env)
    assert strict.returncode == 1 and "no cassette for" in strict.stdout + strict.stderr
    data = json.loads(stale["r"].stdout)
    row = next(c for c in data["cases"] if c["case"] == CASE)
    assert row["stamp"].endswith("stale (extract-terse@1)"), row["stamp"]
    assert row["errors"] == [] and row["metrics"]["increment_recall"]["score"] == pytest.approx(0.5)
    assert "stale answers of extract-terse@1#" in stale["shown"].stdout


def test_cassettes_check_lists_stale_missing_and_unused(workbench: dict[str, Any], tmp_path: Path) -> None:
    committed = predigest("cassettes", "check", "--case", CASE)
    assert committed.returncode == 0, committed.stdout + committed.stderr
    assert "14 answered · 0 stale · 0 missing" in committed.stdout
    recorded = workbench["tmp"] / "cassettes"
    r = predigest("cassettes", "check", "--case", CASE, "--cassettes", str(recorded), "--json")
    assert r.returncode == 1
    case = json.loads(r.stdout)["cases"][0]
    assert case["answered"] == 0 and len(case["stale"]) == 14 and case["missing"] == []
    assert {s["prompt"].split("#")[0] for s in case["stale"]} == {"extract-terse@1"}
    # the same recordings asked with the prompt they were made for: all answered; a stray file is unused
    stray = recorded / "world" / "stray--000000000000.json"
    data = json.loads(next((recorded / "world").glob("*.json")).read_text(encoding="utf-8"))
    data["request"]["body"]["temperature"] = 0.7  # a request no case sends
    stray.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    try:
        r = predigest("cassettes", "check", "--case", CASE, "--cassettes", str(recorded), "--prompt", str(TERSE))
    finally:
        stray.unlink()
    assert "14 answered · 0 stale · 0 missing" in r.stdout, r.stdout + r.stderr
    assert f"unused world/{stray.name}" in r.stdout and r.returncode == 1


def test_update_baseline_lists_drops_and_refuses_without_accept_drops(
    workbench: dict[str, Any], tmp_path: Path
) -> None:
    env, recorded = workbench["env"], str(tmp_path / "cassettes")
    shutil.copytree(workbench["tmp"] / "cassettes", recorded)
    # the terse prompt has no shared form: the shared row replays the committed shared answers
    shutil.copytree(ROOT / "cassettes" / "world-shared", Path(recorded) / "world-shared")
    baseline = tmp_path / "baseline.json"
    baseline.write_text((ROOT / "eval" / "baseline.json").read_text(encoding="utf-8"), encoding="utf-8")
    before = baseline.read_text(encoding="utf-8")
    args = ("eval", "--case", CASE, "--cassettes", recorded, "--allow-stale", "--baseline", str(baseline))
    refused = predigest(*args, "--update-baseline", env=env)
    assert refused.returncode == 2
    errors = [ln for ln in refused.stderr.splitlines() if ln.startswith("error:")]  # the rest is progress
    assert len(errors) == 1 and errors[0] == refused.stderr.strip().splitlines()[-1]
    line = errors[0]
    assert line.startswith("error: --update-baseline would lower")
    assert f"{CASE} increment_recall 1.000 → 0.500" in line and "--accept-drops" in line
    assert baseline.read_text(encoding="utf-8") == before
    accepted = predigest(*args, "--update-baseline", "--accept-drops", env=env)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    written = json.loads(baseline.read_text(encoding="utf-8"))
    assert written["cases"][CASE]["increment_recall"]["score"] == 0.5
    stamp = written["stamps"][CASE]
    assert (
        stamp["prompt"].startswith("extract@3#") and stamp["model"] == "gpt-4o-mini" and stamp["cassettes"] == "world"
    )
    # the committed baseline carries its stamps too, one per row
    committed = json.loads((ROOT / "eval" / "baseline.json").read_text(encoding="utf-8"))
    assert set(committed["stamps"]) == set(committed["cases"])


def test_the_eval_report_explains_in_a_real_browser(workbench: dict[str, Any], stale: dict[str, Any]) -> None:
    """The report of the terse answers (replayed stale under the committed prompt), each of its
    pages opened top-level in headless Chromium through a proxy that refuses everything; each
    page's DOM is the one the browser built. It must hold every part the report promises, and
    load nothing."""
    import re

    from tests.test_page_browser import BROWSER_SERVICES, _chromium, browse_pages

    chromium = _chromium()
    tmp, page, r = workbench["tmp"], stale["page"], stale["r"]
    assert page.is_file(), r.stdout + r.stderr
    rows = sorted(stale["rows"].glob("*.html"))
    # the page and each row's own page, each opened top-level in one browser: the DOM each one built
    opened = [page, *rows]
    built, log, sent = browse_pages(chromium, opened, tmp / "profile", "document.documentElement.outerHTML")
    assert [x for x in sent if x and not BROWSER_SERVICES.match(x)] == []
    assert not [ln for ln in log.splitlines() if "CONSOLE" in ln or "Content Security Policy" in ln]
    doms = dict(zip(opened, built, strict=True))
    # each DOM is its own page's, built from it: the title the file carries
    titles = {p: re.search(r"<title>.*?</title>", p.read_text(encoding="utf-8"), re.S) for p in opened}
    assert all(t is not None and t.group() in doms[p] for p, t in titles.items()), log[-2000:]
    dom, row_doms = doms[page], [doms[row] for row in rows]
    # the header of each row: prompt and model, and the stale mark; the failing rows first
    stamps = re.findall(r'<p class="stamp">asked with: (.*?)</p>', dom, re.S)
    assert len(stamps) == 4 and "extract@3#" in stamps[0] and "gpt-4o-mini" in stamps[0], stamps
    assert "stale (extract-terse@1)" in stamps[0] and stamps[3].startswith("extract-shared@3#"), stamps
    assert "world-relayed · stale (extract-terse@1)" in stamps[1] and stamps[2].startswith("offline"), stamps
    assert "world-shared" in stamps[3]
    # each missed gold increment with the stage that lost it, on the first page and on the row's
    for text in (dom, row_doms[rows.index(stale["rows"] / "row-2026-09-22-inference.html")]):
        reasons = re.findall(
            r'<li class="missed-reason" id="[^"]+"><b>(.*?)</b> <span class="tag stage">(.*?)</span>', text
        )
        stages = {item: stage for item, stage in reasons if item.startswith("增量")}
        assert stages == {
            "增量 3：NVIDIA Dynamo 1.0 — 分布式推理编排层": "not extracted",
            "增量 4：vLLM FP8 KV-Cache 验证报告 — H100/H200/Blackwell 生产可用": "ungrounded",
            "增量 5：HookPoint — 推理可观测性 3.6% overhead": "demoted by select",
        }
    full = "".join(row_doms)
    # a fact-level diff inside matched pairs, and 三 / 四 / 五 side by side for every row
    assert full.count('class="meta facts-diff only-gold"') + full.count('class="meta facts-diff only-out"') >= 1
    assert [b for b in re.findall(r'data-block="(\w+)"', full)] == ["verify", "arxiv", "five"] * 4
    # per document: what the model returned, and each claim's fate (14 documents in each of the 4 rows)
    assert len(re.findall(r'<details class="doc-answer" id="row-[^"]+-doc-\d+">', full)) == 14 * 4
    fates = re.findall(
        r'<tr class="claim"><td data-label="claim">(.*?)</td>.*?<span class="tag stage">(.*?)</span>', full, re.S
    )
    assert ("vLLM FP8 KV-Cache 验证报告 — H100/H200/Blackwell 生产可用", "ungrounded") in fates
    assert ("HookPoint — 推理可观测性 3.6% overhead", "demoted by select") in fates


def test_run_is_logged_too(tmp_path: Path) -> None:
    env = {**os.environ, "PREDIGEST_LOGS_DB": str(tmp_path / "logs.db")}
    out = str(tmp_path / "b.md")
    r = predigest(
        "run", "examples/world", "-t", "inference", "-d", "2026-09-22", "--out", out, "--backend", "replay", env=env
    )
    assert r.returncode == 0, r.stderr
    runs = json.loads(predigest("logs", "--json", env=env).stdout)
    assert [(x["kind"], x["backend"]) for x in runs] == [("run", "replay")]
    shown = predigest("logs", "show", runs[0]["id"][:15], "--doc", "work-queue/2026-09-22-2200.md", env=env)
    assert shown.returncode == 0 and "work-queue/2026-09-22-2200.md part 1/1 · cassette · request " in shown.stdout


def test_prompt_twice_runs_both_and_compares(workbench: dict[str, Any]) -> None:
    """The committed prompt (stale answers of the terse one) against the terse prompt (its own
    recordings): the same answers either way, so every score is equal and nothing flips."""
    env, recorded = workbench["env"], str(workbench["tmp"] / "cassettes")
    r = predigest(
        "eval", "--case", CASE, "--cassettes", recorded, "--allow-stale",
        "--prompt", str(ROOT / "prompts" / "extract.md"), "--prompt", str(TERSE), "--json", env=env,
    )  # fmt: skip
    data = json.loads(r.stdout)
    row = next(c for c in data["cases"] if c["case"] == CASE)
    assert row["a"].endswith("stale (extract-terse@1)") and row["b"].startswith("extract-terse@1#")
    assert row["flips"] == [] and all(m["delta"] == 0 for m in row["metrics"].values())
    assert [x["id"] for x in json.loads(predigest("logs", "--json", "-n", "2", env=env).stdout)] == [
        data["b"],
        data["a"],
    ]


def test_last_means_the_last_eval_where_an_eval_is_expected(tmp_path: Path) -> None:
    """eval, run, eval: `--compare last~1 last` compares the two evals, whatever ran between them,
    and `logs --kind` lists one kind."""
    env = {**os.environ, "PREDIGEST_LOGS_DB": str(tmp_path / "logs.db")}
    small = "2026-10-15-retrieval"  # any case will do: what is asked is which logged runs `last` names
    first = predigest("eval", "--case", small, env=env)
    run = ("run", "examples/world", "-t", "inference", "-d", "2026-09-22", "--out", str(tmp_path / "b.md"))
    assert predigest(*run, "--backend", "replay", env=env).returncode == 0
    second = predigest("eval", "--case", small, env=env)
    assert first.returncode == second.returncode == 0, first.stdout + second.stdout
    evals = json.loads(predigest("logs", "--kind", "eval", "--json", env=env).stdout)
    runs = json.loads(predigest("logs", "--kind", "run", "--json", env=env).stdout)
    assert [r["kind"] for r in evals] == ["eval", "eval"] and [r["kind"] for r in runs] == ["run"]
    assert predigest(*run, "--backend", "replay", "--force", env=env).returncode == 0  # the newest is a run
    compared = predigest("eval", "--compare", "last~1", "last", "--json", env=env)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    data = json.loads(compared.stdout)
    assert (data["a"], data["b"]) == (evals[1]["id"], evals[0]["id"])
    shown = predigest("logs", "show", "last", env=env)  # where any run will do, `last` is the last of any kind
    assert shown.stdout.startswith("run ") and " · run · " in shown.stdout.splitlines()[0]
    too_far = predigest("eval", "--compare", "last~2", "last", env=env)
    assert too_far.returncode == 2 and too_far.stderr.startswith("error: no logged eval run 'last~2'")
    bad = predigest("logs", "--kind", "evals", env=env)
    assert bad.returncode == 2 and bad.stderr.startswith("error: --kind 'evals' is not a kind of run")


def test_cassettes_check_checks_every_set_of_every_case() -> None:
    r = predigest("cassettes", "check", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    checked = {c["case"]: Path(c["cassettes"]).name for c in json.loads(r.stdout)["cases"]}
    assert checked[CASE] == "world" and checked[f"{CASE}@world-relayed"] == "world-relayed"
    # a span's requests exist only as it replays (each evening asks what the one before wrote): `eval` checks it
    sets = sum(len(case.rows()) for case in load_cases(ROOT / "eval" / "cases") if not case.is_span)
    assert len(checked) == sets >= 7


def test_record_never_writes_over_relayed_answers(tmp_path: Path) -> None:
    """The demo case's relayed set, recorded with `--backend record`: the relayed files stay as
    they were, the recording goes beside them, and the overview names the set it went to."""
    relayed = tmp_path / "sets" / "world-relayed"
    shutil.copytree(ROOT / "cassettes" / "world-relayed", relayed)
    before = {p.name: p.read_bytes() for p in relayed.glob("*.json")}
    folder = tmp_path / "cases" / CASE
    folder.mkdir(parents=True)
    shutil.copy(ROOT / "eval" / "cases" / CASE / "gold.md", folder / "gold.md")
    (folder / "case.toml").write_text(
        f'workspace = "{WORLD}"\ntopic = "inference"\ndate = 2026-09-22\ncassettes = ["{relayed}"]\n',
        encoding="utf-8",
    )
    env = {**os.environ, "PREDIGEST_LOGS_DB": "off", "COLUMNS": ""}  # piped: whole rows, every column
    with FakeOpenAI(default=world_responder(world_answers())) as server:
        env.update(OPENAI_API_KEY=FAKE_KEY, OPENAI_BASE_URL=server.base_url)
        args = ("eval", "--cases", str(tmp_path / "cases"), "--baseline", str(tmp_path / "baseline.json"))
        r = predigest(*args, "--backend", "record", "--update-baseline", "--no-cache", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p.name: p.read_bytes() for p in relayed.glob("*.json")} == before
    beside = relayed.parent / "recorded" / "world-relayed"
    kinds = {json.loads(p.read_text(encoding="utf-8"))["provenance"]["kind"] for p in beside.glob("*.json")}
    assert len(list(beside.glob("*.json"))) == 14 + 1 and kinds == {"recorded"}  # and the composing answer
    row = next(ln for ln in r.stdout.splitlines() if ln.startswith("ok ") and f" {CASE} " in ln and "offline" not in ln)
    assert "record gpt-4o-mini → recorded/world-relayed" in row, r.stdout
    assert f"recorded beside it into {beside} (replay it with --cassettes {beside.parent})" in r.stdout
    # and it replays from there, as recorded answers
    piped = {**os.environ, "PREDIGEST_LOGS_DB": "off", "COLUMNS": ""}
    replayed = predigest(*args, "--cassettes", str(beside.parent), env=piped)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert any(ln.startswith(f"ok      {CASE}  recorded answers") for ln in replayed.stdout.splitlines()), (
        replayed.stdout
    )


def test_a_second_prompt_without_answers_says_what_it_needs_and_is_not_run(tmp_path: Path) -> None:
    """`--prompt A --prompt B` with no key: B's requests have no cassettes. The first line says
    so, names each prompt by its file and stamp and the ways out; A runs, nothing of B is scored,
    and the last line says what the exit status says."""
    env = {**os.environ, "PREDIGEST_LOGS_DB": str(tmp_path / "logs.db"), "COLUMNS": ""}
    committed = ROOT / "prompts" / "extract.md"
    r = predigest("eval", "--case", CASE, "--prompt", str(committed), "--prompt", str(TERSE), env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    first = r.stdout.splitlines()[0]
    assert first.startswith(f"prompt B (tests/prompts/{TERSE.name}, extract-terse@1#"), first
    assert "its 2 rows not run, nothing scored for it: the cassettes hold no answer to 28 of its requests" in first
    assert "OPENAI_API_KEY" in first and "--backend record" in first and "`predigest prompt show`" in first
    assert "(28 only under another prompt); " in first and first.endswith(
        "--allow-stale scores those answers instead, marked stale"
    )
    assert r.stdout.count("prompt B") == 2  # the first line and the last: no row of B is reported
    assert r.stdout.splitlines()[-1] == "FAILED · prompt A ok 3 rows · prompt B not run (no answers to its requests)"
    assert "no cassette for" not in r.stdout + r.stderr
    assert [x["prompt"].split("#")[0] for x in json.loads(predigest("logs", "--json", env=env).stdout)] == ["extract@3"]


def test_a_second_prompt_with_stale_answers_only_is_told_about_allow_stale(workbench: dict[str, Any]) -> None:
    """The terse recordings under `--cassettes`: the committed prompt has only stale answers there."""
    env, recorded = workbench["env"], str(workbench["tmp"] / "cassettes")
    committed = ROOT / "prompts" / "extract.md"
    r = predigest(
        "eval", "--case", CASE, "--cassettes", recorded, "--prompt", str(TERSE), "--prompt", str(committed), env=env
    )
    first = r.stdout.splitlines()[0]
    assert first.startswith("prompt B (prompts/extract.md, extract@3#") and "only under another prompt" in first
    assert "--allow-stale scores those answers instead, marked stale" in first and r.returncode == 1
    assert r.stdout.splitlines()[-1].startswith(
        "FAILED · prompt A FAILED 2 of 3 rows: "
    )  # the terse answers score lower


def test_cassettes_check_says_a_composing_answer_written_for_another_request(tmp_path: Path) -> None:
    """A composing answer no request of the row matches leaves the row on the floor: stale, said."""
    folder = tmp_path / "world"
    shutil.copytree(ROOT / "cassettes" / "world", folder)
    (composing,) = folder.glob("compose-inference--*.json")
    data = json.loads(composing.read_text(encoding="utf-8"))
    data["request"]["body"]["messages"][1]["content"] += " "  # the request as an older desk asked it
    data["key"] = "0" * 64
    composing.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    r = predigest("cassettes", "check", "--case", CASE, "--cassettes", str(tmp_path), "--json")
    assert r.returncode == 1, r.stdout + r.stderr
    (case,) = [c for c in json.loads(r.stdout)["cases"] if c["case"] == CASE]
    assert [s["request"] for s in case["stale"]] == ["compose/inference"] and case["missing"] == []
