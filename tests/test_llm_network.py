"""The network at the bottom of the transport chain: httpx2's own transport over a pool of ours."""

from __future__ import annotations

import base64
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx2
import pytest

from agent.extract.llm.transport import network_transport


def test_httpx2s_transport_keeps_nothing_but_the_pool() -> None:
    """`BoundedNetwork` skips `HTTPTransport.__init__` and sets only `_pool`: an attribute that
    `__init__` gains in a 2.x release would be missing from ours and fail at the first request."""
    attributes = set(vars(httpx2.HTTPTransport()))
    assert attributes == {"_pool"}, (
        f"httpx2.HTTPTransport() now sets {sorted(attributes)}: re-check which of them handle_request, close, "
        "__enter__ and __exit__ read, and set them in agent/extract/llm/network.py's BoundedNetwork"
    )


@pytest.fixture
def proxy() -> Iterator[tuple[str, list[tuple[str, str | None]]]]:
    """A proxy on loopback that asks for credentials: it notes each request's method and
    Proxy-Authorization, and answers every one 407 (a forwarded request gets it as its
    response, an HTTPS tunnel's CONNECT fails with it). Yields its host:port and the notes."""
    seen: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            seen.append((self.command, self.headers.get("Proxy-Authorization")))
            self.send_response(407)
            self.send_header("Proxy-Authenticate", 'Basic realm="test"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_CONNECT = do_POST = _refuse

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    # shutdown() waits for the loop's next poll: a short poll, so that no test waits on it
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def _basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


@pytest.mark.parametrize(
    ("base_url", "variable", "userinfo", "authorization"),
    [
        ("https://api.example.test/v1", "HTTPS_PROXY", "http://user:secret@", _basic("user:secret")),
        ("http://api.example.test/v1", "HTTP_PROXY", "http://user:secret@", _basic("user:secret")),
        ("https://api.example.test/v1", "HTTPS_PROXY", "http://us%40er:p%3Ass@", _basic("us@er:p:ss")),
        ("https://api.example.test/v1", "HTTPS_PROXY", "http://", None),
        # written without a scheme, as curl, requests and httpx take it: an http:// proxy
        ("https://api.example.test/v1", "HTTPS_PROXY", "user:secret@", _basic("user:secret")),
    ],
    ids=["https-tunnel", "http-forward", "percent-encoded", "no-credentials", "no-scheme"],
)
def test_the_proxy_from_the_environment_gets_its_credentials(
    monkeypatch: pytest.MonkeyPatch,
    proxy: tuple[str, list[tuple[str, str | None]]],
    base_url: str,
    variable: str,
    userinfo: str,
    authorization: str | None,
) -> None:
    """An authenticated proxy (`http://user:pass@host:port`) is sent its credentials as
    Proxy-Authorization, through the bounded pool, for a tunnel (CONNECT) as for a forwarded request."""
    address, seen = proxy
    for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv(variable, f"{userinfo}{address}")
    transport = network_transport(base_url)
    try:
        request = httpx2.Request("POST", f"{base_url}/chat/completions", content=b"{}")
        try:
            said = str(transport.handle_request(request).status_code)
        except httpx2.ProxyError as e:  # the tunnel was refused, and the error says how
            said = str(e)
    finally:
        transport.close()
    assert "407" in said, said
    assert seen == [("CONNECT" if base_url.startswith("https") else "POST", authorization)]
