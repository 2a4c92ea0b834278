"""Transient failures of a request: what is retried, how long to wait, and the one-line error once retries
are used up.

429, 5xx, time-outs, connection errors and truncated or malformed JSON are retried with backoff and
jitter (tenacity); 401/403/404/422 never are. A connection that fails names its cause from the exception
chain's types and errno, never from its text.
"""

from __future__ import annotations

import errno
import random
import socket
import ssl

import httpx
from tenacity import RetryCallState

from pipelines.core.errors import ApiUnavailableError, OutreachError, ServiceUnreachableError

MAX_RETRY_AFTER_S = 120.0


class Retryable(Exception):
    """A transient failure; `retry_after` is the server's hint in seconds, if any. `kind`: "connect" (no
    connection made), "timeout", "stall" (the answer came too slowly: `stall_timeout_s`), "server", "rate" (429),
    "body" (bad JSON), "transport"."""

    def __init__(self, reason: str, retry_after: float | None = None, kind: str = "transport") -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.kind = kind


def parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None  # HTTP-date form: fall back to exponential backoff


def backoff_wait(state: RetryCallState) -> float:
    """Retry-After when given (plus a little jitter), else exponential backoff with full jitter."""
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, Retryable) and exc.retry_after is not None:
        return exc.retry_after + random.uniform(0.05, 0.5)
    cap = min(30.0, 0.5 * 2 ** (state.attempt_number - 1))
    return random.uniform(0.1, cap)


def exhausted_error(
    method: str, path: str, last: BaseException | None, attempts: int, *, answered: bool
) -> OutreachError:
    """The one-line error once retries are used up, naming what kept failing."""
    if isinstance(last, Retryable) and last.kind == "connect":
        if not answered:
            return ServiceUnreachableError(last.reason)
        cause = last.reason.split(": ")[0]
        return ServiceUnreachableError(
            f"{method} {path} failed {attempts} times ({cause}): the service stopped answering; retry later"
        )
    if isinstance(last, Retryable) and last.kind == "transport" and not answered:
        return ServiceUnreachableError(
            f"{last.reason}, {attempts} times: is the service running there, and are the base URL's host and port "
            "the API's?"
        )
    reason = last.reason if isinstance(last, Retryable) else type(last).__name__
    hints = {
        "rate": "retry later, or lower rate_limit_per_minute",
        "stall": "retry later, or raise [sources.outreach] stall_timeout_s for a service this slow",
    }
    hint = hints.get(last.kind, "retry later") if isinstance(last, Retryable) else "retry later"
    return ApiUnavailableError(
        f"{method} {path} failed {attempts} times (last: {reason}): the API is unavailable or overloaded; {hint}"
    )


def connect_failure(exc: httpx.ConnectError, url: str) -> str:
    """What went wrong connecting, from the exception chain's types and errno (never its text)."""
    cause: BaseException | None = exc
    seen: set[int] = set()
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, socket.gaierror):
            return f"host {httpx.URL(url).host} not found (DNS) for {url}: check the host name"
        if isinstance(cause, ssl.SSLError):
            return f"TLS handshake with {url} failed ({type(cause).__name__}): check http vs https and the certificate"
        if isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED:
            return f"connection refused at {url}: is the service running, is the URL right?"
        if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
            return f"no route to {url} ({errno.errorcode[cause.errno]}): check the host and the network"
        cause = cause.__cause__ or cause.__context__
    return f"could not connect to {url} ({type(exc).__name__})"
