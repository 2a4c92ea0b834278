"""Counters of one API client: requests, retries, waits for the rate limit, pages; read by the progress."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any


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
