"""Every writer takes the one warehouse lock, a reader holding the warehouse is never taken for a
first run (#1), the warehouse is checked before the first API request (#3), and a failed load says its root
cause in one line (#2, the sync's side). Real CLI processes, a real sandbox, real DuckDB files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import (
    admin_keys,
    api_truth,
    assert_no_duplicates,
    assert_warehouse_equals_api,
    query,
    sandbox_sync_args,
)

from pipelines.core.errors import WarehouseError
from pipelines.sync.edge import run_sync
from pipelines.warehouse.failure import WarehouseUnavailable
from pipelines.warehouse.lock import current_holder

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update({f"SOURCES__OUTREACH__{k.upper()}": v for k, v in settings.items()})
    return env


def _reader(db: Path) -> subprocess.Popen[str]:
    """Another process holding the warehouse open read-only (a BI tool pointed at the wrong file)."""
    code = (
        "import duckdb, sys\ncon = duckdb.connect(sys.argv[1], read_only=True)\n"
        "print('open', flush=True)\nsys.stdin.readline()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    return proc


def _close(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    proc.wait(30)


def test_a_second_sync_and_a_model_build_wait_for_the_running_sync_then_fail_in_one_line(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    db = tmp_path / "outreach.duckdb"
    common = dict(
        base_url=sb.base_url, api_keys=keys[0], pipelines_dir=str(tmp_path / "p"), spool_dir=str(tmp_path / "none")
    )
    # the first sync is paced so it lasts several seconds
    first = subprocess.Popen(
        [OUTREACH, "sync", "--mode", "full", "--duckdb", str(db), "--no-progress"],
        env=_env(rate_limit_per_minute="120", **common),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 60
    while (holder := current_holder(db)) is None:
        assert first.poll() is None and time.monotonic() < deadline, "the first sync never took the lock"
        time.sleep(0.05)
    assert holder.pid == first.pid and holder.what == "sync"

    started = time.monotonic()
    second = subprocess.run(
        [OUTREACH, "sync", "--mode", "full", "--duckdb", str(db), "--no-progress"],
        env=_env(rate_limit_per_minute="0", lock_timeout_s="2", **common),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert second.returncode != 0
    lines = [line for line in second.stderr.splitlines() if line.strip()]
    waiting = f"waiting for the sync started at {holder.started_at} by process {first.pid} ({holder.host})"
    assert lines == [
        waiting,
        f"error: gave up after 2 s {waiting}: rerun when it has finished (or raise SOURCES__OUTREACH__LOCK_TIMEOUT_S)",
    ], second.stderr
    assert time.monotonic() - started >= 2.0

    build = subprocess.run(
        [OUTREACH, "models", "--duckdb", str(db)],
        env=_env(lock_timeout_s="1"),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert build.returncode != 0
    assert [line for line in build.stderr.splitlines() if line.strip()][0] == waiting, build.stderr
    # status while the sync holds the DuckDB file: what was committed, and who is syncing; no request
    status = subprocess.run(
        [OUTREACH, "status", "--duckdb", str(db), "--json"], env=_env(), capture_output=True, text=True, timeout=60
    )
    running = first.poll() is None
    assert status.returncode == 0, status.stderr
    note = json.loads(status.stdout)["note"]
    assert running, "the first sync should still be running (pace it slower)"
    assert f"a sync is running since {holder.started_at} (process {first.pid})" in note, note

    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err
    assert_warehouse_equals_api(db, api_truth(sb.base_url, keys[0]))
    # the lock is free again: the build runs, on the committed data
    done = subprocess.run(
        [OUTREACH, "models", "--duckdb", str(db)], env=_env(), capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_reader_holding_the_warehouse_fails_the_sync_before_any_request_and_loses_no_body(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    db = tmp_path / "outreach.duckdb"
    common = sandbox_sync_args(sb, keys, db, tmp_path, reply_body_cap=100_000)
    run_sync(mode="full", **common)
    bodies = dict(query(db, "select id, body from outreach.replies"))
    assert bodies and all(body is not None for body in bodies.values())

    reader = _reader(db)
    try:
        sb.reset_metrics()
        started = time.monotonic()
        with pytest.raises((WarehouseError, WarehouseUnavailable)) as info:
            run_sync(mode="quick", **common)
        assert time.monotonic() - started < 2.0
        assert sb.metrics()["requests"] == 0, "the warehouse must be checked before the first API request"
        message = str(info.value)
        assert "\n" not in message and str(db) in message and str(reader.pid) in message, message
    finally:
        _close(reader)

    sb.advance(3600)
    run_sync(mode="quick", **common)  # the reader is gone: the stored bodies are known, none is lost
    after = dict(query(db, "select id, body from outreach.replies"))
    assert all(after[rid] == body for rid, body in bodies.items())
    assert query(db, "select count(*) from outreach.replies where body is null")[0][0] == 0


def test_a_failed_load_says_its_root_cause_in_one_line_and_the_next_run_resumes_it(
    make_sandbox: Any, tmp_path: Path
) -> None:
    from pipelines.api.accounts import check_keys
    from pipelines.core.config import resolve_settings
    from pipelines.sync.extract import extract_batch
    from pipelines.sync.load import load_batch
    from pipelines.warehouse.destination import warehouse_target

    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    db = tmp_path / "outreach.duckdb"
    settings = resolve_settings(
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=str(tmp_path / "p"),
        rate_limit_per_minute=0,
        reply_body_cap=100_000,
    )
    warehouse = warehouse_target(settings)
    warehouse.create_if_missing()
    (workspace,) = check_keys(keys, sb.base_url)
    assert not isinstance(workspace, BaseException)
    extracted = extract_batch([workspace], mode="full", settings=settings, warehouse=warehouse, run_id="r1")
    assert extracted.batch.ok_plans and extracted.error is None

    reader = _reader(db)  # the load then finds the file locked by another process
    try:
        (report,) = load_batch(extracted)
    finally:
        _close(reader)
    (plan,) = extracted.batch.plans
    assert plan.error is not None and report.load_ids == []
    line = str(plan.error)
    assert "\n" not in line and str(reader.pid) in line and "resumes on the next run" in line, line

    run_sync(mode="quick", **sandbox_sync_args(sb, keys, db, tmp_path, reply_body_cap=100_000))
    assert_warehouse_equals_api(db, api_truth(sb.base_url, keys[0]))
    assert_no_duplicates(db)
    # the failed run's record, refused with the load, was written by the next run with its one-line reason;
    # the run's own record (ok) arrived with its package, which the next run loaded: status says failed
    records = query(db, "select outcome, error from outreach.sync_runs where run_id = 'r1' order by outcome")
    assert [r[0] for r in records] == ["failed", "ok"]
    # the record is the line, cut between words where it is long (`one_line` marks the cut with …)
    assert line.startswith(records[0][1].removesuffix("…")) and str(reader.pid) in records[0][1]
    from pipelines.commands.status import read_status

    (ws,) = read_status(warehouse).workspaces
    r1 = next(run for run in ws.runs if run.run_id == "r1")
    assert r1.outcome == "failed" and r1.error == records[0][1] and ws.runs[0].outcome == "ok"
