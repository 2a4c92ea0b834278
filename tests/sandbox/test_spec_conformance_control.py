"""Independent conformance check of the sandbox control plane (DESIGN.md contract): clock, metrics, faults.

Each test starts its own tiny sandbox because every one of them changes control-plane state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from test_spec_conformance_support import (
    advance,
    api,
    control_get,
    control_post,
    control_url,
    fetch_keys,
    is_utc_timestamp,
    ok_data,
    parse_timestamp,
)

FAULTS_OFF: dict[str, Any] = {}


def _faults(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "error_rate": 0.0,
        "statuses": [503],
        "timeout_rate": 0.0,
        "truncate_rate": 0.0,
        "latency_ms": 0,
        "seed": 1,
    }
    body.update(overrides)
    return body


def test_control_plane_needs_no_key_and_clock_returns_now(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    assert httpx.get(control_url(sb, "health")).json() == {"data": {"status": "ok"}}
    first = advance(sb, 60)
    second = advance(sb, 3600)
    assert is_utc_timestamp(first) or parse_timestamp(first).utcoffset() is not None, f"now is ISO: {first!r}"
    delta = (parse_timestamp(second) - parse_timestamp(first)).total_seconds()
    assert delta == 3600, f"advancing 3600 s moved `now` by {delta} s"


def test_metrics_count_api_calls_only(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    control_post(sb, "metrics/reset", {})
    zero = control_get(sb, "metrics")["data"]
    assert zero["requests"] == 0, f"metrics/reset zeroes the counters: {zero}"
    assert sum(zero["by_route"].values()) == 0 and sum(zero["by_status"].values()) == 0
    with api(sb, keys.a_rw) as c:
        ok_data(c.get("/campaigns"))
        ok_data(c.get("/campaigns", params={"per_page": 2}))
        ok_data(c.get("/account"))
    with api(sb, None) as anonymous:
        assert anonymous.get("/account").status_code == 401
    control_get(sb, "health")
    control_get(sb, "keys")
    metrics = control_get(sb, "metrics")["data"]
    assert metrics["requests"] == 4, f"only the 4 /api/v1 calls count: {metrics}"
    assert metrics["by_route"].get("GET /campaigns") == 2, metrics["by_route"]
    assert metrics["by_route"].get("GET /account") == 2, metrics["by_route"]
    assert metrics["by_status"] == {"200": 3, "401": 1}, metrics["by_status"]
    assert sum(metrics["by_route"].values()) == metrics["requests"]


def test_fault_injection_statuses_seed_latency_and_off(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    with api(sb, keys.a_rw) as c:
        control_post(sb, "faults", _faults(error_rate=1.0, statuses=[500, 502]))
        statuses = {c.get("/hooks/events").status_code for _ in range(12)}
        assert statuses <= {500, 502} and statuses, f"error_rate 1.0 gives only the listed statuses, got {statuses}"
        assert control_get(sb, "health") == {"data": {"status": "ok"}}, "faults apply to /api/v1 only"

        control_post(sb, "faults", _faults(error_rate=0.5, statuses=[503], seed=11))
        run_a = [c.get("/hooks/events").status_code for _ in range(30)]
        control_post(sb, "faults", _faults(error_rate=0.5, statuses=[503], seed=11))
        run_b = [c.get("/hooks/events").status_code for _ in range(30)]
        assert set(run_a) == {200, 503}, f"error_rate 0.5 mixes successes and errors: {run_a}"
        assert run_a == run_b, "fault injection is seeded: the same settings replay the same sequence"

        control_post(sb, "faults", _faults(latency_ms=400))
        start = time.monotonic()
        assert c.get("/hooks/events").status_code == 200
        assert time.monotonic() - start >= 0.4, "latency_ms adds latency"

        control_post(sb, "faults", FAULTS_OFF)
        start = time.monotonic()
        assert all(c.get("/hooks/events").status_code == 200 for _ in range(10)), "{} turns faults off"
        assert time.monotonic() - start < 2.0


def test_fault_injection_truncates_bodies(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    control_post(sb, "faults", _faults(truncate_rate=1.0))
    with api(sb, keys.a_rw) as c:
        try:
            resp = c.get("/campaigns")
            text = resp.text
        except httpx.TransportError:
            text = None  # a body cut short of its Content-Length is a truncation too
        if text is not None:
            try:
                json.loads(text)
            except json.JSONDecodeError:
                pass
            else:
                raise AssertionError(f"truncate_rate 1.0 returned a complete JSON body: {text[:120]!r}")
    control_post(sb, "faults", FAULTS_OFF)
    with api(sb, keys.a_rw) as c:
        ok_data(c.get("/campaigns"))


def test_fault_injection_times_out(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    control_post(sb, "faults", _faults(timeout_rate=1.0))
    with api(sb, keys.a_rw, timeout=2.0) as c:
        try:
            resp = c.get("/hooks/events")
        except httpx.TimeoutException:
            resp = None
        assert resp is None or resp.status_code in (408, 504), f"timeout_rate 1.0 answered {resp and resp.status_code}"
    control_post(sb, "faults", FAULTS_OFF)
    with api(sb, keys.a_rw) as c:
        ok_data(c.get("/hooks/events"))
