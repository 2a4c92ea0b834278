"""How long `outreach sandbox` takes to become healthy and its peak RSS, at a large scale and with many workspaces,
and how long a clock advance of one simulated day takes with many workspaces.

Usage: .venv/bin/python -m bench.sandbox_start [--scale large] [--workspaces 500] [--advance-workspaces 200]

Each sandbox runs in its own process (`python -m sandbox`); its peak RSS is VmHWM from /proc/<pid>/status (the
peak of that process since exec, see bench/peak.py), read just before it stops. The baseline, measured in the same
run, is `tiny` with the default two workspaces. Prints one line per measurement and a JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from sandbox.server import SandboxProcess

DAY_S = 86_400
LIMITS = {"scale_start_s": 60, "scale_peak_mb": 4096, "workspaces_start_s": 60, "workspaces_peak_mb": 2048}


def vm_hwm_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a running process, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)  # kB
    raise RuntimeError(f"no VmHWM in /proc/{pid}/status")


def measure_start(scale: str, seed: int, workspaces: int = 2) -> dict[str, Any]:
    """Seconds from process launch to a healthy sandbox, and its peak RSS then."""
    started = time.perf_counter()
    with SandboxProcess(scale=scale, seed=seed, rate_limit=0, workspaces=workspaces, start_timeout=300) as sb:
        elapsed = time.perf_counter() - started
        assert sb.pid is not None
        keys = len(sb.keys())
        peak = vm_hwm_mb(sb.pid)
    return {"scale": scale, "workspaces": workspaces, "keys": keys, "start_s": round(elapsed, 2), "peak_rss_mb": peak}


def measure_advance(scale: str, seed: int, workspaces: int) -> dict[str, Any]:
    """Seconds of `POST /_sandbox/clock` advancing one simulated day (HTTP round trip included)."""
    with SandboxProcess(scale=scale, seed=seed, rate_limit=0, workspaces=workspaces, start_timeout=300) as sb:
        started = time.perf_counter()
        sb.advance(DAY_S)
        elapsed = time.perf_counter() - started
        assert sb.pid is not None
        peak = vm_hwm_mb(sb.pid)
    return {
        "scale": scale,
        "workspaces": workspaces,
        "advance_day_s": round(elapsed, 2),
        "per_workspace_ms": round(1000 * elapsed / workspaces, 2),
        "peak_rss_mb": peak,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="large")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workspaces", type=int, default=500, help="workspaces of --workspaces-scale to start")
    parser.add_argument("--workspaces-scale", default="tiny")
    parser.add_argument("--advance-workspaces", type=int, default=200, help="workspaces for the one-day advance")
    a = parser.parse_args()
    base = measure_start("tiny", a.seed)
    big = measure_start(a.scale, a.seed)
    many = measure_start(a.workspaces_scale, a.seed, a.workspaces)
    advance_base = measure_advance(a.workspaces_scale, a.seed, 2)
    advance_many = measure_advance(a.workspaces_scale, a.seed, a.advance_workspaces)
    print(f"tiny (baseline): start {base['start_s']:.1f} s, peak RSS {base['peak_rss_mb']:.0f} MB")
    print(
        f"{a.scale}: start {big['start_s']:.1f} s (limit 60 s), peak RSS {big['peak_rss_mb']:.0f} MB (limit 4096 MB); "
        f"x{big['start_s'] / base['start_s']:.1f} time and "
        f"x{big['peak_rss_mb'] / base['peak_rss_mb']:.1f} memory of tiny"
    )
    print(
        f"{a.workspaces_scale} x {a.workspaces} workspaces: start {many['start_s']:.1f} s (limit 60 s), "
        f"peak RSS {many['peak_rss_mb']:.0f} MB (limit 2048 MB)"
    )
    print(
        f"advance one day: {advance_base['advance_day_s']:.2f} s at 2 workspaces, "
        f"{advance_many['advance_day_s']:.2f} s at {a.advance_workspaces} "
        f"({advance_many['per_workspace_ms']:.1f} ms each)"
    )
    ok = (
        big["start_s"] < LIMITS["scale_start_s"]
        and big["peak_rss_mb"] < LIMITS["scale_peak_mb"]
        and many["start_s"] < LIMITS["workspaces_start_s"]
        and many["peak_rss_mb"] < LIMITS["workspaces_peak_mb"]
    )
    print(
        json.dumps(
            {
                "bench": "sandbox_start",
                "baseline": base,
                "scale": big,
                "many_workspaces": many,
                "advance_baseline": advance_base,
                "advance_many": advance_many,
                "limits": LIMITS,
                "ok": ok,
            }
        )
    )


if __name__ == "__main__":
    main()
