"""Run one side (ours or the baseline) in a child process, measured against the sandbox's own counters."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import psutil

from bench import with_checkout_on_path
from bench.child import RESULT_PREFIX

logger = logging.getLogger(__name__)

CHILD_TIMEOUT_S = 3 * 3600
DEFAULT_MEMORY_CAP_MB = min(12_000, psutil.virtual_memory().total // 2**20 // 2)


@dataclass
class SideRun:
    """One measured sync: the child's figures plus the sandbox's request counters for it."""

    side: str
    mode: str
    ok: bool
    error: str | None
    wall_s: float
    peak_mb: float
    rows: dict[str, int]
    requests: int = 0
    body_requests: int = 0
    status_429: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    report: Any = None

    @property
    def list_requests(self) -> int:
        """Requests other than reply-body fetches (comparable with the baseline and the bound)."""
        return self.requests - self.body_requests

    @property
    def rows_total(self) -> int:
        return sum(self.rows.values())


def _body_requests(by_route: dict[str, int]) -> int:
    """`GET /replies/{id}` calls, whether the sandbox counts by route template or by path."""
    total = 0
    for route, n in by_route.items():
        method, _, path = route.partition(" ")
        parts = path.strip("/").split("/")
        if method == "GET" and len(parts) == 2 and parts[0] == "replies":
            total += int(n)
    return total


def _run_child(
    job: bytes, log: IO[bytes], workdir: Path, env: dict[str, str], memory_cap_mb: int
) -> tuple[int, bytes, dict[str, Any] | None]:
    """(exit code, stdout, the failure record if the child was stopped at the memory cap or time-out)."""
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bench.child"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=log, cwd=str(workdir), env=with_checkout_on_path(env))  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(job)
    proc.stdin.close()
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    watched = psutil.Process(proc.pid)
    stopped = None
    while proc.poll() is None:
        try:
            rss_mb = watched.memory_info().rss / 2**20
        except psutil.NoSuchProcess:
            break
        elapsed = time.perf_counter() - started
        why = "memory cap" if rss_mb > memory_cap_mb else "time-out" if elapsed > CHILD_TIMEOUT_S else None
        if why:
            proc.kill()
            limits = f"{memory_cap_mb} MB, {CHILD_TIMEOUT_S} s"
            error = f"stopped by the bench ({why}: {limits}) at {rss_mb:.0f} MB RSS after {elapsed:.0f} s"
            stopped = {
                "ok": False,
                "error": error,
                "wall_s": round(elapsed, 1),
                "peak_mb": round(rss_mb, 1),
                "rows": {},
            }
            break
        time.sleep(0.25)
    code = proc.wait()
    reader.join(timeout=10)
    return code, b"".join(chunks), stopped


def run_side(
    sandbox: Any,
    *,
    side: str,
    mode: str,
    api_key: str,
    workdir: Path,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    memory_cap_mb: int = DEFAULT_MEMORY_CAP_MB,
) -> SideRun:
    """Reset the sandbox's counters, run the sync in a child, read the counters back.

    A child whose RSS passes `memory_cap_mb` (or that runs past CHILD_TIMEOUT_S) is killed and reported
    as failed with its RSS and time: the baseline's loader at `large` would otherwise take the machine down."""
    workdir.mkdir(parents=True, exist_ok=True)
    job = {
        "side": side,
        "mode": mode,
        "api_key": api_key,
        "base_url": sandbox.base_url,
        "duckdb_path": str(workdir / f"{side}.duckdb"),
        "pipelines_dir": str(workdir / "dlt_pipelines"),
        "rate_limit_per_minute": rate_limit_per_minute,
        "reply_body_cap": reply_body_cap,
    }
    env = {**os.environ, "DLT_DATA_DIR": str(workdir / "dlt_data"), "RUNTIME__LOG_LEVEL": "WARNING"}
    log_path = workdir / f"{side}_{mode}.log"
    sandbox.reset_metrics()
    with open(log_path, "ab") as log:
        code, stdout, stopped = _run_child(json.dumps(job).encode(), log, workdir, env, memory_cap_mb)
    metrics = sandbox.metrics()
    lines = [ln for ln in stdout.decode(errors="replace").splitlines() if ln.startswith(RESULT_PREFIX)]
    out: dict[str, Any]
    if stopped is not None:
        out = stopped
    elif not lines:
        out = {
            "ok": False,
            "error": f"child exited {code} without a result; see {log_path}",
            "wall_s": 0.0,
            "peak_mb": 0.0,
            "rows": {},
        }
    else:
        out = json.loads(lines[-1][len(RESULT_PREFIX) :])
    error = out.get("error")
    if error:
        error = error.replace(api_key, "***")
        logger.warning("%s %s sync failed: %s (log: %s)", side, mode, error, log_path)
    by_status = {str(k): int(v) for k, v in (metrics.get("by_status") or {}).items()}
    return SideRun(
        side=side,
        mode=mode,
        ok=bool(out["ok"]),
        error=error,
        wall_s=float(out["wall_s"]),
        peak_mb=float(out["peak_mb"]),
        rows=dict(out.get("rows") or {}),
        requests=int(metrics.get("requests", 0)),
        body_requests=_body_requests(metrics.get("by_route") or {}),
        status_429=by_status.get("429", 0),
        by_status=by_status,
        report=out.get("report"),
    )
