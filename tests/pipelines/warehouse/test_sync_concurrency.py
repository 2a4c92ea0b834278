"""Runs at once on one warehouse: three full syncs into one PostgreSQL server with overlapping and disjoint
workspaces (A: 1 and 2, B: 2 and 3, C: 3), one dlt pipelines directory shared by all (a batch of one
workspace each, so A and B share workspace 2's pipeline, B and C workspace 3's) all end ok or wait their
turn, mark nothing deleted, and leave the warehouse equal to the API; and a load a killed run left
pending is finished by the next run, which says so."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, api_truth, assert_no_duplicates, assert_warehouse_equals_api, query

DELETABLE = ("campaign_recipients", "campaign_stats", "campaign_variants", "replies")


@pytest.fixture
def pg_warehouse(pg_dsn: str, monkeypatch: pytest.MonkeyPatch) -> str:
    # dlt's PostgreSQL credentials require a password; the test server trusts loopback and ignores it
    monkeypatch.setenv(
        "DESTINATION__POSTGRES__CREDENTIALS", pg_dsn.replace("postgresql://postgres@", "postgresql://postgres:x@", 1)
    )
    return pg_dsn


def _sync(sb: Any, keys: list[str], pipelines: Path, cwd: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0", SOURCES__OUTREACH__REPLY_BODY_CAP="100000")
    args = [sys.executable, "-m", "pipelines", "--mode", "full", "--destination", "postgres"]
    args += ["--base-url", sb.base_url, "--pipelines-dir", str(pipelines), "--spool", str(cwd / "none")]
    args += ["--batch-size", "1", "--no-progress"]
    for key in keys:
        args += ["--api-key", key]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)


def test_three_overlapping_full_syncs_on_postgres_end_ok_and_equal_the_api(
    make_sandbox: Any, tmp_path: Path, pg_warehouse: str
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=3)
    by_workspace = {k["workspace_id"]: k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin"}
    one, two, three = (by_workspace[ws] for ws in sorted(by_workspace))
    shared = tmp_path / "pipelines"
    for round_ in range(2):  # the second round reconciles deletions over rows the first loaded
        procs = [_sync(sb, keys, shared, tmp_path) for keys in ([one, two], [two, three], [three])]
        results = [p.communicate(timeout=400) for p in procs]
        for proc, (_out, err) in zip(procs, results, strict=True):
            assert proc.returncode == 0, err[-3000:]
            assert "Traceback" not in err, err[-3000:]
        for table in DELETABLE:
            assert query(pg_warehouse, f"select count(*) from outreach.{table} where deleted_at is not null") == [
                (0,)
            ], (round_, table)
        for key in (one, two, three):
            assert_warehouse_equals_api(pg_warehouse, api_truth(sb.base_url, key))
        assert_no_duplicates(pg_warehouse)
        sb.advance(1800)
    runs = query(pg_warehouse, "select outcome, count(*) from outreach.sync_runs group by outcome")
    assert runs == [("ok", 2 * 5)]  # two rounds of A (2 workspaces), B (2) and C (1)


def test_a_load_left_pending_is_finished_by_the_next_run_which_says_so(
    make_sandbox: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pipelines.api.accounts import check_keys
    from pipelines.core.config import resolve_settings
    from pipelines.sync.edge import run_sync
    from pipelines.sync.extract import extract_batch
    from pipelines.sync.run import new_run_id
    from pipelines.warehouse.destination import warehouse_target

    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    db = tmp_path / "outreach.duckdb"
    settings = resolve_settings(
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp_path / "p",
        spool_dir=tmp_path / "none",
        rate_limit_per_minute=0,
    )
    warehouse = warehouse_target(settings)
    warehouse.create_if_missing()
    (workspace,) = check_keys([key], sb.base_url)
    # a run killed after its extract: its package is normalized in the pipeline's directory, not loaded
    extracted = extract_batch([workspace], mode="full", settings=settings, warehouse=warehouse, run_id=new_run_id())
    pending = list(extracted.pipeline.list_normalized_load_packages())
    assert len(pending) == 1
    del extracted

    caplog.set_level(logging.WARNING)
    sb.reset_metrics()
    run_sync(mode="quick", api_keys=[key], base_url=sb.base_url, settings=settings, progress=False)
    said = [r.getMessage() for r in caplog.records if "left pending" in r.getMessage()]
    assert said and pending[0] in said[0], caplog.text
    assert any("pending load(s) committed" in r.getMessage() for r in caplog.records)
    # the quick run planned on the state the pending load committed: an idle quick sync's 4 requests
    assert sb.metrics()["requests"] == 4
    assert_warehouse_equals_api(db, api_truth(sb.base_url, key), check_bodies=False)


def test_a_pending_load_the_warehouse_refuses_is_rolled_back_and_read_again(
    make_sandbox: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from pipelines.api.accounts import check_keys
    from pipelines.core.config import resolve_settings
    from pipelines.sync.edge import run_sync
    from pipelines.sync.extract import extract_batch
    from pipelines.sync.run import new_run_id
    from pipelines.warehouse.destination import warehouse_target

    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    db = tmp_path / "outreach.duckdb"
    settings = resolve_settings(
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp_path / "p",
        spool_dir=tmp_path / "none",
        rate_limit_per_minute=0,
        reply_body_cap=100_000,
    )
    warehouse = warehouse_target(settings)
    warehouse.create_if_missing()
    (workspace,) = check_keys([key], sb.base_url)
    extracted = extract_batch([workspace], mode="full", settings=settings, warehouse=warehouse, run_id=new_run_id())
    (load_id,) = extracted.pipeline.list_normalized_load_packages()
    package = Path(extracted.pipeline.pipelines_dir) / extracted.pipeline.pipeline_name / "load" / "normalized"
    damaged = sorted((package / load_id / "new_jobs").glob("campaign_recipients.*"))
    assert damaged
    for path in damaged:  # a package damaged on disk: the warehouse cannot load it
        path.write_bytes(b"not parquet")
    del extracted

    caplog.set_level(logging.WARNING)
    run_sync(mode="full", api_keys=[key], base_url=sb.base_url, settings=settings, progress=False)
    said = [r.getMessage() for r in caplog.records if "rolled back" in r.getMessage()]
    assert said and "read from the API again" in said[0], caplog.text
    assert_warehouse_equals_api(db, api_truth(sb.base_url, key))
