"""The request body instructor sends for an extraction, built without instructor or openai.

Importing those two takes ~1.5 s, most of what a replayed demo run waits for. When every
request of an evening is answered by a stored validated answer, neither is needed: the body
(whose canonical form is the cassette and cache key) is rebuilt here as instructor 1.17 builds
it from `FileExtraction`, and only a request whose key is found is served without the client.
tests/test_llm_request_body.py proves the built body equal to the one the real client sends,
in both modes, for every document of the demo evening; with another instructor installed the
extractor falls back to learning the body through the client.
"""

from __future__ import annotations

from functools import cache
from importlib import metadata
from typing import Any

from agent.extract import ExtractionRequest
from agent.extract.llm.cassettes import CassetteIndex, body_key
from agent.extract.llm.config import LLMConfig
from schemas.extraction import FileExtraction

MIRRORED_INSTRUCTOR = "1.17."  # the release whose request shape `_response_part` mirrors


@cache
def mirrors_installed_instructor() -> bool:
    """Whether the installed instructor is the release this module mirrors (read from its
    metadata, which costs no import)."""
    try:
        return metadata.version("instructor").startswith(MIRRORED_INSTRUCTOR)
    except metadata.PackageNotFoundError:
        return False


@cache
def _response_part(mode: str) -> dict[str, Any] | None:
    """The schema part of the body for `mode`, as instructor 1.17 writes it; None for a mode
    not mirrored here.

    tools: one function named after the model, described by its docstring, whose parameters
    are the JSON schema without its title and description and with `required` sorted; the
    tool is forced by `tool_choice`. json_schema: the whole JSON schema under `response_format`.
    """
    schema = FileExtraction.model_json_schema()
    name = FileExtraction.__name__
    if mode == "tools":
        parameters = {k: v for k, v in schema.items() if k not in ("title", "description")}
        parameters["required"] = sorted(schema.get("required", []))
        description = schema.get("description") or (
            f"Correctly extracted `{name}` with all the required parameters with correct types"
        )
        function = {"name": schema["title"], "description": description, "parameters": parameters}
        return {
            "tools": [{"type": "function", "function": function}],
            "tool_choice": {"type": "function", "function": {"name": function["name"]}},
        }
    if mode == "json_schema":
        return {"response_format": {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}}
    return None


def request_body(request: ExtractionRequest, config: LLMConfig) -> dict[str, Any] | None:
    """The body the client would send for `request` under `config`, or None when it cannot be
    built here (another instructor release, an unknown mode): the caller then asks the client.

    Read it, never change it: its schema part is shared by every body of the process (callers
    only compute its key and read the tool's name; copying the schema for each of them was a
    tenth of a live call's CPU)."""
    if not mirrors_installed_instructor():
        return None
    part = _response_part(config.mode)
    if part is None:
        return None
    return {
        "messages": [dict(m) for m in request.messages],
        "model": config.model,
        "temperature": config.temperature,
        **part,
    }


def cassettes_answer(requests: list[ExtractionRequest], config: LLMConfig) -> bool:
    """Whether the cassette folder answers at least one of `requests` as they are asked today.

    Only documents some cassette was made for are tried, so an evening the cassettes never saw
    costs one directory read; the rest compare the exact request key a replay would look up,
    from the body built here, or from the client's when it cannot be built or is not found
    (so a miss is judged exactly as before)."""
    index = CassetteIndex.load(config.cassette_dir)
    made_for = {c.provenance.document for c in index.all()}
    for request in requests:
        if request.doc_path not in made_for:
            continue
        built = request_body(request, config)
        if built is not None and index.get(body_key(built)) is not None:
            return True
        from agent.extract.llm.reference import current_request_body  # imports the client (~1.5 s)

        if index.get(body_key(current_request_body(request, config))):
            return True
    return False
