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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agent.core.errors import PromptError
from agent.core.settings import LLMSettings
from agent.extract import ExtractionRequest, PromptStamp
from agent.extract.chunking import split_sections
from agent.plan.anchors import Anchor, AnchorRegistry
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


def format_anchors(anchors: list[Anchor]) -> str:
    if not anchors:
        return "(none that match this document)"
    lines = []
    for a in anchors:
        key = f"arXiv {a.display_id or a.key}" if a.kind == "arxiv" else a.key
        what = "" if a.kind == "subject" else f" · {a.label[:70]}"
        lines.append(f"- [{a.kind}] {key}{what} · {a.when}")
    return "\n".join(lines)


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
    return _requests(
        docs, template, llm, lambda chunk: {**base, "anchors": format_anchors(registry.relevant_to(chunk))}, topic=topic
    )


def _requests(
    docs: list[SourceDoc],
    template: Template,
    llm: LLMSettings,
    values: Callable[[str], dict[str, str]],
    topics: tuple[str, ...] = (),
    topic: str = "",
) -> list[ExtractionRequest]:
    """A request per part of each document, its template filled with `values(part)` and the part's own."""
    requests = []
    for doc in docs:
        chunks = split_sections(doc.text, llm.chunk_tokens)
        for i, chunk in enumerate(chunks[: llm.max_parts]):
            system, user = template.render({**values(chunk), **_doc_values(doc, i, len(chunks), chunk)})
            requests.append(ExtractionRequest(doc.path, (system, user), template.stamp, i, len(chunks), topics, topic))
    return requests


def _topic_values(ws: Workspace, topic: str, registry: AnchorRegistry) -> dict[str, str]:
    t = ws.topic(topic)
    return {
        "topic": topic,
        "profile": t.profile.strip() or f"Everything about {topic}.",
        "adjacent": t.adjacent.strip() or "(not configured)",
        "living": t.living,
        "sections": "\n".join(f"- {s}" for s in registry.sections) or "(the living document has no § sections yet)",
        "open_items": "\n".join(f"- {o.item.title}（since {o.origin}）" for o in registry.briefed_items) or "(none)",
    }


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
        f'### Topic "{values["topic"]}"\n'
        f"Profile — what counts as on-topic:\n{values['profile']}\n\n"
        f"Adjacent topics — mention, but do not claim:\n{values['adjacent']}\n\n"
        f"Sections of its living document ({values['living']}); suggest one of these, or propose a new"
        f' block ("§1.4 …") when nothing fits:\n{values["sections"]}\n\n'
        "Open to-verify items from its earlier briefings (put one in this topic's `resolved` only if the"
        f" document settles it, quoting the sentence that does):\n{values['open_items']}"
    )


def build_shared_requests(
    docs: list[SourceDoc],
    registries: dict[str, AnchorRegistry],
    ws: Workspace,
    template: Template,
    llm: LLMSettings,
) -> list[ExtractionRequest]:
    """One request per document (or part) for every topic of `registries` at once. What every
    request of the evening shares — the system prompt with each topic's profile, adjacent text,
    sections and open items — is the system message, byte-identical across the evening's
    requests, so a provider's prefix cache serves it; what is the document's own (its anchors per
    topic, its text) is the user message, after it."""
    topics = tuple(registries)
    blocks = "\n\n".join(_topic_block(_topic_values(ws, t, registries[t])) for t in topics)
    date = next(iter(registries.values())).date.isoformat()
    shared = {"topics": blocks, "topic_names": ", ".join(topics), "date": date}

    def values(chunk: str) -> dict[str, str]:
        anchors = "\n".join(f"#### {t}\n{format_anchors(registries[t].relevant_to(chunk))}" for t in topics)
        return {**shared, "anchors": anchors}

    return _requests(docs, template, llm, values, topics)


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
