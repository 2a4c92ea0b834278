"""Control plane: metrics, rate limit (sliding window, Retry-After, headers), fault injection, process mode."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest


def _client(sb: Any, level: str = "rw", timeout: float = 10) -> httpx.Client:
    k = next(k for k in sb.keys() if k["level"] == level and k["role"] == "admin")
    return httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {k['key']}"}, timeout=timeout)


def test_metrics_by_route_and_status(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    c = _client(sb)
    sb.reset_metrics()
    cid = c.get("/campaigns").json()["data"][0]["id"]
    c.get(f"/campaigns/{cid}/leads")
    c.get(f"/campaigns/{cid}/leads")
    httpx.get(sb.base_url + "/account")
    httpx.get(sb.url + "/_sandbox/health")  # the control plane is not counted
    m = sb.metrics()
    assert m == {
        "requests": 4,
        "by_route": {"GET /campaigns": 1, "GET /campaigns/{id}/leads": 2, "GET /account": 1},
        "by_status": {"200": 3, "401": 1},
    }
    sb.reset_metrics()
    assert sb.metrics()["requests"] == 0


def test_rate_limit_sliding_window(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=3)
    c = _client(sb)
    got = [c.get("/account") for _ in range(3)]
    assert [r.headers["X-RateLimit-Remaining"] for r in got] == ["2", "1", "0"]
    assert got[0].headers["X-RateLimit-Limit"] == "3"
    refused = c.get("/account")
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "retry after" in refused.json()["message"]
    assert _client(sb, "read").get("/account").status_code == 200  # limits are per key
    assert c.get("/account").status_code == 429  # refused requests do not extend the window
    assert sb.metrics()["by_status"]["429"] == 2
    sb.set_rate_limit(0)
    assert all(c.get("/account").status_code == 200 for _ in range(5))


def test_rate_limit_window_reopens(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=2)
    sb.app.state.sandbox.limiter.WINDOW = 1.0  # same sliding-window logic on a 1 s window
    c = _client(sb)
    assert [c.get("/account").status_code for _ in range(3)] == [200, 200, 429]
    time.sleep(1.05)
    assert c.get("/account").status_code == 200


def test_faults_errors_truncation_latency_seeded(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    c = _client(sb)
    sb.set_faults(error_rate=1.0, statuses=[503])
    assert c.get("/account").status_code == 503
    sb.set_faults(error_rate=1.0, statuses=[429])
    r = c.get("/account")
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"
    sb.set_faults(truncate_rate=1.0)
    r = c.get("/campaigns")
    assert r.status_code == 200
    with pytest.raises(ValueError):
        r.json()
    sb.set_faults(latency_ms=150)
    start = time.perf_counter()
    assert c.get("/account").status_code == 200
    assert time.perf_counter() - start >= 0.15
    assert httpx.get(sb.url + "/_sandbox/health").status_code == 200  # control plane unaffected

    def run() -> list[int]:
        sb.set_faults(error_rate=0.3, truncate_rate=0.2, seed=5)
        return [c.get("/account").status_code for _ in range(30)]

    first = run()
    assert first == run() and 0 < first.count(200) < 30  # seeded: the same sequence again
    sb.set_faults()
    assert [c.get("/account").status_code for _ in range(5)] == [200] * 5
    assert sb.metrics()["requests"] == 69  # every request is counted, faulted ones too


def test_timeout_fault_hangs_then_closes(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    sb.set_faults(timeout_rate=1.0, hang_ms=300)
    with pytest.raises(httpx.ReadTimeout):
        _client(sb, timeout=0.1).get("/account")
    start = time.perf_counter()
    r = _client(sb, timeout=5).get("/account")
    assert r.status_code == 504 and time.perf_counter() - start >= 0.3
    r = httpx.post(sb.url + "/_sandbox/faults", json={"error_rate": 2})
    assert r.status_code == 422 and "error_rate" in r.json()["errors"]


def test_sandbox_process(tmp_path: Any) -> None:
    from sandbox.server import SandboxProcess

    with SandboxProcess(scale="tiny", rate_limit=0) as sp:
        assert sp.pid and sp.url.startswith("http://127.0.0.1:")
        c = httpx.Client(base_url=sp.base_url, headers={"Authorization": f"Bearer {sp.keys()[0]['key']}"})
        assert c.get("/account").status_code == 200
        assert sp.advance(60).startswith("2026-03-10T15:01")
        assert sp.metrics()["requests"] == 1
    assert sp.proc is None
