"""Prompt templates as files: versioned, hashed, rendered strictly, inspectable.

A template is Markdown with front matter (`name`, `version`) and two sections, `## system` and
`## user`, holding `{{variable}}` placeholders. A placeholder without a value is an error, not
an empty string: a silently blank anchor list would change what the model judges.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.core.dates import MONTH_DAY, month_day
from agent.core.errors import PromptError
from agent.core.novelty import NOVELTY
from agent.core.settings import LLMSettings
from agent.core.text import facts
from agent.extract import ExtractionRequest, PromptStamp
from agent.extract.chunking import split_sections
from agent.plan.anchors import ANCHOR_ID, ITEM_ID, Anchor, AnchorRegistry, OpenItem
from agent.plan.workspace import Workspace
from schemas.compose import EveningComposition
from schemas.documents import SourceDoc
from schemas.extraction import FileExtraction, SharedExtraction

# The templates ship with the package (`prompts` is package data), so a wheel or pipx install finds them.
PROMPTS_DIR = Path(str(resources.files("prompts")))
_VAR = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_FRONT = re.compile(r"^---\n(.*?)\n---\n", re.S)


@dataclass(frozen=True)
class Template:
    stamp: PromptStamp
    system: str
    user: str
    path: Path

    @property
    def variables(self) -> set[str]:
        return set(_VAR.findall(self.system)) | set(_VAR.findall(self.user))

    def render(self, values: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
        """The system and user messages with every placeholder filled."""
        missing = sorted(self.variables - values.keys())
        if missing:
            raise PromptError(
                f"prompt {self.stamp} needs {', '.join(missing)} but got no value for it",
                hint=f"pass it, or remove the placeholder from {self.path}",
            )

        def fill(s: str) -> str:
            return _VAR.sub(lambda m: values[m.group(1)], s)

        return {"role": "system", "content": fill(self.system)}, {"role": "user", "content": fill(self.user)}


SHARED = "extract-shared"  # the template of one request per document for every topic of the evening
COMPOSE = "compose"  # the template of one request per topic and evening: the editor's


def response_schema(name: str) -> type[BaseModel]:
    """The answer a template asks for: the shared template's carries a part per topic, the composing
    one the evening's stories."""
    return {SHARED: SharedExtraction, COMPOSE: EveningComposition}.get(name, FileExtraction)


def load_template(name: str = "extract", directory: Path = PROMPTS_DIR) -> Template:
    return load_template_file(directory / f"{name}.md", name)


def load_template_file(path: Path, name: str = "") -> Template:
    """A template from any file: a prompt variant beside prompts/extract.md names itself in its header."""
    name = name or Path(path).stem
    try:
        raw = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PromptError(f"prompt template {path} cannot be read: {e}", hint="restore it from git") from e
    front = _FRONT.match(raw)
    meta = dict(re.findall(r"^(\w+):\s*(.+?)\s*$", front.group(1), re.M)) if front else {}
    if "version" not in meta:
        raise PromptError(f"{path} has no `version:` in its front matter", hint="add ---\\nname: …\\nversion: 1\\n---")
    body = raw[front.end() :] if front else raw
    parts = re.split(r"^## (system|user)\s*$", body, flags=re.M)
    sections = dict(zip(parts[1::2], (p.strip("\n") for p in parts[2::2]), strict=False))
    if set(sections) != {"system", "user"}:
        raise PromptError(
            f"{path} must have exactly a '## system' and a '## user' section", hint="see prompts/extract.md"
        )
    name = meta.get("name", name)
    # the schema's hash too, so records can tell a schema change from a prompt change
    schema = json.dumps(response_schema(name).model_json_schema(), sort_keys=True, ensure_ascii=False)
    stamp = PromptStamp(name, meta["version"], _sha12(raw), _sha12(schema))
    return Template(stamp, sections["system"], sections["user"], path)


def _sha12(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


# --- requests for documents ---------------------------------------------------------------------


_FENCE = re.compile(r"<(\s*/?\s*)(document)", re.I)


def contain(text: str) -> str:
    """The document cannot open or close the prompt's `<document>` fence from inside: a zero-width
    joiner goes into any such tag it contains. Deterministic, and a document without one is sent
    unchanged, so cassette keys stay stable."""
    return _FENCE.sub(lambda m: f"<\u200d{m.group(1)}{m.group(2)}", text)


def format_anchors(registry: AnchorRegistry, text: str) -> tuple[str, tuple[str, ...]]:
    """The anchors a request lists for `text`, one subject a line ('- A7 · name · evenings · holds:
    facts'), and the ids listed: what an answer may cite."""
    lines = registry.listing(text)
    if not lines:
        return "(none that match this document)", ()
    ids = tuple(registry.anchor_id(first) for first, _ in lines)
    return "\n".join(_listed_line(i, _anchor_line(group)) for i, (_, group) in zip(ids, lines, strict=True)), ids


HELD_FACTS = 10  # facts listed after an anchor, at most: enough to tell covered from supplement, bounded


def _anchor_line(group: tuple[Anchor, ...]) -> str:
    """One subject as the model reads it: its name (`anchor_name`), the evenings that told it, and
    the facts it already holds beyond its name, in the order told."""
    name = anchor_name(group)
    evenings = sorted({d for a in group for d in a.evenings})
    when = ", ".join(month_day(d) for d in evenings) if evenings else _UNDATED
    named, held = facts(name), list[str]()
    for text in dict.fromkeys(a.text for a in group):  # in the order told, as far as the line shows
        held += [f for f in _told(text) if f not in named and f not in held]
        if len(held) >= HELD_FACTS:
            break
    return f"{name} · {when}" + (f"{_HOLDS}{', '.join(held[:HELD_FACTS])}" if held else "")


@lru_cache(maxsize=4096)  # each document's prompt lists the subjects it names: one anchor, many prompts
def _told(text: str) -> tuple[str, ...]:
    """The facts one anchor's text holds, in the order it tells them, without the briefing's bookkeeping."""
    said = _BOOKKEEPING.sub(" ", text)
    return tuple(sorted((f for f in facts(said) if not _DAY_OR_COUNT.fullmatch(f)), key=lambda f: (_place(f, said), f)))


def anchor_name(group: tuple[Anchor, ...]) -> str:
    """The name a subject's line gives it: a subject's title (else the link) with the papers told
    with it that the title does not name, or a paper alone. What a re-keyed answer's cited id is
    followed by from one request to the next (`listed_in`)."""
    subjects = [a for a in group if a.kind == "subject"]
    first = group[0]
    if not subjects and first.kind == "arxiv":
        return f"arXiv {first.display_id or first.key} {first.label[:70]}"
    base = subjects[0].label if subjects else f"{first.key} {first.label[:70]}"
    papers = dict.fromkeys(f"arXiv {a.display_id or a.key}" for a in group if a.kind == "arxiv")
    return " · ".join([base, *(p for p in papers if p.split()[1] not in base)])


# a bare count under 100, a day ('9-21'), a year or a date: the briefing's own bookkeeping, not what
# the subject holds ('#3', '9-20 e1prep', '2026-09-19 发布'); the rules still compare them
_BOOKKEEPING = re.compile(r"§\d+(?:\.\d+)*|\S*e1prep\S*")  # a section ('§1.3') or a briefing ('9-20 … e1prep') named
_DAY_OR_COUNT = re.compile(r"\d{1,2}|\d{1,2}-\d{1,2}|(?:19|20)\d\d(?:-\d\d){0,2}")


# --- what a request lists under ids, read back from its text ---------------------------------------
# The lines above are written with these marks and read back with them, next to each other, so that
# what an id meant in a stored request (a cassette's) can be told, and the two cannot drift apart.

_UNDATED = "living"  # the evenings of a subject only the living document tells, undated
_HOLDS = " · holds: "
_SINCE = " · since "
_TOPIC_HEADING = '### Topic "{}"'  # a shared system message's block of one topic (its open items)
_ANCHORS_HEADING = "#### {}"  # a shared user message's block of one topic's anchors
_DOCUMENT = "<document path="  # where the document opens: nothing after it is the prompt's
_LISTED = re.compile(rf"- ((?:{ANCHOR_ID}|{ITEM_ID})\d+) · (.+)")
_NAMED = re.compile(rf"(.+?) · (?:{_UNDATED}|{MONTH_DAY}(?:, {MONTH_DAY})*)(?:{re.escape(_HOLDS)}.*)?")


def _listed_line(ident: str, text: str) -> str:
    """One anchor or open item as listed, under its id: '- A7 · …', '- Q2 · …'."""
    return f"- {ident} · {text}"


def _item_line(registry: AnchorRegistry, item: OpenItem) -> str:
    """An open item as listed: '- Q2 · title · since 9-21'."""
    return _listed_line(registry.item_id(item), f"{item.item.title}{_SINCE}{item.origin}")


@dataclass
class Listing:
    """What a request lists for one topic under ids, read back from its text: each id with the
    subject it names there. An id is a place in the registry, so only the subject tells what it meant
    once the registry has moved."""

    anchors: dict[str, str] = field(default_factory=dict)  # 'A7' -> the subject's name (`anchor_name`)
    items: dict[str, str] = field(default_factory=dict)  # 'Q2' -> the open item's title

    def _of(self, ident: str) -> dict[str, str]:
        return self.items if ident.startswith(ITEM_ID) else self.anchors

    def add(self, ident: str, subject: str) -> None:
        """`ident` names `subject` (as `listed_in` reads a request)."""
        self._of(ident)[ident] = subject

    def subject(self, ident: str) -> str | None:
        """What `ident` names in this listing, or None when it is not listed."""
        return self._of(ident).get(ident)

    def ids_of(self, ident: str, subject: str) -> list[str]:
        """The ids of `ident`'s kind (anchor or open item) this listing names `subject` under."""
        return [i for i, s in self._of(ident).items() if s == subject]


def listed_in(messages: Sequence[Any]) -> dict[str, Listing]:
    """Per topic, what a request's messages list under ids, as this module renders them: under ''
    a one-topic request's (its lines stand under no topic heading); a shared request's under each
    topic's heading, its anchors in the user message, its open items in the system message. Only the
    opening system and user messages are read, the user message up to the document: a line the
    document holds is the document's. A line that does not read as listed is passed over."""
    out: dict[str, Listing] = {}
    system = [m for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), {})
    for message, heading in [*((m, _TOPIC_HEADING) for m in system), (user, _ANCHORS_HEADING)]:
        content = message.get("content")
        if isinstance(content, str):
            _read_listing(content.split(f"\n{_DOCUMENT}", 1)[0], heading, out)
    return out


def _read_listing(text: str, heading: str, out: dict[str, Listing]) -> None:
    """Add the lines `text` lists to `out`, each under the topic of the last `heading` above it."""
    before, _, after = heading.partition("{}")
    topic = ""
    for line in text.splitlines():
        if line.startswith(before) and line.endswith(after) and len(line) > len(before) + len(after):
            topic = line[len(before) : len(line) - len(after)]
            continue
        if (listed := _listed_subject(line)) is not None:
            ident, subject = listed
            out.setdefault(topic, Listing()).add(ident, subject)


def _listed_subject(line: str) -> tuple[str, str] | None:
    """(id, subject) of a listed line: an anchor's name (`_anchor_line` without its evenings and
    facts), an open item's title (`_item_line` without its origin); None for any other line."""
    m = _LISTED.fullmatch(line)
    if m is None:
        return None
    ident, said = m[1], m[2]
    if ident.startswith(ANCHOR_ID):
        named = _NAMED.fullmatch(said)
        return (ident, named[1]) if named else None
    title, since, _ = said.rpartition(_SINCE)
    return (ident, title) if since else None


def _place(fact: str, text: str) -> int:
    """Where `fact` is first told in `text` (normalised facts not found verbatim go last)."""
    i = text.lower().find(fact)
    return i if i >= 0 else len(text)


def build_requests(
    docs: list[SourceDoc],
    registry: AnchorRegistry,
    ws: Workspace,
    topic: str,
    template: Template,
    llm: LLMSettings | None = None,
) -> list[ExtractionRequest]:
    """One request per document, or per part of a long one, at most `max_parts` per document: a
    request's `chunks` keeps the true number of parts, so the parts not sent can be reported."""
    llm = llm or ws.config.llm
    base = {**_topic_values(ws, topic, registry), "date": registry.date.isoformat()}
    items = _item_ids(registry)

    def values(doc: SourceDoc, chunk: str) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
        anchors, ids = format_anchors(registry, chunk)
        return {**base, "anchors": anchors}, {topic: ids + items}

    return _requests(docs, template, llm, values, topic=topic)


def _requests(
    docs: list[SourceDoc],
    template: Template,
    llm: LLMSettings,
    values: Callable[[SourceDoc, str], tuple[dict[str, str], dict[str, tuple[str, ...]]]],
    topic: str = "",
) -> list[ExtractionRequest]:
    """A request per part of each document, its template filled with `values(doc, part)` and the
    part's own; `values` also gives, per topic the part is read for, the ids it listed (all an answer
    may cite). Without `topic`, a request is a shared one, for the topics `values` listed."""
    requests = []
    for doc in docs:
        chunks = split_sections(doc.text, llm.chunk_tokens)
        for i, chunk in enumerate(chunks[: llm.max_parts]):
            filled, ids = values(doc, chunk)
            system, user = template.render({**filled, **_doc_values(doc, i, len(chunks), chunk)})
            topics = () if topic else tuple(ids)
            requests.append(
                ExtractionRequest(doc.path, (system, user), template.stamp, i, len(chunks), topics, topic, listed=ids)
            )
    return requests


def _topic_values(ws: Workspace, topic: str, registry: AnchorRegistry) -> dict[str, str]:
    t = ws.topic(topic)
    return {
        "topic": topic,
        "profile": t.profile.strip() or f"Everything about {topic}.",
        "adjacent": t.adjacent.strip() or "(not configured)",
        "living": t.living,
        "sections": "\n".join(f"- {s}" for s in registry.sections) or "(the living document has no § sections yet)",
        "open_items": "\n".join(_item_line(registry, o) for o in registry.briefed_items) or "(none)",
        "novelty": NOVELTY,
    }


def _item_ids(registry: AnchorRegistry) -> tuple[str, ...]:
    return tuple(registry.item_id(o) for o in registry.briefed_items)


def _doc_values(doc: SourceDoc, part: int, parts: int, chunk: str) -> dict[str, str]:
    return {
        "doc_path": html.escape(doc.path).replace("\n", "&#10;").replace("\r", "&#13;"),  # a name is data
        "doc_kind": doc.kind,
        "chunk_note": f", part {part + 1} of {parts}" if parts > 1 else "",
        "document": contain(chunk.strip()),
    }


def _topic_block(values: dict[str, str]) -> str:
    """One topic's texts in the shared system prompt: the same for every document of the evening."""
    return (
        f"{_TOPIC_HEADING.format(values['topic'])}\n"
        f"Profile — what counts as on-topic:\n{values['profile']}\n\n"
        f"Adjacent topics — mention, but do not claim:\n{values['adjacent']}\n\n"
        f"Sections of its living document ({values['living']}); suggest one of these, or propose a new"
        f' block ("§1.4 …") when nothing fits:\n{values["sections"]}\n\n'
        "Open to-verify items from its earlier briefings (put one in this topic's `resolved`, by its id, only"
        f" if the document settles it, quoting the sentence that does):\n{values['open_items']}"
    )


def build_shared_requests(
    docs: list[SourceDoc],
    registries: dict[str, AnchorRegistry],
    read_by: Mapping[str, tuple[str, ...]],
    ws: Workspace,
    template: Template,
    llm: LLMSettings,
) -> list[ExtractionRequest]:
    """One request per document (or part) for the topics of `registries` that read it (`read_by`:
    document path -> topics, in the evening's order). What every request of the evening shares —
    the system prompt with each topic's profile, adjacent text, sections and open items — is the
    system message, byte-identical across the evening's requests, so a provider's prefix cache
    serves it; what is the document's own (the topics it is read for, their anchors, its text) is
    the user message, after it. A topic that does not read a document is not asked about it."""
    topics = tuple(registries)
    blocks = "\n\n".join(_topic_block(_topic_values(ws, t, registries[t])) for t in topics)
    date = next(iter(registries.values())).date.isoformat()
    shared = {"topics": blocks, "topic_names": ", ".join(topics), "date": date, "novelty": NOVELTY}

    def values(doc: SourceDoc, chunk: str) -> tuple[dict[str, str], dict[str, tuple[str, ...]]]:
        reading = read_by[doc.path]
        listed = {t: format_anchors(registries[t], chunk) for t in reading}
        anchors = "\n".join(f"{_ANCHORS_HEADING.format(t)}\n{listed[t][0]}" for t in reading)
        ids = {t: listed[t][1] + _item_ids(registries[t]) for t in reading}
        return {**shared, "read_for": ", ".join(reading), "anchors": anchors}, ids

    return _requests(docs, template, llm, values)


# --- the composing request of a topic's evening -----------------------------------------------------


def compose_path(topic: str) -> str:
    """What a composing request is filed under, where an extraction names its document."""
    return f"compose/{topic}"


def build_compose_request(
    ws: Workspace,
    topic: str,
    registry: AnchorRegistry,
    template: Template,
    desk: dict[str, str],
    context: Mapping[str, Any],
) -> ExtractionRequest:
    """One topic's evening as the editor is asked it: the topic's texts, and `desk` (the claims,
    documents, anchors and disputes under their ids, from `agent.rules.editor`). `context` holds the
    rules' checker, which validates the answer."""
    values = {**_topic_values(ws, topic, registry), **desk, "date": registry.date.isoformat()}
    system, user = template.render(values)
    stamp = template.stamp
    return ExtractionRequest(compose_path(topic), (system, user), stamp, topic=topic, kind="compose", context=context)
