"""The one way predigest builds the openai + instructor client and asks for an extraction.

The extractor and the reference-cassette writer both go through `create_extraction`, so a
reference cassette carries exactly the request body the extractor will send.
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

import httpx2
import instructor
from openai import OpenAI
from openai.types.chat import ChatCompletion

from agent.extract import ExtractionRequest
from agent.extract.llm.cassettes import canonical_request
from agent.extract.llm.config import LLMConfig, require_key
from schemas.extraction import FileExtraction

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
    completions = openai_client.chat.completions
    completions.create = _posting_canonical(openai_client, completions.create)  # type: ignore[method-assign]
    client = instructor.from_openai(openai_client, mode=INSTRUCTOR_MODES[config.mode])
    _check_response_models_once()
    _freeze_imports_once()
    return client


@cache
def _freeze_imports_once() -> None:
    """Keep the cyclic collector off what importing the client left: ~125,000 objects (openai's
    types, instructor, pydantic's schemas) that live as long as the process. A live evening's
    allocations trigger a full collection once or twice, and each walked all of them again:
    ~0.1 s, as much as a tenth of the CPU of 200 documents at 0 ms. Objects freed by their
    reference count still are; once per process, so that a long-lived one (the eval harness,
    the tests) keeps collecting what it makes later."""
    gc.freeze()


# What `create` takes beside the body: request options, which the plain post does not carry.
_REQUEST_OPTIONS = frozenset({"extra_headers", "extra_query", "extra_body", "timeout"})


def _posting_canonical(openai_client: OpenAI, create: Callable[..., Any]) -> Callable[..., Any]:
    """`chat.completions.create` as the client's documented `post` of a body serialised once.

    `create` walks the whole body against the API's parameter types before sending it (a fifth
    of the client's CPU per call, for a 25 kB body it leaves as it is), serialises it, and each
    layer of our transport chain then parses it again to hash it. Our bodies are plain JSON
    (instructor's tools or response format, our messages), so they go out as `canonical_request`
    bytes, which every layer keys without parsing. The answer is parsed by the same client code
    into the same `ChatCompletion`, and auth, headers, timeouts and errors are the client's own.
    Anything else (a streamed call, request options, a body that is not plain JSON) goes through
    `create` as it would have. `tests/test_llm_client.py` holds the body sent either way equal."""

    def post(**params: Any) -> Any:
        if params.get("stream") or not _REQUEST_OPTIONS.isdisjoint(params):
            return create(**params)
        try:
            content = canonical_request(params)
        except (TypeError, ValueError):
            return create(**params)
        return openai_client.post("/chat/completions", cast_to=ChatCompletion, content=content)

    return post


def _quiet_instructor() -> None:
    """instructor logs every failed attempt at ERROR; with no logging configured, Python prints
    those to stderr. We report failures ourselves (one line per document), so give its logger a
    NullHandler: the messages still reach any handler the application configures (--debug)."""
    logger = logging.getLogger("instructor")
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


_REJECT = "reject_async_validators"
_REJECT_HOME = "instructor.v2.validation.async_validators"


def _check_response_models_once() -> None:
    """Make instructor's async-validator check walk each response model once per process.

    instructor 1.17 refuses response models carrying its async validators, and checks it about
    seven times per call, each time walking the whole model graph (every class's attributes
    through its MRO): a third of the CPU a live call costs in this process, which under the GIL
    is what keeps 16 calls from being in flight at once. The check's answer depends only on the
    class, so a model that passed once passes again; a model that fails is walked (and refused)
    every time, as before. Every instructor module that bound the original function gets the
    remembering one. Releases without the function are left alone.
    """
    try:
        home = importlib.import_module(_REJECT_HOME)
    except ImportError:
        return
    original = getattr(home, _REJECT, None)
    if original is None or getattr(original, "remembers_passes", False):
        return
    remembering = _remembering(original)
    for name, module in list(sys.modules.items()):
        if name.startswith("instructor") and getattr(module, _REJECT, None) is original:
            setattr(module, _REJECT, remembering)


def _remembering(check: Callable[[Any], None]) -> Callable[[Any], None]:
    passed: set[Any] = set()

    def remembering(response_model: Any) -> None:
        try:
            if response_model in passed:
                return
        except TypeError:  # an unhashable annotation: check it every time
            check(response_model)
            return
        check(response_model)
        passed.add(response_model)

    remembering.remembers_passes = True  # type: ignore[attr-defined]
    remembering.__wrapped__ = check  # type: ignore[attr-defined]
    return remembering


@cache
def _response_model() -> type[FileExtraction]:
    """`FileExtraction` wrapped as instructor's response schema, once per process.

    Given the bare model, instructor wraps it in a new class on every call, so its schema cache
    (keyed on the class) never hits and the JSON schema is generated again for each request:
    most of the CPU a call costs here. Given a class that is already wrapped, it uses it as is.
    The request body is the same either way (same name, same schema), so cassette keys hold.
    """
    wrapped: type[FileExtraction] = instructor.openai_schema(FileExtraction)
    return wrapped


def create_extraction(
    client: instructor.Instructor,
    request: ExtractionRequest,
    config: LLMConfig,
    *,
    max_retries: int | None = None,
) -> FileExtraction:
    """Ask for one document's extraction; a schema-invalid answer is re-asked with the error
    (each re-ask is its own exchange) up to `max_retries` times."""
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": [dict(m) for m in request.messages],
        "temperature": config.temperature,
    }
    return client.chat.completions.create(
        response_model=_response_model(),
        max_retries=config.max_validation_retries if max_retries is None else max_retries,
        **kwargs,
    )
