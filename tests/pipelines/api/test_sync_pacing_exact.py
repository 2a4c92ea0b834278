"""Pacing at exactly the sandbox's documented limit (120 requests a minute per key, counted over any trailing
60 s): a sync of more than one window's worth of requests, with the default pacing, draws no 429 at all, as
counted by the sandbox itself (`/_sandbox/metrics`). Requests 121 and later are the ones that test the
window: each must arrive a full minute after the one 120 before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_sync_support import admin_keys

from pipelines.api.client import DEFAULT_RATE_LIMIT_PER_MINUTE
from pipelines.sync.edge import run_sync


def test_a_sync_at_exactly_the_limit_sees_no_429(make_sandbox: Any, tmp_path: Path) -> None:
    limit = 120
    assert DEFAULT_RATE_LIMIT_PER_MINUTE == limit  # the default pacing is the documented limit
    sb = make_sandbox(scale="small", rate_limit=limit, latency_ms=20)
    key = admin_keys(sb)[0]
    sb.reset_metrics()  # the key check's request counts against the key's window like any other
    run_sync(
        mode="full",
        api_keys=[key],
        base_url=sb.base_url,
        duckdb_path=tmp_path / "w.duckdb",
        pipelines_dir=tmp_path / "pipelines",
        spool_dir=tmp_path / "none",
        progress=False,
        reply_body_cap=100,
    )
    metrics = sb.metrics()
    assert metrics["requests"] > limit + 10, metrics["requests"]  # well past the first window's boundary
    assert metrics["by_status"].get("429", 0) == 0, metrics["by_status"]
