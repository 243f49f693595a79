"""Cassettes: one readable JSON file per HTTP exchange, found again by a hash of the request.

The key is the sha256 of the canonical request body. Headers never take part: the openai client's
`x-stainless-*` headers change from call to call, and they carry the API key. Bodies are kept
parsed, so a diff in review shows what the model was asked and what it said. A replay miss (the
common failure after a prompt edit) names the nearest cassette and which part of the request moved.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, get_args

from agent.core.errors import CassetteMiss, PredigestError
from agent.core.settings import LLMSettings
from agent.extract import ExtractionRequest
from agent.extract.chunking import estimate_tokens

ProvenanceKind = Literal["recorded", "relayed", "reference"]

_SCHEMA_KEYS = frozenset({"tools", "tool_choice", "response_format", "functions", "function_call"})


def canonical_json(body: Any) -> str:
    """The one serialisation keys are computed from (and compared on)."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(raw: bytes) -> str:
    """sha256 of the canonical request body; a body that is not JSON is hashed as it is. The
    client's own serialisation (key order, spacing) never changes the key."""
    try:
        return body_key(json.loads(raw))
    except ValueError:
        return hashlib.sha256(raw).hexdigest()


def body_key(body: Any) -> str:
    """The key of an already parsed request body."""
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def doc_slug(doc_path: str) -> str:
    """A file-name-safe form of a workspace path: 'inbox/jay/2026-09-22-x.md' -> 'inbox-jay-2026-09-22-x'."""
    stem = doc_path.rsplit(".", 1)[0] if doc_path.endswith(".md") else doc_path
    slug = re.sub(r"[^\w.-]+", "-", stem).strip("-.")
    return slug[:80] or "request"


@dataclass(frozen=True)
class Exchange:
    """One request and its answer, as layers above the network pass it around and store it."""

    key: str
    method: str
    path: str
    request_body: Any
    status: int
    response_body: Any
    usage: dict[str, Any]
    latency_s: float
    model: str  # as the response names it, else as the request asked
    date: str  # ISO date the answer was obtained


def usage_of(response_body: Any) -> dict[str, Any]:
    """The `usage` object of a chat completion, or {} when the reply has none."""
    if isinstance(response_body, dict) and isinstance(response_body.get("usage"), dict):
        return dict(response_body["usage"])
    return {}


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def counted(usage: dict[str, Any]) -> bool:
    """Whether `usage` gives both token counts as plain non-negative integers."""
    return _count(usage.get("prompt_tokens")) is not None and _count(usage.get("completion_tokens")) is not None


def token_counts(usage: dict[str, Any]) -> tuple[int, int]:
    """(input, output) tokens from an OpenAI-style usage object; a count that is not a
    non-negative integer (missing, negative, `"lots"`) is 0."""
    return _count(usage.get("prompt_tokens")) or 0, _count(usage.get("completion_tokens")) or 0


def cached_tokens(usage: dict[str, Any]) -> int:
    """The prompt tokens the provider served from its prompt cache: OpenAI's
    `prompt_tokens_details.cached_tokens`, or DeepSeek's `prompt_cache_hit_tokens` (left uncounted,
    its cached tokens were billed at the full input price); 0 when it does not say, and never more
    than the prompt."""
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else None
    if cached is None:
        cached = _count(usage.get("prompt_cache_hit_tokens"))
    return min(cached or 0, token_counts(usage)[0])


# how a provider with prefix caching (OpenAI's) counts: nothing under 1,024 tokens, then whole 128-token steps
CACHE_MIN_TOKENS, CACHE_STEP_TOKENS = 1024, 128


def prompt_text(body: Any) -> str:
    """What a provider tokenises for a request, in its order: the tools / schema, then the messages."""
    schema = body.get("tools") or body.get("response_format") or ""
    head = json.dumps(schema, ensure_ascii=False, sort_keys=True) if schema else ""
    messages = [m.get("content") or "" for m in body.get("messages") or [] if isinstance(m, dict)]
    return head + "".join(m if isinstance(m, str) else json.dumps(m, ensure_ascii=False) for m in messages)


def prefix_cached_tokens(text: str, earlier: Sequence[str]) -> int:
    """The prompt tokens a provider with prefix caching serves from its cache for a prompt `text`
    sent after the prompts `earlier`: the longest prefix it shares with one of them."""
    longest = max((shared_prefix(text, s) for s in earlier), default=0)
    tokens = estimate_tokens(text[:longest])
    return 0 if tokens < CACHE_MIN_TOKENS else tokens - tokens % CACHE_STEP_TOKENS


def shared_prefix(a: str, b: str) -> int:
    """How many leading characters `a` and `b` share. Found by halving, one slice comparison a
    step: a simulated provider asks it of every prompt it keeps for every request, and comparing
    two prompts character by character would make the simulator, not the run, the bottleneck."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class Provenance:
    """Where a cassette's answer came from, said honestly: a model's or a person's."""

    kind: ProvenanceKind
    model: str
    date: str
    prompt: str  # "name@version#hash"
    instructor: str
    openai: str
    document: str
    note: str = ""
    part: int | None = None  # 0-based part of a split document; None when the cassette does not say (see part_of)
    # the topics the request read the document for, written when its body does not say them (see topics_of)
    topics: tuple[str, ...] = ()


# what a cassette that leaves a provenance field out is taken to hold
_NO_PROVENANCE: dict[str, Any] = {f.name: "" for f in fields(Provenance)} | {
    "kind": "recorded",
    "part": None,
    "topics": (),
}


@dataclass(frozen=True)
class Cassette:
    path: Path
    provenance: Provenance
    exchange: Exchange


def library_versions() -> tuple[str, str]:
    """(instructor, openai) versions: the request body depends on both, so cassettes carry them."""
    import instructor
    import openai

    return getattr(instructor, "__version__", "unknown"), openai.__version__


def today() -> str:
    return dt.date.today().isoformat()


_UNSAID: dict[str, Any] = {"part": None, "topics": ()}  # provenance fields left out of the file when not said


def write_cassette(cassette_dir: Path, exchange: Exchange, provenance: Provenance) -> Path:
    """Write one exchange as `<doc-slug>--<key[:12]>.json`; atomic, so a crash leaves no half file."""
    cassette_dir.mkdir(parents=True, exist_ok=True)
    path = cassette_dir / f"{doc_slug(provenance.document)}--{exchange.key[:12]}.json"
    data = {
        "key": exchange.key,
        "provenance": {k: v for k, v in asdict(provenance).items() if k not in _UNSAID or v != _UNSAID[k]},
        "request": {"method": exchange.method, "path": exchange.path, "body": exchange.request_body},
        "response": {"status": exchange.status, "body": readable_answer(exchange.response_body)},
        "usage": exchange.usage,
        "latency_s": round(exchange.latency_s, 3),
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _map_answers(body: Any, fn: Any) -> Any:
    """Apply `fn` to every tool-call `arguments` and message `content` of a chat completion."""
    if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
        return body
    body = json.loads(json.dumps(body))  # a deep copy: the caller's value stays as it was
    for choice in body["choices"]:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            continue
        if "content" in message:
            message["content"] = fn(message["content"])
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict) and isinstance(call.get("function"), dict) and "arguments" in call["function"]:
                call["function"]["arguments"] = fn(call["function"]["arguments"])
    return body


def _parsed(value: Any) -> Any:
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return value


def _serialised(value: Any) -> Any:
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value


def readable_answer(response_body: Any) -> Any:
    """The model's answer as JSON in the file, not a string of escaped JSON, so that a review
    diff of a cassette shows what the model said, field by field. In the wire format these
    fields are always strings, so a dict or list in the file can only mean "serialise me"."""
    return _map_answers(response_body, _parsed)


def wire_answer(response_body: Any) -> Any:
    """Inverse of `readable_answer`: what the client receives on replay."""
    return _map_answers(response_body, _serialised)


def read_cassette(path: Path) -> Cassette:
    """Read a cassette; its key is recomputed from the request body, so what the file shows is
    exactly what replays (a hand edit of the body re-keys it)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"a cassette is a JSON object, this file holds {type(data).__name__}")
    provenance = _provenance(data.get("provenance", {}))
    body = data["request"]["body"]
    exchange = Exchange(
        key=body_key(body),
        method=data["request"].get("method", "POST"),
        path=data["request"].get("path", "/chat/completions"),
        request_body=body,
        status=int(data["response"].get("status", 200)),
        response_body=wire_answer(data["response"]["body"]),
        usage=data.get("usage") or usage_of(data["response"]["body"]),
        latency_s=float(data.get("latency_s") or 0.0),
        model=provenance.model,
        date=provenance.date,
    )
    return Cassette(path=path, provenance=provenance, exchange=exchange)


def _provenance(prov: Any) -> Provenance:
    """A cassette's provenance: a field it leaves out takes `_NO_PROVENANCE`'s value, and a field
    of the wrong type is an error like any other malformed part of the file (`CassetteIndex.load`
    names the file), never read as blank — a cassette that says where its answer came from must
    say it legibly, and as one of the three kinds."""
    if not isinstance(prov, dict):
        raise ValueError(f"a cassette's provenance is a JSON object, this file's is {type(prov).__name__}")
    given = {f.name: prov[f.name] for f in fields(Provenance) if f.name in prov}
    for name, value in given.items():
        if name == "part":
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ValueError(f"provenance field 'part' is not a part number: {_clipped(value)}")
        elif name == "topics":
            if not isinstance(value, list) or not all(isinstance(t, str) and t for t in value):
                raise ValueError(f"provenance field 'topics' is not a list of topic names: {_clipped(value)}")
            given[name] = tuple(value)
        elif not isinstance(value, str):
            raise ValueError(f"provenance field {name!r} is not a string: {_clipped(value)}")
    kinds = get_args(ProvenanceKind)
    if {**_NO_PROVENANCE, **given}["kind"] not in kinds:
        raise ValueError(f"provenance kind {_clipped(given['kind'])} is not one of {', '.join(kinds)}")
    return Provenance(**{**_NO_PROVENANCE, **given})


def _shown(path: Path, root: Path) -> str:
    """`path` under `root` as a relative path, else whole (it is in another folder of the list)."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _clipped(value: Any, width: int = 40) -> str:
    """`value` as JSON on one line, cut to `width` characters."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class CassetteIndex:
    """Every cassette under a directory, read once and looked up by key.

    Record mode adds to it as it writes, so a run that records and then replays in the same
    process sees its own cassettes. Extraction threads add while others look up or search for
    the nearest cassette, and iterating a dict that another thread grows raises: every read and
    write of `_by_key` holds `_lock`, and a search runs over a copy taken under it.
    """

    root: Path
    _by_key: dict[str, Cassette] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def load(cls, root: Path, *more: Path) -> CassetteIndex:
        """Every cassette under `root` and the `more` folders (a workspace's one set per topic);
        a request two of them answer differently is refused, whichever folders they are in."""
        index = cls(root)
        for folder in (root, *more):
            index._read(folder)
        return index

    def _read(self, folder: Path) -> None:
        if not folder.is_dir():
            return
        for path in sorted(folder.rglob("*.json")):
            try:
                cassette = read_cassette(path)
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
                raise PredigestError(
                    f"cassette {path} is not readable: {err}",
                    hint="fix or delete the file, then re-record it",
                ) from err
            known = self.get(cassette.exchange.key)
            if known is not None and known.exchange.response_body != cassette.exchange.response_body:
                raise PredigestError(
                    f"two cassettes under {self.root} answer the same request differently: "
                    f"{_shown(known.path, self.root)} ({known.provenance.kind}) and "
                    f"{_shown(path, self.root)} ({cassette.provenance.kind})",
                    hint="point the cassette folder at one set (e.g. cassettes/world, not cassettes/)",
                )
            self.add(cassette)

    def get(self, key: str) -> Cassette | None:
        with self._lock:
            return self._by_key.get(key)

    def add(self, cassette: Cassette) -> None:
        with self._lock:
            self._by_key[cassette.exchange.key] = cassette

    def all(self) -> list[Cassette]:
        with self._lock:
            return list(self._by_key.values())

    def own(self, doc: str, part: int, topics: Sequence[str]) -> list[Cassette]:
        """The cassettes made for `doc`'s `part` read for `topics`, whatever prompt asked: the only
        ones that may answer such a request, stale or re-keyed (another topic's answer is not this one's)."""
        return [
            c
            for c in self.all()
            if c.provenance.document == doc and part_of(c) == part and set(topics_of(c)) == set(topics)
        ]

    def stale(self, doc: str, part: int, topics: Sequence[str]) -> Cassette | None:
        """The first-turn answer for `doc`'s `part` read for `topics`, whatever prompt asked for it:
        the newest by date, then by file name, so the choice is the same on every machine."""
        pool = [c for c in self.own(doc, part, topics) if first_turn(c.exchange.request_body)]
        return max(pool, key=lambda c: (c.provenance.date, c.path.name), default=None)

    def miss(
        self, body: Any, *, doc: str = "", prompt: str = "", part: int = 0, topics: Sequence[str] = ()
    ) -> CassetteMiss:
        """The error for a request no cassette answers: the nearest cassette of the same document,
        part and topics and what differs, with what to do for its kind; or, when there is none,
        what the folder holds instead. Re-keying is advised only where it moves an answer onto
        its own request under another prompt."""
        topics = tuple(topics) or body_topics(body)
        head = f"no cassette {f'for {doc} ' if doc else ''}(request {body_key(body)[:12]}) in {self.root}"
        own = self.own(doc, part, topics)
        if not own:
            return CassetteMiss(f"{head}: {self._held_instead(doc, topics)}", hint=_NO_ANSWER_TODO, doc=doc)
        differences, nearest = min(
            ((describe_differences(c.exchange.request_body, body), c) for c in own),
            key=lambda pair: (len(pair[0]), pair[1].path.name),
        )
        what = "; ".join(differences) or "bodies differ only in formatting"
        kind, was = nearest.provenance.kind, nearest.provenance.prompt
        other_prompt = bool(prompt and was and not same_prompt(was, prompt))
        stamp = f" (cassette prompt {was}, request prompt {prompt})" if other_prompt else ""
        which = f"same document, part and {_topics_said(topics)}, {kind}"
        message = f"{head}: nearest is {nearest.path.name} ({which}): {what}{stamp}"
        if not other_prompt:
            return CassetteMiss(message, hint=f"its answer is another request's: {_NO_ANSWER_TODO}", doc=doc)
        return CassetteMiss(message, hint=_other_prompt_todo(kind, topics, self.root), doc=doc)

    def _held_instead(self, doc: str, topics: Sequence[str]) -> str:
        """What a folder without a cassette for this request holds: other topics' answers to the
        document, or answers of the topic to other documents only, or nothing for the topic."""
        cassettes = self.all()
        if not cassettes:
            return "the folder holds no cassettes"
        wanted = set(topics)
        others = sorted(
            {_topics_said(topics_of(c)) for c in cassettes if c.provenance.document == doc} - {_topics_said(topics)}
        )
        if others:
            return f"the folder answers this document only for {'; '.join(others)}, not for {_topics_said(topics)}"
        if any(set(topics_of(c)) == wanted for c in cassettes):
            return f"the folder holds {_topics_said(topics)}'s answers to other documents, none to this one"
        held = sorted({_topics_said(topics_of(c)) for c in cassettes})
        return f"the folder holds no answer for {_topics_said(topics)} (only for {'; '.join(held)})"


# what to do when no cassette of the request's own document, part and topics answers it
_NO_ANSWER_TODO = (
    "pass --cassettes a folder that holds this topic's answers, or record them with a key "
    "(OPENAI_API_KEY, --backend record), or write them by hand (`predigest cassettes add-reference`)"
)


def _other_prompt_todo(kind: str, topics: Sequence[str], root: Path) -> str:
    """What to do about the request's own answer kept under another prompt, by who wrote it."""
    if kind == "reference":
        flags = " ".join(f"-t {t}" for t in topics) or "-t TOPIC"
        return (
            "if the prompt change is intended, re-key this topic's reference answers: "
            f"`predigest cassettes rekey WORKSPACE -d DATE {flags} --cassettes {root}`"
            " (with the run's --prompt, if any)"
        )
    if kind == "relayed":
        return (
            "a relayed answer is never re-keyed: relay the model's answers to this prompt "
            "(`predigest prompt show` for each request, then `predigest cassettes relay`), "
            "or replay the old ones as stale with --allow-stale"
        )
    return (
        "re-record with a key (OPENAI_API_KEY, --backend record), or replay the old answers as stale with --allow-stale"
    )


def _topics_said(topics: Sequence[str]) -> str:
    """'topic inference', 'topics inference, risk', or 'no named topic'."""
    if not topics:
        return "no named topic"
    return f"topic {topics[0]}" if len(topics) == 1 else f"topics {', '.join(topics)}"


def same_prompt(a: str, b: str) -> bool:
    """Whether two prompt stamps name one prompt. An older cassette's stamp leaves out the schema
    hash (`extract@2#…` against `extract@2#…+schema#…`): it is compared on what it says."""
    (a_prompt, _, a_schema), (b_prompt, _, b_schema) = a.partition("+schema#"), b.partition("+schema#")
    return a_prompt == b_prompt and (not a_schema or not b_schema or a_schema == b_schema)


# the line the shipped prompts open the evening with: 'Evening: 2026-09-22 · topic: inference', or for
# a shared request '· topics: inference, llm-infra, risk'
_TOPICS_LINE = re.compile(r"^Evening: [^\n]*· topics?: ([^\n]+)$", re.M)


def body_topics(body: Any) -> tuple[str, ...]:
    """The topics a request body names on its 'Evening: …' line; () when it has none (a prompt of
    one's own may leave it out: its cassettes then say their topics in their provenance)."""
    if not isinstance(body, dict):
        return ()
    system, user, _ = _split_messages(body.get("messages"))
    m = _TOPICS_LINE.search(f"{system}\n{user}")
    return tuple(t.strip() for t in m.group(1).split(",") if t.strip()) if m else ()


def topics_of(c: Cassette) -> tuple[str, ...]:
    """The topics a cassette's answer is for: as its provenance says, else as its request says."""
    return c.provenance.topics or body_topics(c.exchange.request_body)


def cassettes_answer(requests: Sequence[ExtractionRequest], config: LLMSettings) -> bool:
    """Whether the cassette folder answers at least one of `requests` as they are asked today (or,
    with `allow_stale`, as an earlier prompt asked them), judged by the exact key a replay would
    look up, from the body the real client builds. Only documents some cassette was made for are
    asked, so an evening the cassettes never saw costs one directory read and loads no client."""
    index = CassetteIndex.load(*config.cassette_dirs)
    made_for = {c.provenance.document for c in index.all()}
    asked = [r for r in requests if r.doc_path in made_for]
    if not asked:
        return False
    from agent.extract.llm.reference import current_request_bodies

    bodies = current_request_bodies(asked, config)
    if any(index.get(body_key(body)) is not None for body in bodies):
        return True
    # with --allow-stale, an answer given to another prompt answers too (replayed, marked stale)
    return config.allow_stale and any(index.stale(r.doc_path, r.chunk, r.read_for) is not None for r in asked)


_PART = re.compile(r"part (\d+) of (\d+)")


def first_turn(body: Any) -> bool:
    """A request with no re-ask turns after the document (an initial question, not a correction)."""
    return isinstance(body, dict) and not _split_messages(body.get("messages"))[2]


def part_of(c: Cassette) -> int:
    """The 0-based part a cassette answers: from its provenance, else from 'part N of M' in the
    document message of a cassette whose provenance has no part, else 0 (a whole document)."""
    if c.provenance.part is not None:
        return c.provenance.part
    body = c.exchange.request_body
    user = _split_messages(body.get("messages"))[1] if isinstance(body, dict) else ""
    m = _PART.search(user[:2000])
    return int(m.group(1)) - 1 if m else 0


def describe_differences(old: Any, new: Any) -> list[str]:
    """Which parts of a chat-completion request changed, in the words a prompt editor uses."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return ["request body changed"]
    out: list[str] = []
    if old.get("model") != new.get("model"):
        out.append(f"model changed ({old.get('model')!r} -> {new.get('model')!r})")
    old_sys, old_user, old_rest = _split_messages(old.get("messages"))
    new_sys, new_user, new_rest = _split_messages(new.get("messages"))
    if old_sys != new_sys:
        out.append(f"system prompt changed ({first_difference(old_sys, new_sys)})")
    if old_user != new_user:
        out.append(f"document changed (user message; {first_difference(old_user, new_user)})")
    if old_rest != new_rest:
        if len(old_rest) != len(new_rest):
            out.append(f"re-ask turns differ ({len(old_rest)} -> {len(new_rest)} messages after the document)")
        else:  # e.g. another validation error text (pydantic puts its version in the error URL)
            diff = first_difference(canonical_json(old_rest), canonical_json(new_rest))
            out.append(f"re-ask turns differ ({diff})")
    schema = sorted(k for k in _SCHEMA_KEYS if old.get(k) != new.get(k))
    if schema:
        out.append(f"schema changed ({', '.join(schema)})")
    params = sorted(
        k for k in (old.keys() | new.keys()) - _SCHEMA_KEYS - {"model", "messages"} if old.get(k) != new.get(k)
    )
    if params:
        shown = ", ".join(f"{k} {old.get(k)!r} -> {new.get(k)!r}" for k in params)
        out.append(f"parameters changed ({shown})")
    return out


def _split_messages(messages: Any) -> tuple[str, str, list[Any]]:
    """(system text, first user message text, everything after it) of a messages list."""
    if not isinstance(messages, list):
        return "", "", []
    system: list[str] = []
    user = ""
    rest: list[Any] = []
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        content = msg.get("content") if isinstance(msg, dict) else msg
        text = content if isinstance(content, str) else canonical_json(content)
        if role in ("system", "developer") and not user:
            system.append(text)
        elif role == "user" and not user:
            user = text
        else:
            rest = messages[i:]
            break
    return "\n".join(system), user, rest


def first_difference(old: str, new: str, context: int = 24) -> str:
    """'at char N: "…old…" -> "…new…"' around where two texts first part ways."""
    i = 0
    for i, (a, b) in enumerate(zip(old, new, strict=False)):  # noqa: B007
        if a != b:
            break
    else:
        i = min(len(old), len(new))
    start = max(0, i - context // 2)

    def clip(text: str) -> str:
        piece = text[start : i + context].replace("\n", " ")
        return ("…" if start else "") + piece + ("…" if i + context < len(text) else "")

    return f'at char {i}: "{clip(old)}" -> "{clip(new)}"'


def answer_message(body: Any, text: str, call_id: str) -> tuple[dict[str, Any], str]:
    """The assistant message (and finish reason) that carries `text` as the answer to `body`,
    shaped for the request's mode: a tool call when tools were offered, else message content.
    One place for the wire shape that reference answers, relayed answers and the loopback
    endpoints all produce."""
    if isinstance(body, dict) and body.get("tools"):
        name = body["tools"][0]["function"]["name"]
        call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    return {"role": "assistant", "content": text}, "stop"


def completion(body: Any, text: str, model: str, tag: str, created: int = 0, usage: Any = None) -> dict[str, Any]:
    """The chat completion that carries `text` unchanged as the answer to `body`, with ids made
    from `tag`; without `usage` when the tokens spent were not reported with the answer."""
    kind, _, n = tag.partition("-")
    message, finish = answer_message(body, text, f"call_{kind}_{n}")
    return {
        "id": f"chatcmpl-{tag}",
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        **({} if usage is None else {"usage": usage}),
    }
