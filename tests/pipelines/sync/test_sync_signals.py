"""SIGINT and SIGTERM sent to a real `outreach sync` process: it stops within 5 s at a load boundary, keeps
what it committed, records the run as `interrupted`, exits 130 / 143 with a line saying so, and the next run
resumes until the warehouse equals the API."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, api_truth, assert_no_duplicates, assert_warehouse_equals_api, query

from pipelines.sync.edge import run_sync


def _start(sb: Any, keys: list[str], tmp: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0",
        SOURCES__OUTREACH__PIPELINES_DIR=str(tmp / "pipelines"),
        SOURCES__OUTREACH__WORKERS="2",
        SOURCES__OUTREACH__BATCH_SIZE="1",
    )
    args = [sys.executable, "-m", "flows.cli", "sync", "--mode", "full", "--base-url", sb.base_url]
    args += ["--duckdb", str(tmp / "w.duckdb"), "--spool", str(tmp / "no-spool"), "--no-progress"]
    for key in keys:
        args += ["--api-key", key]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp)


def _first_batch_loaded(tmp: Path) -> bool:
    return any((tmp / "pipelines").glob("outreach_*/load/loaded/*"))


@pytest.mark.parametrize(("signum", "code", "name"), [(signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")])
def test_a_signal_stops_the_sync_at_a_load_boundary_and_the_next_run_resumes(
    make_sandbox: Any, tmp_path: Path, signum: int, code: int, name: str
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=4, latency_ms=40)
    keys = admin_keys(sb)
    proc = _start(sb, keys, tmp_path)
    limit = time.monotonic() + 90
    while not _first_batch_loaded(tmp_path):
        assert proc.poll() is None, f"the sync ended before its first load: {proc.communicate()}"
        assert time.monotonic() < limit, "no batch loaded in 90 s"
        time.sleep(0.02)
    said: list[float] = []
    err_lines: list[str] = []

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err_lines.append(line)
            if line.startswith("error:"):
                said.append(time.monotonic())

    reader = threading.Thread(target=read_stderr)
    reader.start()
    # the service turns slow: every request now waits 8 s for its first byte, so the signal finds requests in
    # flight (a read blocked on a socket), which must end on the signal, not when the answer comes
    sb.set_faults(latency_ms=8000)
    time.sleep(2)  # the next batch has started its requests by now
    sent = time.monotonic()
    proc.send_signal(signum)
    out = proc.stdout.read() if proc.stdout else ""
    proc.wait(30)
    exited_in = time.monotonic() - sent
    reader.join(5)
    err = "".join(err_lines)
    assert proc.returncode == code, (proc.returncode, err[-2000:])
    # stopped within 5 s: the requests in flight, the load running when the signal came, the interrupted
    # workspaces' run records, closing the warehouse and the exit itself
    assert said, f"no line after {name}"
    assert exited_in < 5, f"exited {exited_in:.1f} s after {name} (the line came after {said[0] - sent:.1f} s)"
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"interrupted by {name}" in lines[0], err[-2000:]
    assert "Traceback" not in err
    assert out.startswith("outreach sync (full) finished"), out  # the summary of what loaded comes first

    db = tmp_path / "w.duckdb"
    outcomes = query(db, "select outcome, count(*) from outreach.sync_runs group by 1 order by 1")
    assert dict(outcomes).get("ok", 0) >= 1, outcomes  # the batch committed before the signal is kept
    assert dict(outcomes).get("interrupted", 0) >= 1, outcomes
    assert "failed" not in dict(outcomes), outcomes
    loaded = query(db, "select count(*) from outreach.campaign_recipients")[0][0]
    assert loaded > 0  # no table emptied

    sb.set_faults()
    run_sync(
        mode="full",
        api_keys=keys,
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp_path / "pipelines",
        spool_dir=tmp_path / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
    )
    assert_no_duplicates(db)
    for key in keys:
        assert_warehouse_equals_api(db, api_truth(sb.base_url, key))
