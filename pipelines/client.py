"""HTTP client for the Outreach Campaign Service API: one per API key.

Bearer auth, paging with the largest allowed ``per_page`` (following
``meta.last_page``), proactive pacing (`pipelines.pacing`), and retries with
backoff and jitter (tenacity) for 429, 5xx, time-outs, connection errors and
truncated or malformed JSON. 401/403/404/422 are never retried: they raise the
typed errors of `pipelines.errors`. Thread-safe: worker threads share one client,
one connection pool and one rate budget.

Configuration mistakes are told apart from outages (issue 12): the base URL's shape and the key's
characters are checked before the first request; until the service has answered once, a connection
that fails (refused, unknown host, TLS, connect time-out) is tried `FIRST_CONTACT_ATTEMPTS` times, not
`max_attempts`; an answer in HTML or another non-JSON type, or a redirect, means the URL is not the API
(`BaseUrlError`, never retried). Paged answers are checked:
`meta.current_page` must be the page asked for, no page may repeat another, and a listing read to its
end under an unchanged `meta.total` must hold that many distinct rows (`PagingError`).

The key lives only in the ``Authorization`` header of the httpx client; it is
never logged and never part of an exception message.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type

from pipelines.deadline import Deadline
from pipelines.errors import (
    ApiUnavailableError,
    BaseUrlError,
    ConfigError,
    NotFoundError,
    OutreachError,
    PagingError,
    ServiceUnreachableError,
    auth_error,
    forbidden_error,
    invalid_request_error,
    not_found_error,
)
from pipelines.pacing import RateLimiter, shared_limiter
from pipelines.timestamps import TimestampError, parse_instant

log = logging.getLogger(__name__)

DEFAULT_RATE_LIMIT_PER_MINUTE = 120
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_STALL_TIMEOUT_S = 120.0
DEFAULT_MAX_ATTEMPTS = 8
MAX_RETRY_AFTER_S = 120.0
FIRST_CONTACT_ATTEMPTS = 2
"""Attempts of a request whose connection fails before the service has ever answered this client: a
refused connection or an unknown host at the start is a wrong URL or a stopped service far more often
than a blip, so it is tried once more (a service restarting right now), not `max_attempts` times."""
API_PATH_SUFFIX = "/api/v1"


@dataclass
class ClientStats:
    """Counters of one client (thread-safe increments via `add`).

    `rate_wait_s` is wall-clock time during which at least one thread waited for the rate limit;
    `rate_wait_thread_s` sums every thread's waits (4 threads waiting 1 s together: 1 s vs 4 s).
    """

    requests: int = 0
    retries: int = 0
    rate_limited: int = 0  # 429 responses seen
    server_errors: int = 0
    timeouts: int = 0
    bad_bodies: int = 0
    rate_wait_s: float = 0.0
    rate_wait_thread_s: float = 0.0
    pages_read: int = 0
    pages_known: int = 0  # sum of meta.last_page over the listings read so far
    by_status: dict[str, int] = field(default_factory=dict)
    waiting: str = ""  # what a pause of this client waits for, until when (monotonic), for the progress
    waiting_until: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _waiting: int = field(default=0, repr=False, compare=False)
    _wait_started: float = field(default=0.0, repr=False, compare=False)
    _interval_waited: bool = field(default=False, repr=False, compare=False)

    def add(self, **deltas: float) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def count_status(self, status: int) -> None:
        with self._lock:
            key = str(status)
            self.by_status[key] = self.by_status.get(key, 0) + 1

    def wait_begins(self) -> None:
        with self._lock:
            if self._waiting == 0:
                self._wait_started = time.monotonic()
            self._waiting += 1

    def wait_ends(self, waited: float) -> None:
        with self._lock:
            self._waiting -= 1
            self.rate_wait_thread_s += waited
            self._interval_waited = self._interval_waited or waited > 0
            if self._waiting == 0:
                if self._interval_waited:
                    self.rate_wait_s += time.monotonic() - self._wait_started
                self._interval_waited = False

    def pausing(self, seconds: float, why: str) -> None:
        """A pause of `seconds` begins (a `Retry-After`, a backoff): the progress says what it waits for."""
        with self._lock:
            until = time.monotonic() + seconds
            if until > self.waiting_until:
                self.waiting, self.waiting_until = why, until

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            left = self.waiting_until - time.monotonic()
            running = time.monotonic() - self._wait_started if self._waiting and self._interval_waited else 0.0
            wall = self.rate_wait_s + running
            return {
                "requests": self.requests,
                "retries": self.retries,
                "rate_limited": self.rate_limited,
                "server_errors": self.server_errors,
                "timeouts": self.timeouts,
                "bad_bodies": self.bad_bodies,
                "rate_wait_s": round(wall, 3),
                "rate_wait_thread_s": round(self.rate_wait_thread_s, 3),
                "pages_read": self.pages_read,
                "pages_known": self.pages_known,
                "by_status": dict(self.by_status),
                "waiting": f"waiting {left:.0f}s: {self.waiting}" if left >= 1 else "",
            }


@dataclass
class Page:
    """One page of a paged list: its items and `meta` (current_page, last_page, total)."""

    items: list[dict[str, Any]]
    current_page: int
    last_page: int
    total: int | None


class _Retryable(Exception):
    """A transient failure; `retry_after` is the server's hint in seconds, if any. `kind`: "connect" (no
    connection made), "timeout", "server", "rate" (429), "body" (bad JSON), "transport"."""

    def __init__(self, reason: str, retry_after: float | None = None, kind: str = "transport") -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.kind = kind


def _parse_retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        return None  # HTTP-date form: fall back to exponential backoff


def _wait(state: RetryCallState) -> float:
    """Retry-After when given (plus a little jitter), else exponential backoff with full jitter."""
    exc = state.outcome.exception() if state.outcome else None
    if isinstance(exc, _Retryable) and exc.retry_after is not None:
        return exc.retry_after + random.uniform(0.05, 0.5)
    cap = min(30.0, 0.5 * 2 ** (state.attempt_number - 1))
    return random.uniform(0.1, cap)


def check_base_url(base_url: str) -> str:
    """The base URL without a trailing slash, or a ConfigError naming what is wrong with its shape."""
    text = (base_url or "").strip()
    if not text:
        raise ConfigError(
            "no API base URL: set SOURCES__OUTREACH__BASE_URL (ending in /api/v1), "
            "[sources.outreach] base_url in .dlt/config.toml, or pass --base-url"
        )
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise ConfigError(f"the base URL {_safe_url(text)!r} is not a URL: use e.g. https://host/api/v1") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ConfigError(
            f"the base URL {_safe_url(text)!r} is not an http(s) URL with a host: use e.g. https://host/api/v1"
        )
    shown = _safe_url(text)
    if url.userinfo:
        raise ConfigError(
            f"the base URL {shown} holds a user name or password: remove it (the key is sent as a header)"
        )
    if url.query or url.fragment:
        raise ConfigError(
            f"the base URL {shown} has a query (?...) or fragment (#...) after it: use only scheme, host and a path "
            "ending in /api/v1"
        )
    path = url.path.rstrip("/")
    if not path.endswith(API_PATH_SUFFIX):
        # a path that already ends in /api needs only /v1, not a second /api
        missing = API_PATH_SUFFIX.removeprefix("/api") if path.endswith("/api") else API_PATH_SUFFIX
        suggestion = str(url.copy_with(path=path + missing))
        raise BaseUrlError(
            f"the base URL {shown} does not end in {API_PATH_SUFFIX}: the API lives under it; use e.g. {suggestion}"
        )
    return text.rstrip("/")


def check_api_key(api_key: str) -> str:
    """The key without surrounding whitespace, or a ConfigError saying which character is wrong (never the key)."""
    key = (api_key or "").strip()
    if not key:
        raise ConfigError(
            "no API key: set SOURCES__OUTREACH__API_KEY, [sources.outreach] api_key in "
            ".dlt/secrets.toml, or pass --api-key"
        )
    for position, char in enumerate(key, start=1):
        if "!" <= char <= "~":
            continue
        if char in "\r\n":
            what = "a line break"
        elif char.isspace():
            what = "a space or tab"
        elif not char.isascii():
            what = "a non-ASCII character (a typographic quote or dash?)"
        else:
            what = "a control character"
        raise ConfigError(
            f"the API key has {what} at character {position} of {len(key)}: copy the key again exactly "
            "(API keys are printable ASCII without spaces)"
        )
    return key


def _safe_url(text: str) -> str:
    """A URL for messages: without user name, password, query and fragment (which may carry tokens)."""
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        return text.split("@")[-1].split("?")[0][:200]
    if url.userinfo or url.query or url.fragment:
        return str(url.copy_with(username=None, password=None, query=None, fragment=None))
    return text


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
        stall_timeout: float = DEFAULT_STALL_TIMEOUT_S,
        max_retry_after: float = MAX_RETRY_AFTER_S,
        deadline: Deadline | None = None,
    ) -> None:
        key = check_api_key(api_key)
        self.base_url = check_base_url(base_url)
        self.stats = ClientStats()
        self.max_attempts = max_attempts
        self.limiter = limiter if limiter is not None else shared_limiter(key, rate_limit_per_minute)
        self._connect_timeout = min(timeout, 10.0)
        self.stall_timeout = stall_timeout
        self.max_retry_after = max_retry_after
        self.deadline = deadline or Deadline(None)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            timeout=httpx.Timeout(timeout, connect=self._connect_timeout),
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            transport=transport,
            follow_redirects=False,
        )
        self._state_lock = threading.Lock()
        self._answered = False  # any HTTP answer seen: the URL reaches a server
        self._api_answered = False  # a 2xx JSON answer seen: the URL is the API
        self._server_time: datetime | None = None
        self._listings: dict[str, _Listing] = {}

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OutreachClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:  # never show the key
        return f"OutreachClient(base_url={self.base_url!r})"

    def server_time(self) -> datetime | None:
        """The newest HTTP `Date` the service sent (its clock: the sandbox's simulated time), or None."""
        with self._state_lock:
            return self._server_time

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
        """Fetch one page of a paged list; PagingError if its `meta` contradicts the page asked for."""
        query = {**(params or {}), "page": page, "per_page": per_page}
        body = self._request("GET", path, params=query, idempotent=True, need_data=True)
        items = body["data"]
        if not isinstance(items, list):
            raise ApiUnavailableError(f"GET {path}: `data` is not a list: the API answered an unexpected shape")
        meta = body.get("meta")
        current, last, total = _paging_meta(path, page, meta)
        if current != page:
            raise PagingError(
                f"GET {path} asked for page {page} but the API answered page {current} (meta.current_page): it "
                "does not page as documented, so rows would be missed; stopped before loading anything"
            )
        listing = self._listing(path, params)
        listing.observe(path, page, items, last)
        return Page(items, current, last, total)

    def iter_pages(
        self, path: str, *, per_page: int, params: Mapping[str, Any] | None = None, start_page: int = 1
    ) -> Iterator[Page]:
        """Yield pages in order until `meta.last_page` (or an empty page).

        Read to its end (not stopped early by the caller) under an unchanged `meta.total`, the listing
        must have held `total` distinct rows, else PagingError (rows were skipped by the API's paging).
        """
        number = start_page
        seen: set[int] = set()  # hashes of row ids: a large listing's ids would cost several times more
        anonymous = 0  # rows without an id (skipped downstream, but rows of the listing all the same)
        totals: set[int | None] = set()
        while True:
            current = self.page(path, number, per_page, params)
            ids = _row_ids(current.items)
            seen.update(hash(i) for i in ids)
            anonymous += len(current.items) - len(ids)
            totals.add(current.total)
            yield current
            if number >= current.last_page or not current.items:
                break
            number += 1
        total = current.total
        rows = len(seen) + anonymous
        if start_page == 1 and len(totals) == 1 and total is not None and rows < total:
            raise PagingError(
                f"GET {path}: {rows} distinct rows over {number} page(s), but meta.total is {total} on every "
                "page: the API's paging skips rows; stopped before loading anything"
            )

    def paging_progress(self) -> dict[str, tuple[int, int]]:
        """Per listing read so far (its path, plus its filters if any): (pages read, `meta.last_page` known)."""
        with self._state_lock:
            listings = dict(self._listings)
        return {key: listing.progress() for key, listing in listings.items()}

    def _listing(self, path: str, params: Mapping[str, Any] | None) -> _Listing:
        key = path + ("?" + json.dumps(sorted(params.items()), default=str) if params else "")
        with self._state_lock:
            listing = self._listings.get(key)
            if listing is None:
                listing = self._listings[key] = _Listing(self.stats)
            return listing

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
            stop=self._stop,
            before_sleep=self._before_sleep(method, path),
            sleep=self.deadline.sleep,
            reraise=False,
        )
        try:
            for attempt in retrying:
                with attempt:
                    return self._attempt(method, path, params, json_body, idempotent, need_data)
        except RetryError as exc:
            last = exc.last_attempt.exception()
            attempts = exc.last_attempt.attempt_number
            raise self._exhausted(method, path, last, attempts) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _stop(self, state: RetryCallState) -> bool:
        """`max_attempts`, or `FIRST_CONTACT_ATTEMPTS` for connection failures before any answer."""
        if state.attempt_number >= self.max_attempts:
            return True
        exc = state.outcome.exception() if state.outcome else None
        first_contact = isinstance(exc, _Retryable) and exc.kind == "connect" and not self._answered
        return first_contact and state.attempt_number >= FIRST_CONTACT_ATTEMPTS

    def _exhausted(self, method: str, path: str, last: BaseException | None, attempts: int) -> OutreachError:
        """The one-line error once retries are used up, naming what kept failing."""
        if isinstance(last, _Retryable) and last.kind == "connect":
            if not self._answered:
                return ServiceUnreachableError(last.reason)
            cause = last.reason.split(": ")[0]
            return ServiceUnreachableError(
                f"{method} {path} failed {attempts} times ({cause}): the service stopped answering; retry later"
            )
        reason = last.reason if isinstance(last, _Retryable) else type(last).__name__
        hint = (
            "retry later, or lower rate_limit_per_minute"
            if isinstance(last, _Retryable) and last.kind == "rate"
            else "retry later"
        )
        return ApiUnavailableError(
            f"{method} {path} failed {attempts} times (last: {reason}): the API is unavailable or overloaded; {hint}"
        )

    def _before_sleep(self, method: str, path: str):  # type: ignore[no-untyped-def]
        def hook(state: RetryCallState) -> None:
            self.stats.add(retries=1)
            exc = state.outcome.exception() if state.outcome else None
            reason = exc.reason if isinstance(exc, _Retryable) else repr(exc)
            pause = state.next_action.sleep if state.next_action else 0.0
            self.stats.pausing(pause, f"{reason}, retrying {method} {path}")
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
        self.deadline.check()
        send_at = None
        if self.limiter is not None:
            self.stats.wait_begins()
            waited = 0.0
            try:
                send_at = self.limiter.reserve()
                waited = max(0.0, send_at - time.monotonic())
                self.deadline.sleep(waited)  # a long pause (after a 429) still ends on a signal or the deadline
            finally:
                self.stats.wait_ends(waited)
        self.stats.add(requests=1)
        try:
            response = self._receive(method, path, params, json_body)
        except httpx.ConnectTimeout:
            self.stats.add(timeouts=1)
            raise _Retryable(
                f"no answer from {self.base_url} within {self._connect_timeout:.0f}s (connect time-out): check the "
                "host and port; a firewall may drop the connection",
                kind="connect",
            ) from None
        except httpx.TimeoutException as exc:
            self.stats.add(timeouts=1)
            if idempotent:
                raise _Retryable(f"time-out ({type(exc).__name__})", kind="timeout") from None
            raise ApiUnavailableError(
                f"{method} {path} timed out; it may or may not have taken effect: check before retrying"
            ) from None
        except httpx.ConnectError as exc:
            raise _Retryable(self._connect_failure(exc), kind="connect") from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            if idempotent:
                raise _Retryable(f"connection error ({type(exc).__name__})", kind="transport") from None
            raise ApiUnavailableError(
                f"{method} {path} lost its connection; it may or may not have taken effect"
            ) from None
        except httpx.LocalProtocolError:  # the request could not be built; its text may hold a header value
            raise ConfigError(
                f"{method} {path}: the request could not be built (invalid characters in the URL or key): check "
                "the base URL and the key"
            ) from None
        except httpx.TransportError as exc:
            raise _Retryable(f"transport error ({type(exc).__name__})", kind="transport") from None
        finally:
            if self.limiter is not None and send_at is not None:
                self.limiter.answered(send_at)
        with self._state_lock:
            self._answered = True
        self._note_date(response)
        return self._handle(method, path, response, idempotent, need_data)

    def _receive(self, method: str, path: str, params: Mapping[str, Any] | None, json_body: Any) -> httpx.Response:
        """The whole response, read within `stall_timeout` of sending: a server that trickles its answer a
        byte at a time never trips the read time-out (`timeout` counts between bytes), so the body is read
        in chunks against this deadline, and against the run's."""
        stalled_at = time.monotonic() + self.stall_timeout
        with self._http.stream(method, path, params=params, json=json_body) as streamed:
            chunks: list[bytes] = []
            for chunk in streamed.iter_bytes():
                chunks.append(chunk)
                self.deadline.check()
                if time.monotonic() > stalled_at:
                    self.stats.add(timeouts=1)
                    raise _Retryable(
                        f"answer not complete within {self.stall_timeout:.0f}s (stall_timeout_s): the service "
                        "sends it too slowly",
                        kind="timeout",
                    )
        headers = [(k, v) for k, v in streamed.headers.multi_items() if k not in ("content-encoding", "content-length")]
        return httpx.Response(streamed.status_code, headers=headers, content=b"".join(chunks), request=streamed.request)

    def _connect_failure(self, exc: httpx.ConnectError) -> str:
        """What went wrong connecting, from the exception chain's types and errno (never its text)."""
        url = self.base_url
        cause: BaseException | None = exc
        seen: set[int] = set()
        while cause is not None and id(cause) not in seen:
            seen.add(id(cause))
            if isinstance(cause, socket.gaierror):
                return f"host {httpx.URL(url).host} not found (DNS) for {url}: check the host name"
            if isinstance(cause, ssl.SSLError):
                return (
                    f"TLS handshake with {url} failed ({type(cause).__name__}): check http vs https and the certificate"
                )
            if isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED:
                return f"connection refused at {url}: is the service running, is the URL right?"
            if isinstance(cause, OSError) and cause.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
                return f"no route to {url} ({errno.errorcode[cause.errno]}): check the host and the network"
            cause = cause.__cause__ or cause.__context__
        return f"could not connect to {url} ({type(exc).__name__})"

    def _note_date(self, response: httpx.Response) -> None:
        value = response.headers.get("Date")
        if not value:
            return
        try:
            when = parse_instant(value)  # an HTTP date is RFC 2822's form; "-0000" is UTC
        except TimestampError:
            return
        with self._state_lock:
            if self._server_time is None or when > self._server_time:
                self._server_time = when

    def _handle(self, method: str, path: str, response: httpx.Response, idempotent: bool, need_data: bool) -> Any:
        status = response.status_code
        self.stats.count_status(status)
        if status == 429:
            self.stats.add(rate_limited=1)
            retry_after = _parse_retry_after(response.headers.get("Retry-After"))
            if retry_after is not None and retry_after > self.max_retry_after:
                raise ApiUnavailableError(
                    f"{method} {path}: the service asked to wait {retry_after:.0f} s before the next request (429, "
                    f"Retry-After), longer than max_retry_after_s ({self.max_retry_after:.0f} s): sync again after "
                    "that wait, or raise [sources.outreach] max_retry_after_s"
                )
            if self.limiter is not None:
                self.limiter.pause(retry_after if retry_after is not None else 2.0)
            log.info("rate limited (429) on %s %s; waiting %ss", method, path, retry_after or "a moment")
            raise _Retryable("429 rate limited", retry_after, kind="rate")
        if status >= 500:
            self.stats.add(server_errors=1)
            if idempotent:
                raise _Retryable(f"server error {status}", kind="server")
            raise ApiUnavailableError(f"{method} {path} failed with {status}: the service had an error; retry later")
        self._check_not_a_web_page(method, path, response)
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
            raise _Retryable("response without `data`", kind="body")
        with self._state_lock:
            self._api_answered = True
        return body

    def _check_not_a_web_page(self, method: str, path: str, response: httpx.Response) -> None:
        """A redirect, or HTML or other non-JSON content, is not the API: the base URL is wrong."""
        status = response.status_code
        if 300 <= status < 400:
            target = response.headers.get("Location", "elsewhere")
            raise BaseUrlError(
                f"{self.base_url}{path} redirects ({status}) to {_safe_url(target)}: use the address it points to "
                "as the base URL (ending in /api/v1)"
            )
        kind = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if not response.content or not kind or kind.endswith("json"):
            return
        if status < 400 or not self._api_answered:
            what = "HTML" if "html" in kind else kind
            raise BaseUrlError(
                f"this URL answers {what}, not the API ({method} {self.base_url}{path} -> {status}): the base URL "
                "must end in /api/v1"
            )

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
                raise _Retryable("truncated or malformed JSON", kind="body") from None
            raise ApiUnavailableError(
                f"{method} {path} took effect but its answer was malformed JSON; check the result before retrying"
            ) from None


class _Listing:
    """What one paged listing (a path and its filters) has shown: pages seen, to spot a repeated page."""

    def __init__(self, stats: ClientStats) -> None:
        self._lock = threading.Lock()
        self._pages: dict[str, int] = {}  # digest of a page's row ids -> page number
        self._last_page = 0
        self._read = 0
        self._stats = stats

    def progress(self) -> tuple[int, int]:
        with self._lock:
            return self._read, self._last_page

    def observe(self, path: str, page: int, items: list[Any], last_page: int) -> None:
        ids = _row_ids(items)
        digest = hashlib.blake2b("\n".join(ids).encode(), digest_size=16).hexdigest() if ids else ""
        with self._lock:
            other = self._pages.get(digest) if digest else None
            if other is not None and other != page:
                raise PagingError(
                    f"GET {path}: page {page} holds the same {len(ids)} rows as page {other}: the API ignores "
                    "`page`, so rows would be missed; stopped before loading anything"
                )
            if digest:
                self._pages[digest] = page
            known = max(self._last_page, last_page)
            grown, self._last_page = known - self._last_page, known
            self._read += 1
        self._stats.add(pages_read=1, pages_known=grown)


def _row_ids(items: list[Any]) -> list[str]:
    return [str(item["id"]) for item in items if isinstance(item, Mapping) and item.get("id") is not None]


def _paging_meta(path: str, page: int, meta: Any) -> tuple[int, int, int | None]:
    """(current_page, last_page, total) from a paged answer's `meta`; PagingError if it has none."""
    if not isinstance(meta, Mapping):
        raise PagingError(
            f"GET {path}: the answer has no paging `meta` (current_page, last_page): cannot tell whether pages "
            "are missing; is the base URL the API's /api/v1?"
        )
    try:
        current = int(meta.get("current_page") or page)
        last = int(meta.get("last_page") or current)
        total = meta.get("total")
        return current, last, int(total) if total is not None else None
    except (TypeError, ValueError):
        raise PagingError(f"GET {path}: `meta` paging numbers are not integers: {dict(meta)!r:.200}") from None


def connectivity_check(client: OutreachClient) -> dict[str, Any]:
    """GET /account: proves the key and URL work (401 -> AuthError at once) and names the workspace.

    A 404 here is the URL's fault, not an id's: /account has no id."""
    try:
        data = client.get_data("/account")
    except NotFoundError:
        raise BaseUrlError(
            f"GET {client.base_url}/account answered 404: this is not the API's base URL (the API answers "
            "/account under its /api/v1); check the path"
        ) from None
    if not isinstance(data, Mapping) or not isinstance(data.get("workspace"), Mapping):
        raise BaseUrlError(
            f"GET {client.base_url}/account: no `workspace` in the answer: is the base URL the API's /api/v1?"
        )
    return dict(data)
