"""`outreach status` while a sync holds the DuckDB warehouse: the committed state, and who is syncing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from test_sync_support import admin_keys
from typer.testing import CliRunner

from flows.cli import app
from pipelines.sync.edge import run_sync
from pipelines.warehouse.lock import current_holder, file_target


def test_status_during_a_sync_shows_the_committed_state_and_the_running_sync(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    db = tmp_path / "w.duckdb"
    common = {"pipelines_dir": tmp_path / "p", "spool_dir": tmp_path / "none", "progress": False}
    run_sync(mode="full", api_keys=keys, base_url=sb.base_url, duckdb_path=db, rate_limit_per_minute=0, **common)

    # a second sync slow enough to outlast `status` on a loaded machine (at 60 ms a request it once ended first);
    # it is stopped right after, so it costs the test no more time
    sb.set_faults(latency_ms=1000)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0", SOURCES__OUTREACH__PIPELINES_DIR=str(tmp_path / "p"))
    args = [sys.executable, "-m", "flows.cli", "sync", "--mode", "full", "--base-url", sb.base_url]
    args += ["--api-key", keys[0], "--duckdb", str(db), "--spool", str(tmp_path / "none"), "--no-progress"]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        limit = time.monotonic() + 60
        while current_holder(file_target(db)) is None:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < limit
            time.sleep(0.05)
        result = CliRunner().invoke(app, ["status", "--duckdb", str(db)], env={"COLUMNS": "300"})
        still_running = proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)  # stops at a load boundary; the test need not wait for the whole sync
        proc.wait(120)
    why = proc.stderr.read() if proc.stderr else b""
    assert still_running, f"the sync ended before status ran (exit {proc.returncode}: {why!r}): the test proves nothing"
    assert result.exit_code == 0, result.output
    assert "a sync is running since" in result.output and f"(process {proc.pid})" in result.output, result.output
    assert "full" in result.output and "ok" in result.output  # the committed run of the first sync
