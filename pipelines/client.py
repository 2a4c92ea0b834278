"""HTTP client for the Outreach Campaign Service API: one per API key.

Bearer auth, paging with the largest allowed ``per_page`` (following
``meta.last_page``), proactive pacing (`pipelines.pacing`), and retries with
backoff and jitter (tenacity) for 429, 5xx, time-outs, connection errors and
truncated or malformed JSON. 401/403/404/422 are never retried: they raise the
typed errors of `pipelines.errors`. Thread-safe: worker threads share one client,
one connection pool and one rate budget.

The key lives only in the ``Authorization`` header of the httpx client; it is
never logged and never part of an exception message.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type, stop_after_attempt

from pipelines.errors import (
    ApiUnavailableError,
    ConfigError,
    OutreachError,
    auth_error,
    forbidden_error,
    invalid_request_error,
    not_found_error,
)
from pipelines.pacing import RateLimiter, shared_limiter

log = logging.getLogger(__name__)

DEFAULT_RATE_LIMIT_PER_MINUTE = 120
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_ATTEMPTS = 8
MAX_RETRY_AFTER_S = 120.0


@dataclass
class ClientStats:
    """Counters of one client (thread-safe increments via `add`)."""

    requests: int = 0
    retries: int = 0
    rate_limited: int = 0  # 429 responses seen
    server_errors: int = 0
    timeouts: int = 0
    bad_bodies: int = 0
    rate_wait_s: float = 0.0
    by_status: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def count_status(self, status: int) -> None:
        with self._lock:
            key = str(status)
            self.by_status[key] = self.by_status.get(key, 0) + 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "requests": self.requests,
                "retries": self.retries,
                "rate_limited": self.rate_limited,
                "server_errors": self.server_errors,
                "timeouts": self.timeouts,
                "bad_bodies": self.bad_bodies,
                "rate_wait_s": round(self.rate_wait_s, 3),
                "by_status": dict(self.by_status),
            }


@dataclass
class Page:
    """One page of a paged list: its items and `meta` (current_page, last_page, total)."""

    items: list[dict[str, Any]]
    current_page: int
    last_page: int
    total: int | None


class _Retryable(Exception):
    """A transient failure; `retry_after` is the server's hint in seconds, if any."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return min(max(float(value), 0.0), MAX_RETRY_AFTER_S)
    except ValueError:
        return None  # HTTP-date form: fall back to exponential backoff


def _wait(state: RetryCallState) -> float:
    """Retry-After when given (plus a little jitter), else exponential backoff with full jitter."""
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, _Retryable) and exc.retry_after is not None:
        return exc.retry_after + random.uniform(0.05, 0.5)
    cap = min(30.0, 0.5 * 2 ** (state.attempt_number - 1))
    return random.uniform(0.1, cap)


class OutreachClient:
    """Synchronous, thread-safe client for one API key."""

    def __init__(
        self,
        api_key: str,
        base_url: str,
        *,
        rate_limit_per_minute: int | None = DEFAULT_RATE_LIMIT_PER_MINUTE,
        timeout: float = DEFAULT_TIMEOUT_S,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        max_connections: int = 8,
        limiter: RateLimiter | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not api_key or not api_key.strip():
            raise ConfigError(
                "no API key: set SOURCES__OUTREACH__API_KEY, [sources.outreach] api_key in "
                ".dlt/secrets.toml, or pass --api-key"
            )
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise ConfigError(
                "no valid API base URL: set SOURCES__OUTREACH__BASE_URL (ending in /api/v1), "
                "[sources.outreach] base_url in .dlt/config.toml, or pass --base-url"
            )
        self.base_url = base_url.rstrip("/")
        self.stats = ClientStats()
        self.max_attempts = max_attempts
        self.limiter = limiter if limiter is not None else shared_limiter(api_key, rate_limit_per_minute)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {api_key.strip()}", "Accept": "application/json"},
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
            follow_redirects=False,
        )

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OutreachClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:  # never show the key
        return f"OutreachClient(base_url={self.base_url!r})"

    # -- generic verbs ---------------------------------------------------------------------
    def get(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET `path`; return the parsed JSON body (retried on transient failures)."""
        return self._request("GET", path, params=params, idempotent=True)

    def get_data(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """GET `path` and return its top-level `data` (a missing `data` counts as a malformed body)."""
        return self._request("GET", path, params=params, idempotent=True, need_data=True)["data"]

    def post(self, path: str, json_body: Any = None) -> Any:
        """POST; retried only when the request surely did not take effect (429, connection refused)."""
        return self._request("POST", path, json_body=json_body, idempotent=False)

    def delete(self, path: str) -> Any:
        """DELETE; retried like POST."""
        return self._request("DELETE", path, idempotent=False)

    # -- paging ----------------------------------------------------------------------------
    def page(self, path: str, page: int, per_page: int, params: Mapping[str, Any] | None = None) -> Page:
        """Fetch one page of a paged list."""
        query = {**(params or {}), "page": page, "per_page": per_page}
        body = self._request("GET", path, params=query, idempotent=True, need_data=True)
        items = body["data"]
        if not isinstance(items, list):
            raise ApiUnavailableError(f"GET {path}: `data` is not a list: the API answered an unexpected shape")
        meta = body.get("meta") if isinstance(body.get("meta"), Mapping) else {}
        last = int(meta.get("last_page") or page)
        total = meta.get("total")
        return Page(items, int(meta.get("current_page") or page), last, int(total) if total is not None else None)

    def iter_pages(
        self, path: str, *, per_page: int, params: Mapping[str, Any] | None = None, start_page: int = 1
    ) -> Iterator[Page]:
        """Yield pages in order until `meta.last_page` (or an empty page)."""
        number = start_page
        while True:
            current = self.page(path, number, per_page, params)
            yield current
            if number >= current.last_page or not current.items:
                return
            number += 1

    # -- internals -------------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        idempotent: bool,
        need_data: bool = False,
    ) -> Any:
        retrying = Retrying(
            retry=retry_if_exception_type(_Retryable),
            wait=_wait,
            stop=stop_after_attempt(self.max_attempts),
            before_sleep=self._before_sleep(method, path),
            reraise=False,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._attempt(method, path, params, json_body, idempotent, need_data)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            reason = last.reason if isinstance(last, _Retryable) else type(last).__name__
            raise ApiUnavailableError(
                f"{method} {path} failed {self.max_attempts} times (last: {reason}): the API is "
                "unavailable or overloaded; retry later, or lower rate_limit_per_minute"
            ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _before_sleep(self, method: str, path: str):  # type: ignore[no-untyped-def]
        def hook(state: RetryCallState) -> None:
            self.stats.add(retries=1)
            exc = state.outcome.exception() if state.outcome else None
            reason = exc.reason if isinstance(exc, _Retryable) else repr(exc)
            log.debug("retrying %s %s after %s (attempt %d)", method, path, reason, state.attempt_number)

        return hook

    def _attempt(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        json_body: Any,
        idempotent: bool,
        need_data: bool,
    ) -> Any:
        if self.limiter is not None:
            waited = self.limiter.acquire()
            if waited:
                self.stats.add(rate_wait_s=waited)
        self.stats.add(requests=1)
        try:
            response = self._http.request(method, path, params=params, json=json_body)
        except httpx.TimeoutException as exc:
            self.stats.add(timeouts=1)
            if idempotent or isinstance(exc, httpx.ConnectTimeout):
                raise _Retryable(f"time-out ({type(exc).__name__})") from None
            raise ApiUnavailableError(
                f"{method} {path} timed out; it may or may not have taken effect: check before retrying"
            ) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            if idempotent or isinstance(exc, httpx.ConnectError):
                raise _Retryable(f"connection error ({type(exc).__name__})") from None
            raise ApiUnavailableError(
                f"{method} {path} lost its connection; it may or may not have taken effect"
            ) from None
        except httpx.TransportError as exc:
            raise _Retryable(f"transport error ({type(exc).__name__})") from None
        return self._handle(method, path, response, idempotent, need_data)

    def _handle(self, method: str, path: str, response: httpx.Response, idempotent: bool, need_data: bool) -> Any:
        status = response.status_code
        self.stats.count_status(status)
        if status == 429:
            self.stats.add(rate_limited=1)
            retry_after = _parse_retry_after(response.headers.get("Retry-After"))
            if self.limiter is not None:
                self.limiter.pause(retry_after if retry_after is not None else 2.0)
            log.info("rate limited (429) on %s %s; waiting %ss", method, path, retry_after or "a moment")
            raise _Retryable("429 rate limited", retry_after)
        if status >= 500:
            self.stats.add(server_errors=1)
            if idempotent:
                raise _Retryable(f"server error {status}")
            raise ApiUnavailableError(f"{method} {path} failed with {status}: the service had an error; retry later")
        body = self._parse(method, path, response, strict=status < 400, idempotent=idempotent)
        if status == 401:
            raise auth_error(path)
        if status == 403:
            raise forbidden_error(method, path)
        if status == 404:
            raise not_found_error(method, path)
        if status == 422:
            raise invalid_request_error(method, path, body)
        if status >= 400:
            raise OutreachError(f"{method} {path} refused ({status}): unexpected client error; check the request")
        if need_data and (not isinstance(body, Mapping) or "data" not in body):
            self.stats.add(bad_bodies=1)
            raise _Retryable("response without `data`")
        return body

    def _parse(self, method: str, path: str, response: httpx.Response, *, strict: bool, idempotent: bool) -> Any:
        """Parse JSON; a truncated/malformed success body is retryable, an error body is best effort."""
        if not response.content:
            return None
        try:
            return json.loads(response.content)
        except ValueError:
            if not strict:
                return None
            self.stats.add(bad_bodies=1)
            if idempotent:
                raise _Retryable("truncated or malformed JSON") from None
            raise ApiUnavailableError(
                f"{method} {path} took effect but its answer was malformed JSON; check the result before retrying"
            ) from None


def connectivity_check(client: OutreachClient) -> dict[str, Any]:
    """GET /account: proves the key and URL work (401 -> AuthError at once) and names the workspace."""
    data = client.get_data("/account")
    if not isinstance(data, Mapping) or not isinstance(data.get("workspace"), Mapping):
        raise ApiUnavailableError("GET /account: no `workspace` in the answer: is the base URL the API's /api/v1?")
    return dict(data)
