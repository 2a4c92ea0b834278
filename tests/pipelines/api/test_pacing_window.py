"""The pacer's sliding window counts a request from when its answer came back: the service counts it on
arrival, which may be well after we sent it, so the request N sends later must wait a full window after
the answer (a fake clock; one function under test)."""

from __future__ import annotations

import time
from typing import Any

from test_sync_support import admin_keys

from pipelines.api.accounts import check_keys, new_client
from pipelines.api.pacing import RateLimiter, shared_limiter


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_window_starts_at_the_answer_not_at_the_send() -> None:
    clock = Clock()
    limiter = RateLimiter(3, burst=1, clock=clock, sleep=lambda s: None)
    first = limiter.reserve()
    assert first == 0.0
    clock.now = 5.0  # the first request's answer arrives 5 s after it was sent (a slow service, a queue)
    limiter.answered(first)
    second, third = limiter.reserve(), limiter.reserve()
    for sent in (second, third):
        clock.now = sent
        limiter.answered(sent)
    fourth = limiter.reserve()
    # 3 a minute: the 4th goes a window (60 s + 1 s margin) after the service can have counted the 1st
    assert fourth >= 5.0 + 61.0, fourth


def test_without_an_answer_the_window_starts_at_the_send() -> None:
    clock = Clock()
    limiter = RateLimiter(3, burst=1, clock=clock, sleep=lambda s: None)
    sends = [limiter.reserve() for _ in range(4)]
    assert sends[:3] == [0.0, 20.0, 40.0]
    assert sends[3] == 61.0


def test_the_key_check_counts_against_the_keys_pacer(make_sandbox: Any) -> None:
    """GET /account is a request the service counts: it goes through the key's shared pacer, so a sync at
    exactly the limit sends no more than the limit in its first minute (it drew one 429 before)."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    (found,) = check_keys([key], sb.base_url, rate_limit_per_minute=3)
    assert not isinstance(found, Exception), found
    with new_client(key, sb.base_url, rate_limit_per_minute=3) as client:
        client.get_data("/account")
        client.get_data("/account")
    limiter = shared_limiter(key, 3)
    assert limiter is not None
    # the 4th request of this key (1 check + 2 reads before it) waits for the window: 3 a minute
    assert limiter.reserve() - time.monotonic() > 50
