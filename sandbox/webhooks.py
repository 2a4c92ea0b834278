"""Webhook deliveries: signed POSTs from a small worker pool, with retries and endpoint pausing.

Deliveries to one subscription go one at a time, in event order; different subscriptions run in parallel.

Timing (documented in README): time-out 15 s per attempt; up to 3 retries after 0.5 s, 1 s and 2 s;
an endpoint (subscription) is paused after 15 consecutive failed attempts.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson

from .model import Hook

log = logging.getLogger(__name__)

TIMEOUT_S = 15.0
RETRY_DELAYS_S = (0.5, 1.0, 2.0)
PAUSE_AFTER_FAILURES = 15
USER_AGENT = "Service-Webhooks/1.0"


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """`v1=` + hex HMAC-SHA256 of `timestamp.body` with the workspace signing secret."""
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def target_problem(url: str, insecure: bool) -> str | None:
    """Why a target URL is refused, or None when it is allowed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "The target_url must be a valid URL."
    if not parts.hostname or parts.scheme not in ("https", "http"):
        return "The target_url must be an absolute https URL."
    if parts.scheme == "https":
        return None
    if insecure and _is_loopback(parts.hostname):
        return None
    if insecure:
        return "The target_url must use https (http is allowed only on loopback with --insecure-hooks)."
    return "The target_url must use https."


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Webhooks:
    """Queues deliveries and keeps a record of every attempt (served at /_sandbox/hooks/deliveries)."""

    def __init__(self, retry_delays: tuple[float, ...] = RETRY_DELAYS_S) -> None:
        self.retry_delays = retry_delays
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sandbox-hooks")
        self._client = httpx.Client(timeout=TIMEOUT_S, headers={"User-Agent": USER_AGENT})
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []
        self._pending = 0
        self._closed = False
        self._endpoint_locks: dict[str, threading.Lock] = {}

    def emit(self, hook: Hook, secret: str, payload: dict[str, Any]) -> None:
        """Queue one delivery of payload to hook (skipped with status "paused" if the endpoint is paused)."""
        record: dict[str, Any] = {
            "id": f"dlv_{len(self._records) + 1}",
            "subscription_id": hook.id,
            "event": payload["event"],
            "target": hook.target,
            "status": "pending",
            "attempts": [],
            "payload": payload,
        }
        with self._lock:
            record["id"] = f"dlv_{len(self._records) + 1}"
            self._records.append(record)
            if hook.paused or self._closed:
                record["status"] = "paused"
                return
            self._pending += 1
        self._pool.submit(self._deliver, hook, secret, record)

    def _deliver(self, hook: Hook, secret: str, record: dict[str, Any]) -> None:
        with self._lock:
            endpoint_lock = self._endpoint_locks.setdefault(hook.id, threading.Lock())
        with endpoint_lock:  # one delivery at a time per subscription: in order, and exact failure counts
            self._deliver_one(hook, secret, record)

    def _deliver_one(self, hook: Hook, secret: str, record: dict[str, Any]) -> None:
        body = orjson.dumps(record["payload"])
        try:
            for attempt in range(len(self.retry_delays) + 1):
                if hook.paused or self._closed:
                    record["status"] = "paused"
                    return
                if attempt:
                    time.sleep(self.retry_delays[attempt - 1])
                timestamp = str(int(time.time()))
                headers = {
                    "Content-Type": "application/json",
                    "X-Service-Event": record["event"],
                    "X-Service-Timestamp": timestamp,
                    "X-Service-Signature": sign(secret, timestamp, body),
                }
                status, error = self._post(hook.target, body, headers)
                with self._lock:
                    record["attempts"].append({"at": timestamp, "status_code": status, "error": error})
                    if status is not None and 200 <= status < 300:
                        hook.consecutive_failures = 0
                        record["status"] = "delivered"
                        return
                    hook.consecutive_failures += 1
                    if hook.consecutive_failures >= PAUSE_AFTER_FAILURES:
                        hook.paused = True
                        log.warning("webhook endpoint paused after %d consecutive failures", PAUSE_AFTER_FAILURES)
            record["status"] = "failed"
        finally:
            with self._lock:
                self._pending -= 1

    def _post(self, url: str, body: bytes, headers: dict[str, str]) -> tuple[int | None, str | None]:
        try:
            response = self._client.post(url, content=body, headers=headers)
        except httpx.HTTPError as exc:
            return None, type(exc).__name__
        return response.status_code, None

    def snapshot(self) -> tuple[list[dict[str, Any]], int]:
        with self._lock:
            items = [{**r, "attempts": list(r["attempts"])} for r in self._records]
            return items, self._pending

    def close(self) -> None:
        self._closed = True
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._client.close()
