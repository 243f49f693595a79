"""The network at the bottom of the transport chain: sockets bounded by the attempt's deadline.

A read timeout alone does not bound an attempt: it restarts on each byte, so a server that sends
one byte a second keeps a call alive for ever. `RetryTransport` opens a `deadline` around each
attempt (`timeout_s`, cut to what is left of `max_total_s`), and every connect, write and read
under it waits no longer than the time left. Errors are httpx2's own, as the layers above expect.
"""

from __future__ import annotations

import contextvars
import ssl
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore2
import httpx2

_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("predigest_deadline", default=None)


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Every socket operation of this thread's requests ends within `seconds` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _bounded(timeout: float | None, expired: type[httpcore2.TimeoutException]) -> float | None:
    """`timeout` cut to the time left before the deadline; `expired` once none is left."""
    end = _deadline.get()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise expired("the attempt's time is up (timeout_s / max_total_s)")
    return left if timeout is None else min(timeout, left)


class _BoundedStream(httpcore2.NetworkStream):
    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _bounded(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bounded(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _BoundedStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _BoundedBackend(httpcore2.NetworkBackend):
    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _BoundedStream(self._inner.connect_tcp(host, port, bounded, local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        bounded = _bounded(timeout, httpcore2.ConnectTimeout)
        return _BoundedStream(self._inner.connect_unix_socket(path, bounded, socket_options))

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class BoundedNetwork(httpx2.HTTPTransport):
    """httpx2's own transport (its request mapping, its errors) over a connection pool whose
    socket operations are bounded by the `deadline` each request runs under, directly or
    through an HTTP proxy."""

    def __init__(self, proxy: str | None = None) -> None:
        # not super().__init__(): it would build a pool of its own; handle_request and close use this one
        self._pool = httpcore2.ConnectionPool(
            ssl_context=httpx2.create_ssl_context(),
            proxy=_pool_proxy(proxy) if proxy else None,
            max_connections=100,
            max_keepalive_connections=64,  # as many as `concurrency` allows in flight
            keepalive_expiry=5.0,
            network_backend=_BoundedBackend(),
        )


def _pool_proxy(url: str) -> httpcore2.Proxy:
    """The pool's proxy for `url`, read as httpx2's own transport reads it. httpcore2 takes only
    the origin from a URL, so the credentials of `http://user:pass@host:port` would never reach
    the proxy: httpx2.Proxy takes them out of the URL (percent-decoded), and httpcore2.Proxy
    sends them as Proxy-Authorization, on a forwarded request and on an HTTPS tunnel's CONNECT."""
    proxy = httpx2.Proxy(url=url)
    return httpcore2.Proxy(
        url=httpcore2.URL(
            scheme=proxy.url.raw_scheme,
            host=proxy.url.raw_host,
            port=proxy.url.port,
            target=proxy.url.raw_path,
        ),
        auth=proxy.raw_auth,
        headers=proxy.headers.raw,
        ssl_context=proxy.ssl_context,
    )
