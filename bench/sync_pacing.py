"""Pacing at the service's default rate limit: a sync needing > 240 requests on one key.

Target (the pacing must use the budget, not waste it or exceed it): elapsed <= 1.15 x (requests / 2 per second)
and <= 1% of responses are 429.
The sandbox (out of process) enforces 120 requests per key in any trailing 60 s; requests and
429s are counted server-side (/_sandbox/metrics). Prints one JSON line.

    .venv/bin/python bench/sync_pacing.py [--scale small] [--latency-ms 0] [--body-cap 260]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def run(scale: str, latency_ms: int, body_cap: int, limit: int, workdir: Path) -> dict[str, object]:
    from pipelines.sync.edge import run_sync
    from sandbox.server import SandboxProcess

    sb = SandboxProcess(scale=scale, rate_limit=limit, latency_ms=latency_ms)
    sb.start()
    try:
        key = next(k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
        sb.reset_metrics()
        started = time.monotonic()
        report = run_sync(
            mode="full",
            api_keys=[key],
            base_url=sb.base_url,
            duckdb_path=workdir / "w.duckdb",
            pipelines_dir=workdir / "pipelines",
            spool_dir=workdir / "no-spool",
            progress=False,
            rate_limit_per_minute=limit,
            reply_body_cap=body_cap,
        )
        elapsed = time.monotonic() - started
        metrics = sb.metrics()
    finally:
        sb.stop()
    requests = int(metrics["requests"])
    r429 = int(metrics["by_status"].get("429", 0))
    ideal = requests / (limit / 60.0)
    ws = report.workspaces[0]
    return {
        "scenario": "sync_pacing",
        "scale": scale,
        "rate_limit_per_minute": limit,
        "latency_ms": latency_ms,
        "requests": requests,
        "responses_429": r429,
        "share_429": round(r429 / requests, 4) if requests else 0.0,
        "elapsed_s": round(elapsed, 1),
        "ideal_s": round(ideal, 1),
        "ratio_to_ideal": round(elapsed / ideal, 3) if ideal else None,
        "extract_s": ws.stage_seconds.get("extract"),
        "load_s": ws.stage_seconds.get("load"),
        "client_rate_wait_s": ws.rate_wait_s,
        "ok": requests > 2 * limit and elapsed <= 1.15 * ideal and r429 <= 0.01 * requests,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="small")
    parser.add_argument("--latency-ms", type=int, default=0)
    parser.add_argument("--body-cap", type=int, default=260, help="reply bodies fetched (sets the request count)")
    parser.add_argument("--rate-limit", type=int, default=120)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="sync_pacing_") as tmp:
        result = run(args.scale, args.latency_ms, args.body_cap, args.rate_limit, Path(tmp))
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
