"""Proactive pacing under the API's rate limit, shared by every thread that uses one key.

The service allows at most N requests per key in any trailing 60 s. Two rules
together keep us under it without bursts of 429s:

* a token bucket (GCRA form): a steady N/60 requests a second with a small burst;
* a sliding-window guard: never more than N sends in any (60 s + margin) window,
  which the bucket's burst alone could exceed during the first minute. The service counts a request
  when it arrives, which can be well after we sent it (a connection pool wait, its own latency and
  queue), so a request's place in the window is the time its answer came back (`answered`): the
  request N sends later then goes a full window after the service can have counted the first.

A 429 with ``Retry-After`` pauses every thread of the key (``pause``), so a
refused request does not turn into a stampede of retries.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

Clock = Callable[[], float]
Sleep = Callable[[float], None]


class RateLimiter:
    """Reservation-based limiter: `acquire()` books a send slot and sleeps until it."""

    def __init__(
        self,
        per_minute: int,
        *,
        burst: int = 4,
        window_s: float = 60.0,
        margin_s: float = 1.0,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
    ) -> None:
        if per_minute <= 0:
            raise ValueError("per_minute must be positive; use no limiter to turn pacing off")
        self.per_minute = per_minute
        self._interval = window_s / per_minute
        self._tolerance = max(0, min(burst, per_minute) - 1) * self._interval
        self._window = window_s + margin_s
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tat = 0.0  # theoretical arrival time of the next request (GCRA)
        self._sent: deque[list[float]] = deque(maxlen=per_minute)  # [send time, answered time] per slot
        self._paused_until = 0.0

    def reserve(self) -> float:
        """Book the next send slot; return the absolute clock time to send at."""
        with self._lock:
            now = self._clock()
            send_at = max(now, self._tat - self._tolerance, self._paused_until)
            if len(self._sent) == self._sent.maxlen:
                send_at = max(send_at, self._sent[0][1] + self._window)
            self._tat = max(self._tat, send_at) + self._interval
            self._sent.append([send_at, send_at])
            return send_at

    def answered(self, send_at: float) -> None:
        """The request booked for `send_at` has its answer (or failed) now."""
        with self._lock:
            now = self._clock()
            for slot in reversed(self._sent):
                if slot[0] == send_at and slot[1] == send_at:
                    slot[1] = max(now, send_at)
                    return

    def acquire(self) -> float:
        """Wait for a send slot; return the seconds spent waiting."""
        send_at = self.reserve()
        wait = send_at - self._clock()
        if wait > 0:
            self._sleep(wait)
            return wait
        return 0.0

    def pause(self, seconds: float) -> None:
        """Hold every sender of this key for `seconds` (after a 429)."""
        with self._lock:
            self._paused_until = max(self._paused_until, self._clock() + seconds)


_registry: dict[tuple[int, int], RateLimiter] = {}
_registry_lock = threading.Lock()


def shared_limiter(api_key: str, per_minute: int | None) -> RateLimiter | None:
    """One limiter per (key, limit) in this process, so every client of a key shares its budget.

    Keyed by the key's hash() in memory only; nothing derived from the key is persisted.
    """
    if not per_minute or per_minute <= 0:
        return None
    ident = (hash(api_key), per_minute)
    with _registry_lock:
        limiter = _registry.get(ident)
        if limiter is None:
            limiter = _registry[ident] = RateLimiter(per_minute)
        return limiter
