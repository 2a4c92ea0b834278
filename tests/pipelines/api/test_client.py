"""Unit tests of the API client and the pacer (httpx.MockTransport; fake clock for the pacer)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from pipelines.api.client import OutreachClient
from pipelines.api.pacing import RateLimiter
from pipelines.api.retry import Retryable
from pipelines.api.retry import backoff_wait as real_wait
from pipelines.core.errors import (
    ApiUnavailableError,
    AuthError,
    ConfigError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
)

KEY = "sk_test_SECRET_1234567890"


def make_client(handler: Any, **kw: Any) -> OutreachClient:
    kw.setdefault("rate_limit_per_minute", 0)
    return OutreachClient(KEY, "http://api.test/api/v1", transport=httpx.MockTransport(handler), **kw)


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Retry waits of a few ms so the retry tests stay fast (the wait logic itself is tested below)."""
    import pipelines.api.client as client_mod

    real = client_mod.backoff_wait
    monkeypatch.setattr(client_mod, "backoff_wait", lambda state: min(real(state), 0.01))


def test_bearer_auth_and_paging_follow_last_page() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        page = int(request.url.params["page"])
        return httpx.Response(
            200, json={"data": [{"id": f"r{page}"}], "meta": {"current_page": page, "last_page": 3, "total": 3}}
        )

    with make_client(handler) as client:
        ids = [item["id"] for page in client.iter_pages("/campaigns/x/leads", per_page=200) for item in page.items]
    assert ids == ["r1", "r2", "r3"]
    assert all(r.headers["Authorization"] == f"Bearer {KEY}" for r in seen)
    assert {r.url.params["per_page"] for r in seen} == {"200"}
    assert str(seen[0].url).startswith("http://api.test/api/v1/campaigns/x/leads")


@pytest.mark.parametrize(
    ("status", "error", "fragment"),
    [
        (401, AuthError, "API key rejected (401)"),
        (403, ForbiddenError, "(403)"),
        (404, NotFoundError, "(404)"),
        (422, InvalidRequestError, "name: is required"),
    ],
)
def test_client_errors_are_typed_and_never_retried(status: int, error: type, fragment: str) -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(status, json={"message": "nope", "errors": {"name": ["is required"]}})

    with make_client(handler) as client, pytest.raises(error) as info:
        client.get("/campaigns/abc")
    assert calls == 1
    assert fragment in str(info.value)
    assert KEY not in str(info.value) and "\n" not in str(info.value)
    if status == 401:  # every place a key is set: with keys in SOURCES__OUTREACH__API_KEYS, it named API_KEY only
        assert "SOURCES__OUTREACH__API_KEY (or __API_KEYS, --api-key, " in str(info.value)
        assert "api_key or api_keys in .dlt/secrets.toml" in str(info.value)
    if status == 422:
        assert info.value.errors == {"name": ["is required"]}


def test_transient_failures_are_retried_until_success() -> None:
    script = iter(["500", "503", "truncated", "nodata", "timeout", "reset", "429", "ok"])

    def handler(request: httpx.Request) -> httpx.Response:
        step = next(script)
        if step == "timeout":
            raise httpx.ReadTimeout("slow", request=request)
        if step == "reset":
            raise httpx.RemoteProtocolError("peer closed", request=request)
        if step == "429":
            return httpx.Response(429, headers={"Retry-After": "0"})
        if step == "truncated":
            return httpx.Response(200, content=b'{"data": [{"id": "x"')
        if step == "nodata":
            return httpx.Response(200, json={"unexpected": True})
        if step == "ok":
            return httpx.Response(200, json={"data": {"workspace": {"id": "w"}}})
        return httpx.Response(int(step))

    with make_client(handler) as client:
        assert client.get_data("/account") == {"workspace": {"id": "w"}}
        stats = client.stats.snapshot()
    assert stats["retries"] == 7
    assert stats["rate_limited"] == 1
    assert stats["requests"] == 8


def test_retries_exhausted_raise_api_unavailable() -> None:
    with (
        make_client(lambda r: httpx.Response(502), max_attempts=3) as client,
        pytest.raises(ApiUnavailableError) as info,
    ):
        client.get("/campaigns")
    assert "failed 3 times" in str(info.value) and KEY not in str(info.value)


def test_post_is_not_retried_after_a_server_error() -> None:
    calls = 0

    def handler(request: httpx.Request) -> httpx.Response:
        nonlocal calls
        calls += 1
        return httpx.Response(500)

    with make_client(handler) as client, pytest.raises(ApiUnavailableError):
        client.post("/hooks", {"event": "lead.replied", "target_url": "https://x"})
    assert calls == 1


def test_post_sends_json_and_returns_unwrapped_body() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        assert json.loads(request.content) == {"event": "lead.replied", "target_url": "https://x"}
        return httpx.Response(201, json={"id": "h1", "event": "lead.replied", "target": "https://x"})

    with make_client(handler) as client:
        assert client.post("/hooks", {"event": "lead.replied", "target_url": "https://x"})["id"] == "h1"


def test_retry_after_drives_the_wait_else_exponential_backoff() -> None:
    class Outcome:
        def __init__(self, exc: Exception) -> None:
            self._exc = exc

        def exception(self) -> Exception:
            return self._exc

    class State:
        def __init__(self, exc: Exception, attempt: int) -> None:
            self.outcome = Outcome(exc)
            self.attempt_number = attempt

    assert 7.0 <= real_wait(State(Retryable("429", retry_after=7), 1)) <= 7.5  # type: ignore[arg-type]
    waits = [real_wait(State(Retryable("500"), 6)) for _ in range(50)]  # type: ignore[arg-type]
    assert all(0.1 <= w <= 16.0 for w in waits) and len({round(w, 3) for w in waits}) > 10  # jittered


def test_missing_key_or_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="SOURCES__OUTREACH__API_KEY"):
        OutreachClient("", "http://x/api/v1")
    with pytest.raises(ConfigError, match="SOURCES__OUTREACH__BASE_URL"):
        OutreachClient(KEY, "")
    assert KEY not in repr(OutreachClient(KEY, "http://x/api/v1"))


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def _sends(limiter: RateLimiter, clock: FakeClock, n: int) -> list[float]:
    times = []
    for _ in range(n):
        limiter.acquire()
        times.append(clock.now)
    return times


def test_pacer_never_exceeds_the_window_and_runs_at_the_limit() -> None:
    clock = FakeClock()
    limiter = RateLimiter(120, clock=clock, sleep=clock.sleep)
    times = _sends(limiter, clock, 600)
    # at most 120 sends in any trailing 60 s window
    j = 0
    for i, t in enumerate(times):
        while times[j] <= t - 60.0:
            j += 1
        assert i - j + 1 <= 120
    # steady 2/s: 600 requests take about 300 s (within 1.15x)
    assert 290 <= times[-1] <= 300 * 1.15
    # small burst at the start, then paced
    assert times[3] == 0.0 and times[4] > 0.0


def test_pacer_pause_holds_every_sender() -> None:
    clock = FakeClock()
    limiter = RateLimiter(600, clock=clock, sleep=clock.sleep)
    limiter.acquire()
    limiter.pause(5.0)
    limiter.acquire()
    assert clock.now >= 5.0
