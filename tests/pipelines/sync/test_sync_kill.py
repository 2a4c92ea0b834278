"""A sync killed with SIGKILL mid-extract or mid-load, then rerun: warehouse == API, no duplicates, no lost replies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_sync_support import admin_keys, api_truth, assert_no_duplicates, assert_warehouse_equals_api, query

from pipelines.sync.edge import run_sync


def _start(sb: Any, keys: list[str], tmp: Path, rate: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE=str(rate),
        SOURCES__OUTREACH__REPLY_BODY_CAP="100000",
        SOURCES__OUTREACH__WORKERS="2",
    )
    args = [
        sys.executable,
        "-m",
        "pipelines",
        "--mode",
        "full",
        "--base-url",
        sb.base_url,
        "--duckdb",
        str(tmp / "outreach.duckdb"),
        "--pipelines-dir",
        str(tmp / "pipelines"),
        "--spool",
        str(tmp / "no-spool"),
        "--no-progress",
    ]
    for key in keys:
        args += ["--api-key", key]
    return subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(tmp))


def _kill_when(proc: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
            return
        assert proc.poll() is None, (
            f"sync ended before the kill point: {proc.stderr.read().decode()[-2000:] if proc.stderr else ''}"
        )
        time.sleep(0.005)
    proc.kill()
    raise AssertionError("kill point never reached")


def _loading(tmp: Path) -> bool:
    """A load package with at least one finished job while the package itself is not done."""
    return any((tmp / "pipelines").glob("outreach_*/load/normalized/*/completed_jobs/*"))


def _extracting(tmp: Path) -> bool:
    return any((tmp / "pipelines").glob("outreach_*/")) and time.monotonic() - _extracting.started > 4.0  # type: ignore[attr-defined]


def _rerun_and_check(sb: Any, keys: list[str], tmp: Path) -> None:
    run_sync(
        mode="full",
        api_keys=keys,
        base_url=sb.base_url,
        duckdb_path=tmp / "outreach.duckdb",
        pipelines_dir=tmp / "pipelines",
        spool_dir=tmp / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
        reply_body_cap=100_000,
    )
    db = tmp / "outreach.duckdb"
    for key in keys:
        assert_warehouse_equals_api(db, api_truth(sb.base_url, key))
    assert_no_duplicates(db)
    assert query(db, "select count(*) from outreach.replies where body is null")[0][0] == 0


def test_sigkill_mid_extract_then_rerun(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    keys = admin_keys(sb)
    _extracting.started = time.monotonic()  # type: ignore[attr-defined]
    proc = _start(sb, keys, tmp_path, rate=1500)  # paced: extraction lasts ~15 s
    _kill_when(proc, lambda: _extracting(tmp_path))
    assert proc.returncode == -signal.SIGKILL
    _rerun_and_check(sb, keys, tmp_path)


def test_sigkill_mid_load_then_rerun(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    keys = admin_keys(sb)
    proc = _start(sb, keys, tmp_path, rate=0)
    _kill_when(proc, lambda: _loading(tmp_path))
    assert proc.returncode == -signal.SIGKILL
    _rerun_and_check(sb, keys, tmp_path)
