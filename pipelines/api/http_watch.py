"""An httpx transport whose socket reads end on a signal, the run's deadline or a response's stall deadline.

httpx bounds each socket read by the read time-out alone, so a server that sends its status line, its
headers or its body a byte a second never trips it, and a read blocked in the kernel never sees the flag
SIGINT / SIGTERM set. Here every read waits in slices of at most `SLICE_S` and, before each slice, calls
the check the current thread's request installed (`watching`): that check raises to end the request (the
run's `Deadline.check`, the client's stall deadline). The read time-out keeps its meaning: silence for that
long still raises `httpx.ReadTimeout`. Only public httpcore and httpx APIs are used: httpx's own transport
takes no network backend, so the adapter from httpcore's pool to httpx is written out here.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpcore
import httpx

SLICE_S = 0.25  # the longest a read waits without looking at the check

Check = Callable[[], None]
_local = threading.local()

# httpcore's errors as httpx's (the client tells them apart: connect, time-out, protocol)
_ERRORS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)
_OURS = tuple(ours for ours, _ in _ERRORS)


@contextlib.contextmanager
def watching(check: Check) -> Iterator[None]:
    """While the block runs, this thread's socket reads and writes call `check` at least every `SLICE_S`."""
    previous = getattr(_local, "check", None)
    _local.check = check
    try:
        yield
    finally:
        _local.check = previous


def _check() -> Check | None:
    return getattr(_local, "check", None)


@contextlib.contextmanager
def _as_httpx(request: httpx.Request | None = None) -> Iterator[None]:
    try:
        yield
    except _OURS as exc:
        kind = next(theirs for ours, theirs in _ERRORS if isinstance(exc, ours))  # the most specific first
        raise kind(str(exc), request=request) from exc  # type: ignore[call-arg]


class _WatchedStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        check = _check()
        if check is None:
            return self._stream.read(max_bytes, timeout)
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            check()
            left = SLICE_S if end is None else min(SLICE_S, end - time.monotonic())
            if left <= 0:
                raise httpcore.ReadTimeout("no data within the read time-out")
            try:
                return self._stream.read(max_bytes, left)
            except httpcore.ReadTimeout:  # nothing was read: the socket is as it was; wait on
                continue

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        check = _check()
        if check is not None:
            check()
        self._stream.write(buffer, timeout)

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return _WatchedStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _WatchedBackend(httpcore.NetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        check = _check()
        if check is not None:
            check()
        return _WatchedStream(self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


class _Body(httpx.SyncByteStream):
    def __init__(self, stream: Any, request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        with _as_httpx(self._request):
            yield from self._stream

    def close(self) -> None:
        with _as_httpx(self._request):
            self._stream.close()


class WatchedTransport(httpx.BaseTransport):
    """httpx's default transport (HTTP/1.1, TLS verified with httpx's defaults), on watched sockets."""

    def __init__(self, limits: httpx.Limits) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_WatchedBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        ours = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx(request):
            answer = self._pool.handle_request(ours)
        return httpx.Response(
            status_code=answer.status,
            headers=answer.headers,
            stream=_Body(answer.stream, request),
            extensions=answer.extensions,
        )

    def close(self) -> None:
        self._pool.close()
