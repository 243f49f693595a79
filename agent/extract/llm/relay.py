"""Relayed cassettes: a real model's answers, obtained elsewhere, stored as real HTTP exchanges.

Someone pastes the printed messages into a model and saves each answer. `relay_answers` serves
those answers, byte for byte, from an OpenAI-compatible server on loopback and runs the real
record path against it (openai client, instructor, our transport chain); the cassettes say
`relayed`, with the model and date given by whoever obtained the answers. A saved answer belongs
only to the request whose messages the model saw (its `predigest prompt show` printout): one that
differs is refused, and after a prompt change the relayed set replays as stale, never re-keyed.
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agent.core.errors import PredigestError
from agent.extract import Answer, ExtractionRequest
from agent.extract.llm.budget import Budget
from agent.extract.llm.calllog import call_scope
from agent.extract.llm.cassettes import CassetteIndex, body_key, completion, first_difference
from agent.extract.llm.client import build_client, create_extraction
from agent.extract.llm.config import LLMConfig
from agent.extract.llm.reference import current_request_body
from agent.extract.llm.transport import build_transport
from schemas.extraction import FileExtraction

_ROLE_LINE = re.compile(r"^--- (system|user|assistant|developer) ---\n", re.M)


def read_printed_prompt(text: str) -> list[dict[str, str]]:
    """The messages of a `predigest prompt show` printout: after its `#` header lines, for each
    message a `--- role ---` line and its content, which the printer ends with a newline."""
    parts = _ROLE_LINE.split(text + "\n")[1:]  # each body then ends with its last line's newline
    roles, bodies = parts[::2], parts[1::2]
    return [{"role": r, "content": b[:-1].removesuffix("\n")} for r, b in zip(roles, bodies, strict=True)]


@dataclasses.dataclass(frozen=True)
class RelayedAnswer:
    """One saved answer: the exact text the model returned, and the messages it was shown."""

    doc_path: str
    text: str
    shown: list[dict[str, str]] | None = None  # None: no printout to check the request against


@contextmanager
def _loopback(answers: Mapping[str, str], model: str) -> Iterator[str]:
    """An OpenAI-compatible server on 127.0.0.1 answering each known request body (by key)
    with its saved answer, and anything else with 404. Yields its base URL."""
    served = iter(range(1, 1_000_000))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            text = answers.get(body_key(body)) if isinstance(body, dict) else None
            if text is None:
                status, reply = 404, {"error": {"message": "no saved answer for this request"}}
            else:
                status, reply = 200, completion(body, text, model, f"relay-{next(served)}")
            payload = json.dumps(reply, ensure_ascii=False).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


def relay_answers(
    requests: Sequence[ExtractionRequest],
    answers: Sequence[RelayedAnswer],
    config: LLMConfig,
    *,
    model: str,
    date: str,
    note: str = "",
) -> list[Path]:
    """Write one `relayed` cassette per answer into `config.cassette_dir`; returns their paths.

    Every answer must be a valid `FileExtraction` (for a shared request, a `SharedExtraction` of
    its topics) and every request must be exactly the one the model was shown (when its printout
    is given); otherwise nothing is written."""
    by_doc = {r.doc_path: r for r in requests}
    parsed = _parsed(answers, by_doc)
    offline = config.with_(api_key="relay-loopback", cache_dir=None, max_validation_retries=0)
    keyed = {body_key(current_request_body(by_doc[a.doc_path], offline)): a.text for a in answers}
    written: list[Path] = []
    with _loopback(keyed, model) as url:
        live = offline.with_(backend="record", base_url=url)
        index = CassetteIndex(config.cassette_dir)
        client = build_client(live, build_transport(live, Budget(live), index, kind="relayed", note=note, date=date))
        for a in answers:
            request = by_doc[a.doc_path]
            with call_scope(request.doc_path, str(request.prompt), request.chunk, topics=request.read_for) as call:
                got = create_extraction(client, request, live, max_retries=0)
            if got.model_dump() != parsed[a.doc_path].model_dump() or len(call.cassettes) != 1:
                raise PredigestError(
                    f"the relayed answer for {a.doc_path} did not come back through the client unchanged",
                    hint="this is a bug in predigest",
                )
            written.append(config.cassette_dir / call.cassettes[0])
    return written


def _parsed(answers: Sequence[RelayedAnswer], by_doc: dict[str, ExtractionRequest]) -> dict[str, Answer]:
    """Each answer parsed as its request's schema, or every problem with them raised at once:
    nothing is relayed unless every answer belongs to its document's request as asked now."""
    problems = [f"{a.doc_path}: not a document of the evening" for a in answers if a.doc_path not in by_doc]
    parsed: dict[str, Answer] = {}
    for a in answers:
        request = by_doc.get(a.doc_path)
        kind = request.answer_schema() if request is not None else FileExtraction
        context = request.validation_context() if request is not None else None
        try:
            parsed[a.doc_path] = kind.model_validate_json(a.text, context=context)
        except ValueError as e:
            problems.append(f"{a.doc_path}: the answer is not a {kind.__name__} ({str(e).splitlines()[0]})")
        if request is not None and a.shown is not None and list(request.messages) != a.shown:
            problems.append(f"{a.doc_path}: {_message_difference(a.shown, list(request.messages))}")
    if problems:
        raise PredigestError(
            "cannot relay these answers: " + "; ".join(problems),
            hint="a saved answer only belongs to the exact request its model was shown; relay with the prompt "
            "it answered (check `predigest prompt show`), or obtain new answers",
        )
    return parsed


def _message_difference(shown: list[dict[str, str]], sent: list[dict[str, str]]) -> str:
    """Where the request we would send departs from what the model was shown, the shown text on
    the left of the arrow and the request's on the right. A message without content (on either
    side) reads as empty: the report names the difference rather than failing on it."""
    if [m.get("role") for m in shown] != [m.get("role") for m in sent]:
        return f"the model was shown {len(shown)} message(s), the request has {len(sent)}"
    for old, new in zip(shown, sent, strict=True):
        if old.get("content") != new.get("content"):
            where = first_difference(old.get("content", ""), new.get("content", ""))
            return f"the {new.get('role')} message differs {where} (shown -> request)"
    return "the messages differ"
