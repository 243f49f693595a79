"""When two names of releases name one product (agent.core.names): the comparison merge, dedupe's
new-version rule and the E2 patch all ask. Every pair is asked both ways round."""

from __future__ import annotations

import pytest

from agent.core.names import one_product, product_name

ONE = [
    pytest.param("openai-agents", "OpenAI Agents SDK", id="package-and-product-with-sdk"),
    pytest.param("openai_agents", "OpenAI Agents", id="underscore-package"),
    pytest.param("OpenAI Agents", "OpenAI Agents SDK", id="product-with-and-without-sdk"),
    pytest.param("vllm", "vLLM", id="case"),
    pytest.param("sglang", "SGLang", id="case-2"),
    pytest.param("llama-index", "LlamaIndex", id="package-splits-a-run-together-name"),
    pytest.param("llama_cpp", "llama.cpp", id="separators"),
    pytest.param("a2a-sdk", "A2A SDK", id="package-keeps-its-generic-word"),
    pytest.param("vllm-omni", "vLLM Omni", id="hyphen-or-space"),
    pytest.param("Agent Framework", "Microsoft Agent Framework", id="vendor-left-off"),
    pytest.param("agent-framework", "Microsoft Agent Framework", id="package-of-a-vendors-product"),
    pytest.param("Dynamo", "NVIDIA Dynamo", id="vendor-left-off-one-word"),
    pytest.param("TRT-LLM", "TensorRT-LLM", id="abbreviation"),
    pytest.param("NVIDIA TRT-LLM", "TensorRT-LLM", id="abbreviation-with-vendor"),
]

TWO = [
    pytest.param("OpenAI Agents SDK", "OpenAI Python SDK", id="one-vendor-two-sdks"),
    pytest.param("openai-agents", "OpenAI Python SDK", id="package-and-another-sdk"),
    pytest.param("vLLM", "vLLM-Omni", id="name-that-goes-on"),
    pytest.param("Omni", "vLLM-Omni", id="part-after-a-hyphen-is-no-vendor"),
    pytest.param("LLM", "TensorRT-LLM", id="last-part-alone"),
    pytest.param("llama.cpp", "llama-cpp-python", id="bindings-of-a-library"),
    pytest.param("NeMo Framework", "Agent Framework", id="shared-generic-word"),
    pytest.param("Agent Framework", "Agent SDK", id="two-generic-words"),
    pytest.param("A2A", "a2a-sdk", id="protocol-and-its-sdk"),
    pytest.param("LangGraph", "LangGraph Platform", id="one-word-and-a-sibling-product"),
    pytest.param("NeMo", "NeMo Framework", id="one-word-and-generic"),
    pytest.param("mcp", "MCP Python SDK", id="spec-and-an-sdk"),
    pytest.param("Mistral-LLM", "TensorRT-LLM", id="same-last-part-no-abbreviation"),
    pytest.param("SGL", "SGLang", id="cut-at-its-end"),
    pytest.param("Dynamo", "DynamoDB", id="prefix"),
    pytest.param("LMCache", "LMDeploy", id="shared-beginning"),
    pytest.param("FlashInfer", "FlashAttention", id="shared-beginning-2"),
    pytest.param("vLLM 插件", "vLLM", id="a-word-in-another-script"),
]


@pytest.mark.parametrize(("a", "b"), ONE)
def test_one_product(a: str, b: str) -> None:
    assert one_product(product_name(a), product_name(b))
    assert one_product(product_name(b), product_name(a))


@pytest.mark.parametrize(("a", "b"), TWO)
def test_two_products(a: str, b: str) -> None:
    assert not one_product(product_name(a), product_name(b))
    assert not one_product(product_name(b), product_name(a))


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("OpenAI Agents SDK", ("openai", "agents", "sdk")),
        ("openai_agents", ("openai-agents",)),
        ("llama.cpp", ("llama-cpp",)),
        ("C++ SDK", ("c", "sdk")),
        ("vLLM 插件", ("vllm", "插件")),
        ("  ", ()),
    ],
)
def test_product_name(name: str, words: tuple[str, ...]) -> None:
    assert product_name(name) == words


def test_an_empty_name_is_no_product() -> None:
    assert not one_product((), ())
    assert not one_product(("--",), ("--",))
