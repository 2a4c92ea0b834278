"""The sync into a real PostgreSQL server (`--destination postgres`): the same tables, history, marks, state,
webhook events and run records as DuckDB, equal to the API; several syncs loading at once; the lock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
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
    table_snapshot,
)

from pipelines.source.shaping import campaign_fingerprint
from pipelines.sync.edge import run_sync

BIG_CAP = 100_000


@pytest.fixture
def pg_warehouse(pg_dsn: str, pg_credentials: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database as the configured PostgreSQL destination (dlt's own setting); its URL."""
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    return pg_dsn


def _sync(sb: Any, tmp: Path, mode: str, keys: list[str], **kw: Any) -> Any:
    kw.setdefault("reply_body_cap", BIG_CAP)
    kw.setdefault("spool_dir", tmp / "no-spool")
    return run_sync(
        mode=mode,
        api_keys=keys,
        base_url=sb.base_url,
        destination="postgres",
        pipelines_dir=tmp / "pipelines",
        progress=False,
        rate_limit_per_minute=0,
        **kw,
    )


def _write_spool(spool: Path, events: list[dict[str, Any]]) -> None:
    from pipelines.events.spool import SpoolWriter, make_record

    writer = SpoolWriter(spool)
    for payload in events:
        writer.append(make_record(payload))
    writer.close()


def test_postgres_equals_the_api_through_full_quick_and_full_with_history_marks_state_events_and_runs(
    make_sandbox: Any, tmp_path: Path, pg_warehouse: str
) -> None:
    db = pg_warehouse
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    truths = [api_truth(sb.base_url, k) for k in keys]
    spool = tmp_path / "spool"
    event = {
        "event": "lead.bounced",
        "created_at": "2026-03-02T10:00:00+00:00",
        "data": {"lead_id": "l-1", "campaign_id": "c-1", "email": "a@example.com"},
    }
    _write_spool(spool, [event, event])  # a retried delivery: one row

    full = _sync(sb, tmp_path, "full", keys, spool_dir=spool)
    assert full.destination.startswith("postgres ") and full.events_loaded == 1
    for truth in truths:
        assert_warehouse_equals_api(db, truth)
    assert_no_duplicates(db)
    assert query(db, "select event, workspace_id from outreach.events") == [("lead.bounced", None)]
    # each workspace has its own staging dataset name, never the shared default
    schemas = {r[0] for r in query(db, "select schema_name from information_schema.schemata")}
    assert "outreach" in schemas and "outreach_staging" not in schemas

    # an idle quick sync changes no row and costs 4 requests a workspace
    before = table_snapshot(db)
    sb.reset_metrics()
    _sync(sb, tmp_path, "quick", keys)
    assert sb.metrics()["requests"] == 4 * len(keys)
    assert table_snapshot(db) == before

    # activity in the sandbox: quick sees all but what DESIGN.md says it cannot
    old_fps = {cid: campaign_fingerprint(c) for t in truths for cid, c in t["campaigns"].items()}
    sb.advance(6 * 3600)
    _sync(sb, tmp_path, "quick", keys)
    for key in keys:
        truth = api_truth(sb.base_url, key)
        stale = {cid for cid, c in truth["campaigns"].items() if old_fps.get(cid) == campaign_fingerprint(c)}
        assert_warehouse_equals_api(db, truth, skip_stale_campaigns=stale, check_is_read=False)
    assert_no_duplicates(db)
    assert query(db, "select count(*) from outreach.campaigns where _dlt_valid_to is not null")[0][0] > 0

    # rows the API no longer returns are marked by a full sync, not dropped
    ws_a = truths[0]["workspace_id"]
    query_rw(
        db,
        "insert into outreach.campaign_recipients (id, workspace_id, campaign_id, status) "
        "values ('gone-1', %s, 'c-gone', 'sent')",
        ws_a,
    )
    _sync(sb, tmp_path, "full", keys)
    for key in keys:
        assert_warehouse_equals_api(db, api_truth(sb.base_url, key))
    assert_no_duplicates(db)
    assert query(db, "select deleted_at is not null from outreach.campaign_recipients where id = 'gone-1'") == [(True,)]

    # state: one committed row per workspace; run records: one per workspace per run, all ok
    states = query(
        db,
        "select s.workspace_id, s.last_full_at is not null, s.reply_cursor is not null from outreach.sync_state s "
        "join outreach._dlt_loads l on l.load_id = s._dlt_load_id and l.status = 0",
    )
    assert sorted(states) == sorted((t["workspace_id"], True, True) for t in truths)
    runs = query(db, "select run_id, workspace_id, mode, outcome, requests from outreach.sync_runs")
    assert len({r[0] for r in runs}) == 4 and len(runs) == 4 * len(keys)
    assert {r[3] for r in runs} == {"ok"} and all(r[4] >= 4 for r in runs)
    in_order = "select mode from outreach.sync_runs group by run_id, mode order by min(started_at)"  # ids are random
    assert [r[0] for r in query(db, in_order)] == [
        "full",
        "quick",
        "quick",
        "full",
    ]

    # `outreach status --destination postgres` reads the same from the server, without the API
    sb.reset_metrics()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    out = subprocess.run(
        [str(Path(sys.executable).with_name("outreach")), "status", "--destination", "postgres", "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert sb.metrics()["requests"] == 0
    status = json.loads(out.stdout)
    assert status["synced"] and status["warehouse"].startswith("postgres ")
    assert {w["workspace_id"] for w in status["workspaces"]} == {t["workspace_id"] for t in truths}
    for ws in status["workspaces"]:
        assert [r["mode"] for r in ws["runs"]] == ["full", "quick", "quick", "full"]
        assert {r["outcome"] for r in ws["runs"]} == {"ok"} and ws["newest_reply"] and ws["last_full_at"]


def query_rw(dsn: str, sql: str, *params: Any) -> None:
    import psycopg2

    con = psycopg2.connect(dsn)
    try:
        with con, con.cursor() as cur:
            cur.execute(sql, params)
    finally:
        con.close()


def test_two_syncs_load_into_one_postgres_at_once_without_waiting_or_colliding(
    make_sandbox: Any, tmp_path: Path, pg_warehouse: str
) -> None:
    """Two processes (as two workers would), one workspace each, same database: neither waits for the
    other (loads share the lock), each has its own staging dataset, and the warehouse equals the API."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:2]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pipelines",
                "--mode",
                "full",
                "--destination",
                "postgres",
                "--base-url",
                sb.base_url,
                "--api-key",
                key,
                "--pipelines-dir",
                str(tmp_path / f"worker{i}"),
                "--spool",
                str(tmp_path / "none"),
                "--no-progress",
            ],
            env={**env, "SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE": "0", "SOURCES__OUTREACH__REPLY_BODY_CAP": "100000"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
        )
        for i, key in enumerate(keys)
    ]
    outputs = [p.communicate(timeout=240) for p in procs]
    for proc, (_out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err[-2000:]
        assert "waiting for" not in err, err
    for key in keys:
        assert_warehouse_equals_api(pg_warehouse, api_truth(sb.base_url, key))
    assert_no_duplicates(pg_warehouse)
    staging = [
        r[0]
        for r in query(
            pg_warehouse,
            "select schema_name from information_schema.schemata where schema_name like 'outreach_staging_%'",
        )
    ]
    assert len(staging) == 2


def test_postgres_model_build_waits_for_loads_and_says_for_whom(pg_warehouse: str) -> None:
    """Loads hold the advisory lock shared (several at once), the model build exclusive: it waits with the
    holder's line and fails with that line after the timeout."""
    from pipelines.warehouse.destination import warehouse_target
    from pipelines.warehouse.lock import WarehouseBusyError, hold

    target = warehouse_target(destination="postgres")
    held = threading.Event()
    release = threading.Event()

    def other_loader() -> None:  # another process's load, as far as the lock is concerned: its own session
        code = (
            "import sys, time\n"
            "from pipelines.warehouse.destination import warehouse_target\n"
            "from pipelines.warehouse.lock import hold\n"
            "with hold(warehouse_target(destination='postgres'), 'sync', shared=True):\n"
            "    print('held', flush=True); sys.stdin.readline()\n"
        )
        proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdin is not None
        assert proc.stdout.readline().strip() == "held"
        held.set()
        release.wait(60)
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(30)

    thread = threading.Thread(target=other_loader)
    thread.start()
    try:
        assert held.wait(60)
        with hold(target, "sync", shared=True, timeout_s=5) as waited:  # a second load: no wait
            assert waited < 1.0
        lines: list[str] = []
        started = time.monotonic()
        with pytest.raises(WarehouseBusyError) as info:
            with hold(target, "model build", shared=False, timeout_s=1.5, notify=lines.append):
                pass
        assert time.monotonic() - started >= 1.5
        assert lines and lines[0].startswith("waiting for the sync started at ") and "by process " in lines[0]
        message = str(info.value)
        assert "\n" not in message and lines[0] in message and "LOCK_TIMEOUT_S" in message
    finally:
        release.set()
        thread.join(60)
    with hold(target, "model build", shared=False, timeout_s=10) as waited:  # free again
        assert waited < 5
