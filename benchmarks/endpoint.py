"""An OpenAI-compatible chat-completions server on loopback, for tests and the load benchmark.

It answers POST /v1/chat/completions from a script of replies, then from a default responder,
records every request, and counts how many were in flight at once. `simulated` is the default
the benchmark uses: a configurable latency (with jitter) and error rate, and an answer that is a
*valid* extraction built from the request's own document — its headings become claims, its
sentences the evidence quotes — so the rule layer downstream has real work to do. The answer
takes the structured-output shape of the request (tool call for `tools`, content for
`json_schema`), as a provider would.

Tests and the benchmark run it in a thread (`Endpoint` as a context manager; the benchmark's runs
are child processes, so the server's CPU is not counted as theirs); `python -m benchmarks.endpoint`
serves it as a process of its own. GET /v1/_stats reports requests, the peak in flight, and what
share of each prompt was a prefix common to every request (what provider-side prefix caching could
reuse); POST /v1/_reset starts the counts again.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent.extract.chunking import estimate_tokens
from agent.extract.llm.cassettes import answer_message, prefix_cached_tokens, prompt_text, shared_prefix

_DOCUMENT = re.compile(r'<document path="([^"]*)">\n(.*)\n</document>', re.S)
_HEADING = re.compile(r"^#{2,3}\s+(.+?)\s*$", re.M)
_SENTENCE = re.compile(r"[^。！？\n]{12,80}[。！？]")
_NUMBERING = re.compile(r"^(?:条目\s*\d+\s*[：:]\s*|\d+\s*[.、]\s*)")
_ARXIV = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(v\d+)?(?![\d])")
_TOPICS = re.compile(r"^Evening: \S+ · topics: (.+)$", re.M)  # a shared request's user message names them
CACHE_PROMPTS = 256  # the prompts a simulated provider's prefix cache keeps


@dataclass
class Reply:
    """One scripted answer: a JSON body, or raw bytes, after an optional delay. With `trickle_s`,
    the whole response (status line, headers, body) goes out one byte every `trickle_s` seconds:
    a server that is never silent long enough for a read timeout."""

    status: int = 200
    body: Any = None
    raw: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    trickle_s: float = 0.0


@dataclass(frozen=True)
class SeenRequest:
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Any], Reply]


def completion(body: Any, extraction: Any, usage: tuple[int, int] = (120, 40), cached: int = 0) -> dict[str, Any]:
    """A chat completion answering `body` with `extraction`, shaped for the request's mode;
    `cached` prompt tokens are reported as served from a prompt cache when not 0."""
    arguments = json.dumps(extraction, ensure_ascii=False)
    message, finish = answer_message(body, arguments, "call_0")
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1790000000,
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
            **({"prompt_tokens_details": {"cached_tokens": cached}} if cached else {}),
        },
    }


def answer_with(extraction: Any, delay_s: float = 0.0) -> Responder:
    return lambda body: Reply(body=completion(body, extraction), delay_s=delay_s)


# --- an extraction built from the request's document ----------------------------------------------


def request_document(body: Any) -> tuple[str, str]:
    """(path, text) of the document a predigest extraction request carries; ('', '') if none."""
    for message in reversed(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and (m := _DOCUMENT.search(content)):
            return m.group(1), m.group(2)
    return "", ""


def extraction_for(document: str, max_claims: int = 3) -> dict[str, Any]:
    """A schema-valid `FileExtraction` (as JSON) that a careful model could give for `document`:
    up to `max_claims` claims, one per heading, each quoting a sentence of its section verbatim
    and citing only the arXiv IDs written there. Deterministic: the same document, the same answer."""
    starts = list(_HEADING.finditer(document))
    claims = []
    for i, heading in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(document)
        section = document[heading.end() : end]
        quote = _SENTENCE.search(section)
        if quote is None:
            continue
        sentence = quote.group().strip()
        ids = list(dict.fromkeys(m.group(1) + (m.group(2) or "") for m in _ARXIV.finditer(section)))[:2]
        title = _NUMBERING.sub("", heading.group(1).strip())[:38] or f"条目 {i + 1}"
        claims.append(
            {
                "title": title,
                "stars": 4 if len(claims) == 0 else 3,
                "key_points": [{"text": sentence, "children": []}],
                "evidence": [sentence],
                "section_ref": f"§{title[:20]}",
                "arxiv": [{"arxiv_id": a, "title": title} for a in ids],
                "urls": [],
                "credibility": "中",
                "credibility_reason": "单一来源的工程报告，有具体数字",
                "relation": "new",
                "anchor": "",
                "relation_note": "活文档尚无此条",
                "suggested_section": "§1.1 框架格局",
                "to_verify": [],
            }
        )
        if len(claims) == max_claims:
            break
    return {
        "relevance": "高" if claims else "参考",
        "relevance_reason": "文档讨论推理引擎与服务" if claims else "没有可引用的条目",
        "held": " · ".join(c["title"][:12] for c in claims) or "无",
        "claims": claims,
        "skipped": [],
    }


def shared_extraction_for(body: Any, document: str) -> dict[str, Any] | None:
    """A `SharedExtraction` for a shared request (what the document held, then one part per topic its
    prompt names, each the document's extraction), or None for a request for one topic."""
    messages = [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]
    topics = _TOPICS.search("\n".join(m for m in messages[:2] if isinstance(m, str)))
    if topics is None:
        return None
    reading = extraction_for(document)
    part = {k: v for k, v in reading.items() if k != "held"}
    return {"held": reading["held"], "topics": [{"topic": t, **part} for t in topics.group(1).split(", ")]}


# --- a composition built from the composing request's own claims ---------------------------------------

_EDITOR = "You are the editor of an evening research briefing"
_CLAIM = re.compile(  # a claim's block in the composing prompt: id, credibility reason, section, title, points
    r"^(C\d+) · (D\d+) .*?\(([^)]*)\) · (?:new|supplement|covered)[^\n]*· section ([^\n]*)\n"
    r"  title: ([^\n]*)\n((?:  (?:- |  )[^\n]*\n?)*)",
    re.M,
)
_DISPUTED = re.compile(r"^F\d+ · .*?: (.+)$", re.M)
_ANCHOR = re.compile(r"^(A\d+) · .*? · already says: (.*)$", re.M)


def is_composing(body: Any) -> bool:
    """Whether a request is predigest's composing call (its system prompt is the editor's)."""
    messages = body.get("messages") if isinstance(body, dict) else None
    first = messages[0].get("content") if messages and isinstance(messages[0], dict) else ""
    return isinstance(first, str) and first.startswith(_EDITOR)


def composition_for(body: Any) -> dict[str, Any]:
    """An `EveningComposition` (as JSON) a plain editor could give: one story per listed claim, its
    top-level points copied (those repeating an earlier point's figure, flag or CVE ID, stating only
    what the claim's anchor already says, or stating a disputed value, left out), at most eight. It
    merges nothing; it is valid, so the rules check real work."""
    user = body["messages"][1]["content"]
    disputed = {v for line in _DISPUTED.findall(user) for v in re.findall(r"says ([^;]+)", line)}
    values = {x.strip() for v in disputed for x in v.split(" / ")}
    anchors = dict(_ANCHOR.findall(user))  # id -> what it already says
    stories = []
    for m in _CLAIM.finditer(user):
        cid, reason, section, title, block = m[1], m[3], m[4], m[5], m[6]
        held = anchors.get(a[1], "") if (a := re.search(r"· (?:supplement|covered) of (A\d+)", m[0])) else ""
        points: list[dict[str, Any]] = []
        seen: set[str] = set()
        for text in _top_points(block):
            numbers = set(re.findall(r"--[A-Za-z][\w-]*|CVE-\d+-\d+|\d+(?:\.\d+)?\s*(?:%|×|x|倍)", text, re.I))
            old_news = bool(numbers) and all(n.lower() in held.lower() for n in numbers)  # a supplement's old facts
            if (numbers & seen) or old_news or any(v and v in text for v in values) or len(points) == 8:
                continue
            seen |= numbers
            points.append({"text": text, "refs": [cid]})
        short = title if len(title) <= 40 else re.split(r"\s+[—–-]+\s+|：|（", title, maxsplit=1)[0][:40]
        stories.append(
            {
                "claims": [cid],
                "title": short,
                "key_points": points or [{"text": title, "refs": [cid]}],
                "credibility_reason": reason.split("(", 1)[-1],
                "relation": "新增",
                "section": section,
                "living_line": points[0]["text"] if points else "",
            }
        )
    return {"stories": stories, "left_out": [], "doc_lines": [], "questions": []}


def _top_points(block: str) -> list[str]:
    """A claim's top-level points, each with its nested steps joined on ('三坑：A；B'), as one
    sentence a plain editor would write."""
    points: list[list[str]] = []
    for line in block.splitlines():
        if line.startswith("  - "):
            points.append([line[4:].strip()])
        elif line.startswith("    ") and line.strip().startswith("- ") and points:
            points[-1].append(line.strip()[2:].strip())
    return [p[0] + ("" if p[0].endswith(("：", ":")) else "：") + "；".join(p[1:]) if p[1:] else p[0] for p in points]


def plain_editor(body: Any) -> Reply:
    """The composing call answered as a plain editor would (`composition_for`)."""
    return Reply(body=completion(body, composition_for(body), usage=(3000, 800)))


class PrefixCache:
    """What a provider with prefix caching serves from cache: the longest prefix a prompt shares
    with one seen before, counted as `prefix_cached_tokens` does (the last `CACHE_PROMPTS` prompts
    are kept, as a cache evicts)."""

    def __init__(self) -> None:
        self._seen: deque[str] = deque(maxlen=CACHE_PROMPTS)
        self._lock = threading.Lock()

    def cached_tokens(self, text: str) -> int:
        with self._lock:
            cached = prefix_cached_tokens(text, self._seen)
            self._seen.append(text)
        return cached


def simulated(latency_s: float = 0.0, jitter_s: float = 0.0, error_rate: float = 0.0, seed: int = 0) -> Responder:
    """Answers like a provider under load: after `latency_s` ± `jitter_s`, either an error (a 500 or
    a 429 with Retry-After, with probability `error_rate`) or the document's extraction with
    usage estimated the way `agent.extract.chunking.estimate_tokens` counts (CJK character = 1 token),
    the prefix it shares with an earlier prompt reported as cached (`PrefixCache`). A shared
    request gets a part per topic it names."""
    rng = random.Random(seed)
    lock = threading.Lock()
    cache = PrefixCache()

    def respond(body: Any) -> Reply:
        with lock:
            delay = max(0.0, latency_s + rng.uniform(-jitter_s, jitter_s)) if jitter_s else latency_s
            fail = error_rate > 0 and rng.random() < error_rate
            status = rng.choice((429, 500)) if fail else 200
        if fail:
            headers = {"retry-after": "0"} if status == 429 else {}
            error = {"error": {"message": "simulated failure"}}
            return Reply(status=status, body=error, headers=headers, delay_s=delay)
        _, document = request_document(body)
        extraction = shared_extraction_for(body, document) or extraction_for(document)
        text = prompt_text(body)
        usage = (estimate_tokens(text), estimate_tokens(json.dumps(extraction, ensure_ascii=False)))
        return Reply(body=completion(body, extraction, usage, cache.cached_tokens(text)), delay_s=delay)

    return respond


# --- the server ----------------------------------------------------------------------------------------


class Endpoint:
    """Use as a context manager; `base_url` is ready inside it.

    `keep_bodies=False` keeps only counts and the prefix statistics (a 200-document benchmark
    need not hold every prompt in memory twice)."""

    def __init__(
        self, default: Responder | None = None, *, composer: Responder | None = None, keep_bodies: bool = True
    ) -> None:
        self.script: deque[Reply | Responder] = deque()
        self.default: Responder = default or simulated()
        self.composer: Responder = composer or plain_editor  # who answers the composing calls
        self.keep_bodies = keep_bodies
        self.requests: list[SeenRequest] = []
        self.served = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self._prefix: str | None = None  # common prefix of every prompt seen so far
        self._prompt_tokens: list[int] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def count(self) -> int:
        return self.served

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start the server first"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply | Responder) -> None:
        self.script.extend(replies)

    def stats(self) -> dict[str, Any]:
        """Requests served, the peak in flight, and the prompt prefix every request shared."""
        with self._lock:
            prefix_tokens = estimate_tokens(self._prefix or "")
            shares = [prefix_tokens / t for t in self._prompt_tokens if t]
            return {
                "requests": self.served,
                "max_in_flight": self.max_in_flight,
                "common_prefix_tokens": prefix_tokens,
                "prefix_share_mean": sum(shares) / len(shares) if shares else 0.0,
                "prefix_share_min": min(shares, default=0.0),
            }

    def reset_stats(self) -> None:
        with self._lock:
            self.served = self.max_in_flight = 0
            self._prefix = None
            self._prompt_tokens = []
            self.requests = []

    def _next(self, body: Any) -> Reply:
        if is_composing(body):  # the editor's call, whatever answers the extractions
            return self.composer(body)
        with self._lock:
            step = self.script.popleft() if self.script else self.default
        return step if isinstance(step, Reply) else step(body)

    def _note(self, path: str, headers: dict[str, str], body: Any) -> None:
        text = prompt_text(body) if isinstance(body, dict) and path.endswith("/chat/completions") else ""
        with self._lock:
            self.served += 1
            if self.keep_bodies:
                self.requests.append(SeenRequest(path, headers, body))
            if text:
                self._prompt_tokens.append(estimate_tokens(text))
                self._prefix = text if self._prefix is None else text[: shared_prefix(self._prefix, text)]
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def __enter__(self) -> Endpoint:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as providers do: no new connection per call
            # Headers and body leave in two writes; with Nagle on, the second waits for the
            # client's delayed ACK, which would be the server's cost counted as ours.
            disable_nagle_algorithm = True

            def do_GET(self) -> None:
                if self.path == "/v1/_stats":
                    self._send(Reply(body=endpoint.stats()))
                else:
                    self._send(Reply(status=404, body={"error": {"message": f"no route {self.path}"}}))

            def do_POST(self) -> None:
                received = time.monotonic()
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path == "/v1/_reset":
                    endpoint.reset_stats()
                    self._send(Reply(body={}))
                    return
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                endpoint._note(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                try:
                    unknown = Reply(status=404, body={"error": {"message": f"no route {self.path}"}})
                    reply = endpoint._next(body) if self.path == "/v1/chat/completions" else unknown
                    # from the request's arrival, as a provider's latency: the answer is built within it
                    time.sleep(max(0.0, received + reply.delay_s - time.monotonic()))
                    self._send(reply)
                finally:
                    with endpoint._lock:
                        endpoint.in_flight -= 1

            def _send(self, reply: Reply) -> None:
                payload = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
                if reply.trickle_s:
                    self._trickle(reply, payload)
                    return
                self.send_response(reply.status)
                for name, value in {"content-type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _trickle(self, reply: Reply, payload: bytes) -> None:
                head = f"HTTP/1.1 {reply.status} OK\r\n"
                for name, value in {"content-type": "application/json", **reply.headers}.items():
                    head += f"{name}: {value}\r\n"
                whole = f"{head}content-length: {len(payload)}\r\n\r\n".encode() + payload
                self.close_connection = True
                for i in range(len(whole)):
                    try:
                        self.wfile.write(whole[i : i + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: what a bounded client does
                        return
                    time.sleep(reply.trickle_s)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test and benchmark output clean

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # a burst of 16+ connections must not be refused

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that timed out and hung up is expected here

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()


def main(argv: list[str] | None = None) -> None:
    """Serve until stdin closes: the process that started us owns our lifetime."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.endpoint", description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=0.0)
    parser.add_argument("--jitter-ms", type=float, default=0.0)
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    responder = simulated(args.latency_ms / 1000, args.jitter_ms / 1000, args.error_rate, args.seed)
    with Endpoint(responder, keep_bodies=False) as endpoint:
        print(endpoint.base_url, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
