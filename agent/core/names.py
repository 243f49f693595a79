"""Product names: when two names of releases name one product.

Writers name one product several ways: by its own name ('OpenAI Agents SDK', 'vLLM',
'TensorRT-LLM'), by its package ('openai-agents', 'vllm', 'llama-index'), with or without its
vendor ('Microsoft Agent Framework', 'Agent Framework'), or abbreviated ('TRT-LLM'). Merging two
claims into one release, judging a claim a new version of an anchored release, and placing a
release under its product's line in the living document all hinge on this, so they ask it here
and nowhere else, on the names alone: which product a release belongs to is a matter of how it is
named, not of what the claims say about it.

A name is read as words (split at spaces) made of parts (split at '-', '_' and '.'): the vendor
left off a name is a whole word ('NVIDIA' of 'NVIDIA Dynamo'), while the part before a hyphen is
part of the name ('vLLM-Omni' is not 'Omni').
"""

from __future__ import annotations

import re

# A product's name as normalised words, each one or more parts joined by '-':
# 'OpenAI Agents-SDK' -> ('openai', 'agents-sdk'), 'llama.cpp' -> ('llama-cpp',).
Product = tuple[str, ...]

# Words that end many products' names and tell none apart: 'NeMo Framework' and 'Agent Framework'
# are two products, and 'OpenAI Agents SDK' is the 'openai-agents' package.
GENERIC = frozenset({"framework", "sdk", "api", "server", "engine", "library", "toolkit", "cli", "platform", "runtime"})
_SEPARATOR = re.compile(r"[-_.]+")
_DROPPED = re.compile(r"[^\w@/-]")  # after `_SEPARATOR`: '_' is gone, letters of any script stay


def product_word(word: str) -> str:
    """One word of a name as compared: lower case, each run of '-', '_' or '.' one '-', every
    other mark dropped ('Llama.cpp' -> 'llama-cpp', 'C++' -> 'c'); a word in another script stays
    a word ('vLLM 插件' is not 'vLLM')."""
    return _DROPPED.sub("", _SEPARATOR.sub("-", word.lower())).strip("-")


def product_name(name: str) -> Product:
    """A name as `one_product` compares it: 'OpenAI Agents SDK' -> ('openai', 'agents', 'sdk')."""
    return tuple(w for w in map(product_word, name.split()) if w)


def squashed(word: str) -> str:
    """A word with its parts run together ('tensorrt-llm' -> 'tensorrtllm'): how it is found
    inside a title or a link, whatever separates its parts there."""
    return word.replace("-", "")


def one_product(a: Product, b: Product) -> bool:
    """Two names name one product: spelled alike ('openai-agents' and 'OpenAI Agents SDK'), one
    the other with its vendor left off ('Agent Framework', 'Microsoft Agent Framework'), or one
    an abbreviation of the other ('TRT-LLM', 'TensorRT-LLM'). A name that goes on where the other
    stops is another product ('vLLM-Omni' and 'vLLM', 'OpenAI Python SDK' and 'OpenAI Agents SDK')."""
    if not (_parts(a) and _parts(b)):
        return False
    return _spelled_alike(a, b) or _vendor_left_off(a, b) or _abbreviated(a[-1], b[-1])


def _parts(p: Product) -> tuple[str, ...]:
    return tuple(part for w in p for part in w.split("-") if part)


def _core(parts: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the name, its generic last words): ('openai', 'agents'), ('sdk',)."""
    n = len(parts)
    while n > 1 and parts[n - 1] in GENERIC:
        n -= 1
    return parts[:n], parts[n:]


def _spelled_alike(a: Product, b: Product) -> bool:
    """The same parts, whatever the case and separators ('llama-index', 'LlamaIndex'), the generic
    last words free to be absent on one side only when the name has two parts or more: a package
    leaves them off ('openai-agents' is the 'OpenAI Agents SDK'), while one word and a generic one
    often name a sibling product ('A2A' the protocol and 'A2A SDK', 'LangGraph' and 'LangGraph
    Platform')."""
    (core_a, tail_a), (core_b, tail_b) = _core(_parts(a)), _core(_parts(b))
    if "".join(core_a) != "".join(core_b):
        return False
    return tail_a == tail_b or (not (tail_a and tail_b) and min(len(core_a), len(core_b)) >= 2)


def _vendor_left_off(a: Product, b: Product) -> bool:
    """The shorter name's parts end the longer's, and they are two parts or more ('agent-framework'
    of 'Microsoft Agent Framework'), or one word the longer has whole after its vendor ('Dynamo'
    of 'NVIDIA Dynamo', not 'Omni' of 'vLLM-Omni'). One shared generic word is not enough
    ('NeMo Framework', 'Agent Framework')."""
    (short, _), (long, long_words) = sorted(((_parts(a), a), (_parts(b), b)), key=lambda p: len(p[0]))
    n = len(short)
    if long[len(long) - n :] != short:
        return False
    return n >= 2 or len(long) == n or (short[0] not in GENERIC and "-" not in long_words[-1])


def _abbreviated(a: str, b: str) -> bool:
    """Two last words of as many parts, each the other's with letters left out inside it ('trt'
    of 'tensorrt'), at least one shortened: 'TRT-LLM' and 'TensorRT-LLM'. A part cut at its end
    is another name ('SGL', 'SGLang'; 'Dynamo', 'DynamoDB')."""
    pa, pb = a.split("-"), b.split("-")
    if len(pa) != len(pb) or a == b:
        return False
    return all(x == y or _letters_left_out(*sorted((x, y), key=len)) for x, y in zip(pa, pb, strict=True))


def _letters_left_out(short: str, long: str) -> bool:
    if len(short) < 3 or short[0] != long[0] or long.startswith(short):
        return False
    rest = iter(long)  # each letter of the short part found after the one before it
    return all(ch in rest for ch in short)


def release_version(v: str) -> str:
    """'v1.0.0' and '1.0' are one version: no 'v', no trailing '.0'."""
    parts = v.lower().lstrip("v").split(".")
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts)
