"""Pacing over real HTTP (small case): a slow service (200 ms latency) and a 600/min limit.

Requests overlap to use the budget despite the latency, pacing keeps the rate at the limit
(never above: no 429s), and the run takes about requests / (limit per second). The full-size
case (> 240 requests at 120/min) is bench/sync_pacing.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_sync_support import admin_keys

from pipelines.sync.edge import run_sync


def test_paced_sync_uses_the_budget_and_sees_no_429(make_sandbox: Any, tmp_path: Path) -> None:
    limit = 600
    sb = make_sandbox(scale="small", rate_limit=limit, latency_ms=200)
    key = admin_keys(sb)[0]
    sb.reset_metrics()
    report = run_sync(
        mode="full",
        api_keys=[key],
        base_url=sb.base_url,
        duckdb_path=tmp_path / "w.duckdb",
        pipelines_dir=tmp_path / "pipelines",
        spool_dir=tmp_path / "none",
        progress=False,
        rate_limit_per_minute=limit,
        reply_body_cap=100,
    )
    metrics = sb.metrics()
    requests = metrics["requests"]
    assert requests >= 120
    assert metrics["by_status"].get("429", 0) == 0
    ws = report.workspaces[0]
    ideal = requests / (limit / 60)
    # sequential requests at 200 ms would need requests * 0.2 s = 2x the ideal; overlap gets close to it
    assert ws.stage_seconds["extract"] <= 1.15 * ideal + 3.0, (ws.stage_seconds, ideal)
    # and the pacer did hold requests back (proactive), rather than the service refusing them
    assert ws.rate_wait_s > 0
