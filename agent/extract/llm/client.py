"""The one way predigest builds the openai + instructor client and asks for an extraction.

The extractor and the reference-cassette writer both go through `create_extraction`, so a
reference cassette carries exactly the request body the extractor will send.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

import httpx2
import instructor
from openai import OpenAI

from agent.extract import Answer, ExtractionRequest
from agent.extract.llm.config import LLMConfig, require_key

INSTRUCTOR_MODES: dict[str, instructor.Mode] = {
    "tools": instructor.Mode.TOOLS,
    "json_schema": instructor.Mode.JSON_SCHEMA,
}
_OFFLINE_KEY = "offline-no-key"  # the client insists on a key; offline transports never send it


def build_client(config: LLMConfig, transport: httpx2.BaseTransport) -> instructor.Instructor:
    """An instructor client over `transport`, with the openai client's own retries off
    (`max_retries=0`): our retry layer owns them, so the two never multiply."""
    _quiet_instructor()
    require_key(config)
    openai_client = OpenAI(
        api_key=config.api_key or _OFFLINE_KEY,
        base_url=config.base_url,
        max_retries=0,
        timeout=config.timeout_s,
        http_client=httpx2.Client(transport=transport, timeout=config.timeout_s),
    )
    return instructor.from_openai(openai_client, mode=INSTRUCTOR_MODES[config.mode])


def _quiet_instructor() -> None:
    """instructor logs every failed attempt at ERROR; with no logging configured, Python prints
    those to stderr. We report failures ourselves (one line per document), so give its logger a
    NullHandler: the messages still reach any handler the application configures (--debug)."""
    logger = logging.getLogger("instructor")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


@cache
def _response_model(schema: type[Answer]) -> type[Answer]:
    """The answer's schema (`FileExtraction`, `SharedExtraction`, `EveningComposition`) wrapped as
    instructor's response schema, once per process.

    Given the bare model, instructor wraps it in a new class on every call, so its schema cache
    (keyed on the class) never hits and the JSON schema is generated again for each request:
    most of the CPU a call costs here. Given a class that is already wrapped, it uses it as is.
    The request body is the same either way (same name, same schema), so cassette keys hold.
    """
    wrapped: type[Answer] = instructor.openai_schema(schema)
    return wrapped


def create_extraction(
    client: instructor.Instructor,
    request: ExtractionRequest,
    config: LLMConfig,
    *,
    max_retries: int | None = None,
) -> Answer:
    """Ask for one document's extraction (or one evening's composition); a schema-invalid answer is
    re-asked with the error (each re-ask is its own exchange) up to `max_retries` times. A shared
    request's answer is validated against its topics, a composition against the rules' checker."""
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(m) for m in request.messages],
        "temperature": config.temperature,
    }
    if (context := request.validation_context()) is not None:
        kwargs["context"] = context
    return client.chat.completions.create(
        response_model=_response_model(request.answer_schema()),
        max_retries=config.max_validation_retries if max_retries is None else max_retries,
        **kwargs,
    )
