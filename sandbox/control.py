"""Run-time controls of one sandbox: metrics, rate limiter and fault injection (no module globals)."""

from __future__ import annotations

import math
import random
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass, field

LITERAL_SEGMENTS = frozenset(
    (
        "account campaigns launch pause resume leads stats replies read email-accounts search people companies"
        " import hooks events sample"
    ).split()
)


def route_template(method: str, path: str) -> str:
    """`GET /campaigns/{id}/leads` from `/api/v1/campaigns/<uuid>/leads` (ids replaced by `{id}`)."""
    parts = [p for p in path.removeprefix("/api/v1").split("/") if p]
    return f"{method} /" + "/".join(p if p in LITERAL_SEGMENTS else "{id}" for p in parts)


@dataclass
class Metrics:
    requests: int = 0
    by_route: Counter[str] = field(default_factory=Counter)
    by_status: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, route: str, status: int) -> None:
        with self.lock:
            self.requests += 1
            self.by_route[route] += 1
            self.by_status[str(status)] += 1

    def snapshot(self) -> dict[str, object]:
        with self.lock:
            return {"requests": self.requests, "by_route": dict(self.by_route), "by_status": dict(self.by_status)}

    def reset(self) -> None:
        with self.lock:
            self.requests = 0
            self.by_route.clear()
            self.by_status.clear()


class RateLimiter:
    """At most `limit` accepted requests per key in any trailing 60 s (wall clock); 0 = off."""

    WINDOW = 60.0

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def check(self, key: str) -> tuple[bool, int, int]:
        """(allowed, remaining, retry_after_seconds); an allowed request is counted."""
        if self.limit <= 0:
            return True, 0, 0
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(key, deque())
            while hits and hits[0] <= now - self.WINDOW:
                hits.popleft()
            if len(hits) >= self.limit:
                retry = max(1, math.ceil(hits[0] + self.WINDOW - now))
                return False, 0, retry
            hits.append(now)
            return True, self.limit - len(hits), 0

    def set_limit(self, limit: int) -> None:
        with self._lock:
            self.limit = limit
            self._hits.clear()


@dataclass
class Faults:
    error_rate: float = 0.0
    statuses: tuple[int, ...] = (500, 502, 503)
    timeout_rate: float = 0.0
    truncate_rate: float = 0.0
    latency_ms: int = 0
    hang_ms: int = 30_000
    seed: int = 0
    ignore_page: bool = False  # list endpoints answer page 1 whatever `page` asks
    retry_after_s: int = 1  # the Retry-After of an injected 429
    drip_ms: int = 0  # > 0: bodies are sent one byte at a time, this far apart (a stalling server)
    drip_after: int = 0  # requests answered at full speed before the drip starts
    answered: int = 0
    version: int = 0  # bumped on every change (ends injected hangs)
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self) -> tuple[str, int]:
        """("error", status) | ("timeout", 0) | ("truncate", 0) | ("ok", 0), drawn from the seeded RNG."""
        if not (self.error_rate or self.timeout_rate or self.truncate_rate):
            return "ok", 0
        with self.lock:
            u = self.rng.random()
            if u < self.error_rate:
                return "error", self.rng.choice(self.statuses)
            if u < self.error_rate + self.timeout_rate:
                return "timeout", 0
            if u < self.error_rate + self.timeout_rate + self.truncate_rate:
                return "truncate", 0
            return "ok", 0

    def drips(self) -> bool:
        """Whether this request's body is dripped (counts the request)."""
        if not self.drip_ms:
            return False
        with self.lock:
            self.answered += 1
            return self.answered > self.drip_after

    def as_dict(self) -> dict[str, object]:
        return {
            "error_rate": self.error_rate,
            "statuses": list(self.statuses),
            "timeout_rate": self.timeout_rate,
            "truncate_rate": self.truncate_rate,
            "latency_ms": self.latency_ms,
            "hang_ms": self.hang_ms,
            "seed": self.seed,
            "ignore_page": self.ignore_page,
            "retry_after_s": self.retry_after_s,
            "drip_ms": self.drip_ms,
            "drip_after": self.drip_after,
        }
