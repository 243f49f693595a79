"""The network at the bottom of the transport chain: httpx2's own transport over a pool of ours."""

from __future__ import annotations

import httpx2


def test_httpx2s_transport_keeps_nothing_but_the_pool() -> None:
    """`BoundedNetwork` skips `HTTPTransport.__init__` and sets only `_pool`: an attribute that
    `__init__` gains in a 2.x release would be missing from ours and fail at the first request."""
    attributes = set(vars(httpx2.HTTPTransport()))
    assert attributes == {"_pool"}, (
        f"httpx2.HTTPTransport() now sets {sorted(attributes)}: re-check which of them handle_request, close, "
        "__enter__ and __exit__ read, and set them in agent/extract/llm/network.py's BoundedNetwork"
    )
