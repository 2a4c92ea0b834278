"""HTTP client for the Outreach Campaign Service API: one per API key.

Bearer auth, paging (`pipelines.api.paging`), proactive pacing (`pipelines.api.pacing`) and retries
(`pipelines.api.retry`). Thread-safe: worker threads share one client, one connection pool and one rate
budget. Configuration mistakes are told apart from outages: the base URL and key are checked before the
first request (`pipelines.api.url_and_key`), and until the service has answered once, a connection that
fails is tried `FIRST_CONTACT_ATTEMPTS` times, not `max_attempts`.

The key lives only in the ``Authorization`` header of the httpx client; it is
never logged and never part of an exception message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import httpx
from tenacity import RetryCallState, RetryError, Retrying, retry_if_exception_type

from pipelines.api.answers import answer_date, client_error, json_body, rate_limit_wait
from pipelines.api.client_stats import ClientStats
from pipelines.api.http_watch import WatchedTransport, watching
from pipelines.api.pacing import RateLimiter, shared_limiter
from pipelines.api.paging import Listing, PagedReads
from pipelines.api.retry import MAX_RETRY_AFTER_S, Retryable, backoff_wait, connect_failure, exhausted_error
from pipelines.api.url_and_key import check_api_key, check_base_url, check_not_a_web_page
from pipelines.core.deadline import Deadline
from pipelines.core.errors import ApiUnavailableError, ConfigError

log = logging.getLogger(__name__)

DEFAULT_RATE_LIMIT_PER_MINUTE = 120
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_STALL_TIMEOUT_S = 120.0
DEFAULT_MAX_ATTEMPTS = 8
FIRST_CONTACT_ATTEMPTS = 2
"""Attempts of a request whose connection fails before the service has ever answered this client: a
refused connection or an unknown host at the start is a wrong URL or a stopped service far more often
than a blip, so it is tried once more (a service restarting right now), not `max_attempts` times. The
same for an answer that stalled (`stall_timeout_s`): one that stalls twice in a row is a service, or a
proxy, that stays this slow, and `max_attempts` stalls would hold a sync for many times the stall."""


class OutreachClient(PagedReads):
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
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {key}", "Accept": "application/json"},
            timeout=httpx.Timeout(timeout, connect=self._connect_timeout),
            limits=limits,
            transport=transport or WatchedTransport(limits),  # reads end on a signal or a stall
            follow_redirects=False,
        )
        self._state_lock = threading.Lock()
        self._answered = False  # any HTTP answer seen: the URL reaches a server
        self._api_answered = False  # a 2xx JSON answer seen: the URL is the API
        self._server_time: datetime | None = None
        self._listings: dict[str, Listing] = {}

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
            retry=retry_if_exception_type(Retryable),
            wait=backoff_wait,
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
            raise exhausted_error(method, path, last, attempts, answered=self._answered) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _stop(self, state: RetryCallState) -> bool:
        """`max_attempts`, or `FIRST_CONTACT_ATTEMPTS` for connection failures before any answer."""
        if state.attempt_number >= self.max_attempts:
            return True
        exc = state.outcome.exception() if state.outcome else None
        first_contact = isinstance(exc, Retryable) and exc.kind in ("connect", "transport") and not self._answered
        if first_contact or (isinstance(exc, Retryable) and exc.kind == "stall"):
            return state.attempt_number >= FIRST_CONTACT_ATTEMPTS
        return False

    def _before_sleep(self, method: str, path: str):  # type: ignore[no-untyped-def]
        def hook(state: RetryCallState) -> None:
            self.stats.add(retries=1)
            exc = state.outcome.exception() if state.outcome else None
            reason = exc.reason if isinstance(exc, Retryable) else repr(exc)
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
            raise Retryable(
                f"no answer from {self.base_url} within {self._connect_timeout:.0f}s (connect time-out): check the "
                "host and port; a firewall may drop the connection",
                kind="connect",
            ) from None
        except httpx.TimeoutException as exc:
            self.stats.add(timeouts=1)
            if idempotent:
                raise Retryable(f"time-out ({type(exc).__name__})", kind="timeout") from None
            raise ApiUnavailableError(
                f"{method} {path} timed out; it may or may not have taken effect: check before retrying"
            ) from None
        except httpx.ConnectError as exc:
            raise Retryable(connect_failure(exc, self.base_url), kind="connect") from None
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            if idempotent and not self._answered:  # a server that has never answered HTTP: another one at that port
                raise Retryable(
                    f"{self.base_url} closed the connection without an HTTP answer ({type(exc).__name__})",
                    kind="transport",
                ) from None
            if idempotent:
                raise Retryable(f"connection error ({type(exc).__name__})", kind="transport") from None
            raise ApiUnavailableError(
                f"{method} {path} lost its connection; it may or may not have taken effect"
            ) from None
        except httpx.LocalProtocolError:  # the request could not be built; its text may hold a header value
            raise ConfigError(
                f"{method} {path}: the request could not be built (invalid characters in the URL or key): check "
                "the base URL and the key"
            ) from None
        except httpx.TransportError as exc:
            raise Retryable(f"transport error ({type(exc).__name__})", kind="transport") from None
        finally:
            if self.limiter is not None and send_at is not None:
                self.limiter.answered(send_at)
        self._note_date(response)
        return self._handle(method, path, response, idempotent, need_data)

    def _receive(self, method: str, path: str, params: Mapping[str, Any] | None, json_body: Any) -> httpx.Response:
        """The whole response, status line and headers included, within `stall_timeout` of sending: a server
        that trickles its answer a byte at a time never trips the read time-out (`timeout` counts between
        bytes). Every socket read looks at this deadline, and the run's, at least every
        `http_watch.SLICE_S`, so a signal also ends a request in flight."""
        stalled_at = time.monotonic() + self.stall_timeout

        def check() -> None:
            self.deadline.check()
            if time.monotonic() > stalled_at:
                self.stats.add(timeouts=1)
                raise Retryable(
                    f"answer not complete within {self.stall_timeout:.0f}s (stall_timeout_s): the service "
                    "sends it too slowly",
                    kind="stall",
                )

        with watching(check), self._http.stream(method, path, params=params, json=json_body) as streamed:
            with self._state_lock:  # a status line came: an HTTP server is there, whatever becomes of the body
                self._answered = True
            body = streamed.read()
        headers = [(k, v) for k, v in streamed.headers.multi_items() if k not in ("content-encoding", "content-length")]
        return httpx.Response(streamed.status_code, headers=headers, content=body, request=streamed.request)

    def _note_date(self, response: httpx.Response) -> None:
        when = answer_date(response)
        with self._state_lock:
            if when is not None and (self._server_time is None or when > self._server_time):
                self._server_time = when

    def _handle(self, method: str, path: str, response: httpx.Response, idempotent: bool, need_data: bool) -> Any:
        status = response.status_code
        self.stats.count_status(status)
        if status == 429:
            self.stats.add(rate_limited=1)
            retry_after = rate_limit_wait(method, path, response, self.max_retry_after)
            if self.limiter is not None:
                self.limiter.pause(retry_after if retry_after is not None else 2.0)
            log.info("rate limited (429) on %s %s; waiting %ss", method, path, retry_after or "a moment")
            raise Retryable("429 rate limited", retry_after, kind="rate")
        if status >= 500:
            self.stats.add(server_errors=1)
            if idempotent:
                raise Retryable(f"server error {status}", kind="server")
            raise ApiUnavailableError(f"{method} {path} failed with {status}: the service had an error; retry later")
        check_not_a_web_page(method, path, response, base_url=self.base_url, api_answered=self._api_answered)
        body = json_body(method, path, response, strict=status < 400, idempotent=idempotent, stats=self.stats)
        refused = client_error(method, path, status, body)
        if refused is not None:
            raise refused
        if need_data and (not isinstance(body, Mapping) or "data" not in body):
            self.stats.add(bad_bodies=1)
            raise Retryable("response without `data`", kind="body")
        with self._state_lock:
            self._api_answered = True
        return body
