"""The other helpers' standalone bench scripts, run as they are, each printing one JSON line at the end."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

BENCH_DIR = Path(__file__).resolve().parent
SCRIPTS = {
    "sync_pacing": "bench/sync_pacing.py",  # pipeline helper: >240-request sync at 120/min, 429 share
    "sync_memory": "bench/sync_memory.py",  # pipeline helper: peak RSS of a large (1M recipients) full sync
    "models_build": "bench/models_build.py",  # models helper: build time and memory, 1M and 10M recipients
    "models_incremental": "bench/models_incremental.py",  # full vs incremental build after a 1% change, 1M and 10M
    "receiver_throughput": "bench/receiver_throughput.py",  # hooks helper: deliveries/s on loopback
    "sandbox_start": "bench/sandbox_start.py",  # sandbox helper: start time and RSS of a large sandbox
    "report_scale": "bench/report_scale.py",  # report helper: dashboard size and render time, 1M recipients
    "scale_out": "bench/scale_out.py",  # engine: N = 1, 10, 50, 200 workspaces, full and idle quick, CLI on DuckDB
    "scale_out_1000": "bench/scale_out_1000.py",  # the same at N = 10 and 1,000 (the targets at agency scale)
    "storage_format": "bench/storage_format.py",  # BI readers: writing storage v1.0.0 vs v2.0.0, 1M recipients
    "soak": "bench/soak.py",  # 50 quick syncs under faults, a model build after each, a BI reader throughout
    "demo_interrupt": "bench/demo_interrupt.py",  # Ctrl-C during `outreach demo`: seconds to exit, what it leaves
}
TIMEOUT_S = 45 * 60
TIMEOUT_S_BY_NAME = {"soak": 120 * 60, "scale_out_1000": 120 * 60}


def _json_lines(text: str) -> Any | None:
    """The script's JSON line, or the list of them when it prints one per case."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    if not found:
        return None
    return found[0] if len(found) == 1 else found


def run_external(name: str) -> dict[str, Any]:
    """Run one script from the repository root; return {name, date, wall_s, ok, result | error}."""
    script = BENCH_DIR.parent / SCRIPTS[name]
    record: dict[str, Any] = {"name": name, "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    if not script.exists():
        record.update(ok=False, error=f"{SCRIPTS[name]} does not exist yet", result=None)
        return record
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", f"bench.{name}"],
        cwd=str(BENCH_DIR.parent),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S_BY_NAME.get(name, TIMEOUT_S),
        check=False,
    )
    record["wall_s"] = round(time.perf_counter() - started, 1)
    result = _json_lines(proc.stdout)
    if result is None and proc.returncode == 0 and proc.stdout.strip():
        result = {"line": proc.stdout.strip().splitlines()[-1][:500]}  # a script that prints text, not JSON
    record["ok"] = proc.returncode == 0 and result is not None
    record["result"] = result
    if not record["ok"]:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        record["error"] = f"exit {proc.returncode}: {tail[0][:300]}"
    return record
