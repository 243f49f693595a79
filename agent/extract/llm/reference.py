"""Reference cassettes: an extraction written by hand as the expected answer, replayable.

The real client is driven through a transport that answers with the extraction, so the request
body is byte for byte what the extractor sends and a replay parses it as it parses a recorded one.
Its provenance says `reference`: nobody should take it for a model's answer. After a prompt edit,
`rekey_reference_cassettes` re-derives the reference cassettes whose request changed, each anchor and
open item the answer cites by id ('A7', 'Q2') cited under the id its subject is listed under now.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import instructor
from pydantic import ValidationError

from agent.core.errors import PredigestError
from agent.extract import Answer, ExtractionRequest
from agent.extract.chunking import estimate_tokens
from agent.extract.llm.calllog import call_scope
from agent.extract.llm.cassettes import (
    Cassette,
    CassetteIndex,
    Exchange,
    body_key,
    body_topics,
    canonical_json,
    completion,
    describe_differences,
    prefix_cached_tokens,
    prompt_text,
    today,
)
from agent.extract.llm.causes import find_cause
from agent.extract.llm.client import build_client, create_extraction
from agent.extract.llm.config import LLMConfig
from agent.extract.llm.transport import RecordTransport, exchange_response
from agent.extract.prompting import SHARED, Listing, listed_in
from agent.plan.anchors import ANCHOR_ID, same_subject
from schemas.extraction import FileExtraction, SharedExtraction, cited_id

log = logging.getLogger("predigest")  # the CLI shows its warnings as `warning:` lines


def reference_completion(
    body: dict[str, Any], extraction: Answer, model: str, cached: int = 0, date: str = ""
) -> dict[str, Any]:
    """The chat completion a model would have returned with `extraction` as its answer, created on
    `date` (today if not given); its usage is estimated, with `cached` of the prompt tokens said
    to come from the provider's prompt cache."""
    arguments = extraction.model_dump_json()
    prompt_tokens = estimate_tokens(canonical_json(body))
    completion_tokens = estimate_tokens(arguments)
    details = {"prompt_tokens_details": {"cached_tokens": min(cached, prompt_tokens)}} if cached else {}
    created = int(dt.datetime.combine(dt.date.fromisoformat(date or today()), dt.time(), tzinfo=dt.UTC).timestamp())
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        **details,
    }
    return completion(body, arguments, model, f"ref-{body_key(body)[:12]}", created, usage)


def extraction_from_completion(body: Any) -> FileExtraction:
    """The extraction a stored completion carries (tool-call arguments or message content)."""
    return FileExtraction.model_validate_json(_answer_text(body))


def answer_from_completion(body: Any, schema: type[Answer]) -> Answer:
    """The answer a stored completion carries, as `schema` (the request's `answer_schema()`) reads it.
    A composition is read without the evening's checker: it is checked again when it is written."""
    return schema.model_validate_json(_answer_text(body))


def _answer_text(body: Any) -> str:
    message = body["choices"][0]["message"]
    calls = message.get("tool_calls") or []
    return calls[0]["function"]["arguments"] if calls else message.get("content") or ""


def _answering(extraction: Answer, model: str, cached: int, date: str) -> httpx2.BaseTransport:
    """A transport that answers every request with `extraction`; never touches the network."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        reply = reference_completion(body, extraction, model, cached, date)
        return exchange_response(
            Exchange(
                key=body_key(body),
                method=request.method,
                path=request.url.path,
                request_body=body,
                status=200,
                response_body=reply,
                usage=reply["usage"],
                latency_s=0.0,
                model=model,
                date=date,
            )
        )

    return httpx2.MockTransport(answer)


class _Captured(Exception):
    def __init__(self, body: Any) -> None:
        super().__init__("request captured")
        self.body = body


def _stop_with_body(request: httpx2.Request) -> httpx2.Response:
    """Stops at the first request, keeping its body: what the extractor would send now."""
    raise _Captured(json.loads(request.content))


def _offline(config: LLMConfig) -> LLMConfig:
    # the transports here never reach a network, so the client needs no real key
    return config.with_(backend="replay", api_key="")


def current_request_body(request: ExtractionRequest, config: LLMConfig) -> Any:
    """The body the extractor would send for `request` under `config`, without sending it."""
    return next(current_request_bodies([request], config))


def current_request_bodies(requests: Iterable[ExtractionRequest], config: LLMConfig) -> Iterator[Any]:
    """The body the extractor would send for each of `requests`, in order, without sending any:
    the real client is driven up to the transport, which keeps the body and stops."""
    client = build_client(_offline(config), httpx2.MockTransport(_stop_with_body))
    for request in requests:
        yield _capture(client, request, config)


def _capture(client: instructor.Instructor, request: ExtractionRequest, config: LLMConfig) -> Any:
    with call_scope(request.doc_path, str(request.prompt), request.chunk, topics=request.read_for):
        try:
            create_extraction(client, request, config, max_retries=0)
        except Exception as exc:
            captured = find_cause(exc, _Captured)
            if captured is None:
                raise
            return captured.body
    raise PredigestError("the client sent no request", hint="this is a bug in predigest")


def write_reference_cassette(
    request: ExtractionRequest,
    extraction: Answer,
    config: LLMConfig,
    note: str = "",
    earlier: Sequence[ExtractionRequest] = (),
    date: str = "",
) -> Path:
    """Write the cassette that makes `request` replay as `extraction`; returns its path. Its usage
    says as cached what a provider's prefix cache would serve after the evening's `earlier`
    requests had been sent (for a shared request: the system prompt every one of them shares).
    `date`: when the answer was written, if not today (a re-keyed answer keeps its own)."""
    cached = 0
    if earlier:
        bodies = [prompt_text(b) for b in current_request_bodies([*earlier, request], config)]
        cached = prefix_cached_tokens(bodies[-1], bodies[:-1])
    index = CassetteIndex(config.cassette_dir)  # an empty index: always write
    answers = _answering(extraction, config.model, cached, date or today())
    transport = RecordTransport(answers, index, kind="reference", note=note)
    client = build_client(_offline(config), transport)
    with call_scope(request.doc_path, str(request.prompt), request.chunk, topics=request.read_for) as call:
        answer = create_extraction(client, request, config, max_retries=0)
    if answer.model_dump() != extraction.model_dump():
        raise PredigestError(
            f"the reference answer for {request.doc_path} does not survive the client's parsing",
            hint="check the extraction against schemas/extraction.py",
        )
    cassettes = index.all()
    if len(cassettes) != 1 or not call.cassettes:
        raise PredigestError("no reference cassette was written", hint="this is a bug in predigest")
    return cassettes[0].path


def rekey_reference_cassettes(
    cassette_dir: Path, requests: Sequence[ExtractionRequest], config: LLMConfig
) -> list[Path]:
    """Re-write the reference cassette of each request whose request changed (after a prompt,
    schema or model edit), keeping its answer and deleting the stale file. Returns the files written.

    Only a request's own cassette moves: the same document, part and topics. Another topic's
    answer to the same document is never this topic's, and a request already answered as asked now
    keeps its answer. Recorded cassettes are never touched: a model's answer to another prompt is not
    an answer to this one. Each stale one is logged as a warning naming what changed. An id the answer
    cites is carried to its subject's id now (`carried_ids`); an answer citing a subject no longer
    listed is left as it was, with a warning naming it and the id.
    """
    config = config.with_(cassette_dir=cassette_dir)
    index = CassetteIndex.load(cassette_dir)
    written: list[Path] = []
    unanswered = 0
    for request in requests:
        current = current_request_body(request, config)
        if index.get(body_key(current)) is not None:
            continue  # answered as asked now: no older answer is moved over it
        topics = request.read_for or body_topics(current)
        same_doc = _same_shape([c for c in index.all() if c.provenance.document == request.doc_path], request)
        own = {c.path for c in index.own(request.doc_path, request.chunk, topics)}
        mine = [c for c in same_doc if c.path in own and _same_evening(c, current)]
        unanswered += not mine
        earlier = () if request is requests[0] else (requests[0],)  # the usage estimate `add-reference` writes
        written += _rekey_own(_stale(mine, current, len(request.messages)), request, config, earlier)
    if requests and unanswered == len(requests):
        log.warning(
            "%s holds no reference cassette for %s: nothing to re-key (another topic's answers are never moved)",
            cassette_dir,
            ", ".join(requests[0].read_for) or "these requests",
        )
    return written


def _rekey_own(
    stale: list[tuple[Cassette, str]],
    request: ExtractionRequest,
    config: LLMConfig,
    earlier: Sequence[ExtractionRequest],
) -> list[Path]:
    """Write the one stale reference answer of `request` under the request as asked now, and delete
    the file it replaces; several (chunks, or one per older prompt) are said, and left as they are."""
    rekeyable = [
        c
        for c, _ in stale
        if c.provenance.kind == "reference"
        and len(c.exchange.request_body.get("messages", [])) == len(request.messages)
    ]
    if len(rekeyable) > 1:  # which of them is this request's answer is not for rekey to guess
        names = ", ".join(c.path.name for c in rekeyable)
        log.warning(
            "%s has %d stale reference cassettes (%s); rekey them one at a time",
            request.doc_path,
            len(rekeyable),
            names,
        )
        rekeyable = []
    written: list[Path] = []
    for cassette, why in stale:
        if cassette not in rekeyable:
            log.warning("%s is stale (%s): %s", cassette.path.name, why, _STALE_TODO[cassette.provenance.kind])
            continue
        answer = answer_from_completion(cassette.exchange.response_body, request.answer_schema())
        answer, lost = carried_ids(answer, cassette.exchange.request_body, request)
        if lost:  # which subject the answer meant is for its writer to say, not for rekey to guess
            log.warning(
                "%s cites %s: left as it was; rewrite its answer citing the ids listed now (`predigest prompt"
                " show`) and add it again (`predigest cassettes add-reference`)",
                cassette.path.name,
                "; ".join(dict.fromkeys(lost)),
            )
            continue
        try:  # a composing answer is checked against the evening's claims as they are now
            request.answer_schema().model_validate(answer.model_dump(), context=request.validation_context())
        except ValidationError as invalid:
            log.warning(
                "%s does not answer the request as asked now (%s): left as it was; write its answer again"
                " (`predigest prompt show --doc %s`, then `predigest cassettes add-reference`)",
                cassette.path.name,
                "; ".join(e["msg"] for e in invalid.errors()[:2]),
                request.doc_path,
            )
            continue
        kept = {"note": cassette.provenance.note, "date": _iso_date(cassette.provenance.date)}  # not tonight's
        path = write_reference_cassette(request, answer, config, earlier=earlier, **kept)
        if path != cassette.path:  # replaced by its own re-keyed copy, and only then
            cassette.path.unlink(missing_ok=True)
        written.append(path)
    return written


def carried_ids(answer: Answer, answered: Any, request: ExtractionRequest) -> tuple[Answer, list[str]]:
    """`answer`, given to the request body `answered`, citing each anchor and open item under the id
    `request` lists it under now; and the ids it cites whose subject `request` does not list exactly
    once, each said with what it meant. An id is a place in the registry, which a new anchor or another
    order moves: an answer re-keyed with its ids kept would cite another subject, or one no longer
    listed. What an id meant is read from the old request's own lines, and found again in the new
    request by the same subject; a subject named instead of an id is left as it is."""
    if not isinstance(answer, FileExtraction | SharedExtraction):
        return answer, []  # a composing answer cites the evening's claims, not the registry's ids
    messages = answered.get("messages", []) if isinstance(answered, dict) else []
    before, after = listed_in(messages), listed_in(request.messages)
    data = answer.model_dump()
    lost: list[str] = []
    for reading in data["topics"] if isinstance(answer, SharedExtraction) else [data]:
        topic = reading.get("topic", "")  # a one-topic request lists under no topic heading
        old, new = before.get(topic, Listing()), after.get(topic, Listing())
        for claim in reading["claims"]:
            claim["anchor"] = _carried(claim["anchor"], old, new, lost)
        for resolution in reading["resolved"]:
            resolution["item"] = _carried(resolution["item"], old, new, lost)
    return type(answer).model_validate(data), lost


def _carried(cited: str, old: Listing, new: Listing, lost: list[str]) -> str:
    """The id `new` lists the subject under that `cited` names in `old`; `cited` itself when it
    names no id, or (added to `lost`) when `new` does not list that subject exactly once."""
    ident = cited_id(cited)
    if not ident:
        return cited
    subject = old.subject(ident)
    now = new.ids_of(ident, subject) if subject is not None else []
    if not now and subject is not None and ident.startswith(ANCHOR_ID):
        # one subject is one line, named by whichever of its anchors ranks first: the line may now
        # bear another of its names ('SGLang v0.6.0' for 'SGLang v0.6.0 HiCache 实测命中率')
        now = [i for i, s in new.anchors.items() if same_subject(s, subject)]
    if len(now) == 1:
        return now[0]
    if subject is None:
        lost.append(f"{ident} (not listed in the request it answered)")
    else:
        lost.append(f"{ident} ({subject!r}, {'listed now as ' + ', '.join(now) if now else 'no longer listed'})")
    return cited


# what to do about a stale cassette rekey does not rewrite, by its provenance
_STALE_TODO = defaultdict(
    lambda: "write it again with write_reference_cassette",
    recorded="re-record it with backend 'record'",
    relayed="a relayed answer is never re-keyed: it replays as stale until new answers are relayed",
)


def _iso_date(text: str) -> str:
    """`text` when it is a date as cassettes write it (2026-11-30); else "" (today is written)."""
    try:
        return dt.date.fromisoformat(text).isoformat() if len(text) == 10 else ""
    except ValueError:
        return ""


def _stale(cassettes: list[Cassette], current: Any, turns: int) -> list[tuple[Cassette, str]]:
    """The cassettes whose request is not `current` (the request as it is asked now, of `turns`
    messages), each with what differs. A re-ask is current when its opening turns are today's request."""
    out = []
    for cassette in cassettes:
        opening = _opening(cassette.exchange.request_body, turns)
        if opening != current:
            out.append((cassette, "; ".join(describe_differences(opening, current))))
    return out


def _same_evening(cassette: Cassette, current: Any) -> bool:
    """Whether `cassette` answered a request of the same evening as `current`: the request's first user
    line names the evening ('Evening: 2026-10-14 · topic: retrieval'). A composing request is filed
    under `compose/<topic>` every evening, so without this another evening's answer would look like
    this one's stale copy."""
    return _evening_line(cassette.exchange.request_body) == _evening_line(current)


def _evening_line(body: Any) -> str:
    messages = body.get("messages", []) if isinstance(body, dict) else []
    user = next((m.get("content") for m in messages if isinstance(m, dict) and m.get("role") == "user"), "")
    return user.split("\n", 1)[0] if isinstance(user, str) else ""


def _opening(body: Any, turns: int) -> Any:
    """A request body cut to its first `turns` messages: a re-ask opens with the request it corrects."""
    return {**body, "messages": body.get("messages", [])[:turns]} if isinstance(body, dict) else body


def _same_shape(cassettes: list[Cassette], request: ExtractionRequest) -> list[Cassette]:
    """The cassettes that answer a request of the same shape (shared or one topic) as `request`;
    the others are said in one warning, never parsed as the other shape's answer."""
    other = [c for c in cassettes if c.provenance.prompt.startswith(f"{SHARED}@") != bool(request.topics)]
    if other:
        log.warning(
            "%s answer(s) %s request; rekey them with %s",
            ", ".join(c.path.name for c in other),
            "a one-topic" if request.topics else "a shared",
            "one topic" if request.topics else "every topic they carry (--all-topics)",
        )
    return [c for c in cassettes if c not in other]


@dataclass(frozen=True)
class RequestCheck:
    """How a cassette folder stands against an evening's requests as they are asked today."""

    answered: list[str]  # 'doc' or 'doc part N': answered by the exact request
    stale: list[tuple[str, str]]  # (doc, prompt stamp): answered only under another prompt (--allow-stale)
    missing: list[str]  # answered by nothing
    used: set[Path]  # cassette files these requests replay, re-asks of an answered opening included


def check_requests(requests: list[ExtractionRequest], config: LLMConfig) -> RequestCheck:
    """Sort the requests into answered, stale and missing, and name the files they use."""
    index = CassetteIndex.load(config.cassette_dir)
    answered: list[str] = []
    stale: list[tuple[str, str]] = []
    missing: list[str] = []
    used: set[Path] = set()
    for request, current in zip(requests, current_request_bodies(requests, config), strict=True):
        name = request.doc_path + (f" part {request.chunk + 1}" if request.chunks > 1 else "")
        hit = index.get(body_key(current))
        if hit is not None:
            answered.append(name)
            turns = len(request.messages)  # its cassette, and those of the re-asks that continue it
            used.update(c.path for c in index.all() if _opening(c.exchange.request_body, turns) == current)
            continue
        old = index.stale(request.doc_path, request.chunk, request.read_for or body_topics(current))
        if old is not None:
            stale.append((name, old.provenance.prompt))
            used.add(old.path)
        else:
            missing.append(name)
    return RequestCheck(answered, stale, missing, used)
