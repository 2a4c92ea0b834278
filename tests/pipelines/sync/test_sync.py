"""The sync against a real sandbox over HTTP, two workspaces, real DuckDB."""

from __future__ import annotations

import logging
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
    table_snapshot,
)

from pipelines.core.errors import AuthError
from pipelines.source.shaping import campaign_fingerprint
from pipelines.sync.edge import run_sync

BIG_CAP = 100_000


def _sync(sb: Any, tmp: Path, mode: str, keys: list[str], **kw: Any) -> Any:
    kw.setdefault("reply_body_cap", BIG_CAP)
    kw.setdefault("rate_limit_per_minute", 0)
    return run_sync(
        mode=mode,
        api_keys=keys,
        base_url=sb.base_url,
        duckdb_path=tmp / "outreach.duckdb",
        pipelines_dir=tmp / "pipelines",
        spool_dir=tmp / "no-spool",
        progress=False,
        **kw,
    )


def test_full_quick_idle_full_equal_the_api_and_never_leak_the_key(
    make_sandbox: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sb = make_sandbox(scale="small", rate_limit=0)
    keys = admin_keys(sb)
    assert len(keys) >= 2
    db = tmp_path / "outreach.duckdb"

    full = _sync(sb, tmp_path, "full", keys)
    truths = [api_truth(sb.base_url, k) for k in keys]
    for truth in truths:
        assert_warehouse_equals_api(db, truth)
    assert_no_duplicates(db)
    assert {w.workspace_id for w in full.workspaces} == {t["workspace_id"] for t in truths}
    # the summary's rows per table cover every contract table, counted as loaded
    contract = {
        "workspaces",
        "campaigns",
        "campaign_recipients",
        "campaign_stats",
        "campaign_variants",
        "campaign_daily_sends",
        "replies",
        "email_accounts",
        "webhook_event_types",
    }
    assert contract <= set(full.rows())
    assert full.rows()["campaign_recipients"] == query(db, "select count(*) from outreach.campaign_recipients")[0][0]

    # idle quick: <= 10% of the full sync's requests, no row changes
    before = table_snapshot(db)
    idle = _sync(sb, tmp_path, "quick", keys)
    assert idle.requests <= 0.10 * full.requests, (idle.requests, full.requests)
    assert table_snapshot(db) == before

    # the clock advances; quick sees everything but what DESIGN.md says it cannot
    old_fps = {cid: campaign_fingerprint(c) for t in truths for cid, c in t["campaigns"].items()}
    sb.advance(6 * 3600)
    quick = _sync(sb, tmp_path, "quick", keys)
    assert quick.requests < full.requests
    for key in keys:
        truth = api_truth(sb.base_url, key)
        stale = {cid for cid, c in truth["campaigns"].items() if old_fps.get(cid) == campaign_fingerprint(c)}
        assert_warehouse_equals_api(db, truth, skip_stale_campaigns=stale, check_is_read=False)
    assert_no_duplicates(db)
    # history: campaigns whose totals changed have a retired row and a current one
    hist = query(db, "select count(*) from outreach.campaigns where _dlt_valid_to is not null")[0][0]
    assert hist > 0

    # full catches up with everything
    _sync(sb, tmp_path, "full", keys)
    for key in keys:
        assert_warehouse_equals_api(db, api_truth(sb.base_url, key))
    assert_no_duplicates(db)

    # the key never appears in logs, state, the dlt working dir (traces included), or the warehouse
    secrets = [k.encode() for k in keys]
    assert not any(k.decode() in caplog.text for k in secrets)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert not any(k in data for k in secrets), f"key found in {path}"


def test_read_only_keys_under_faults_equal_the_api(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb, level="read")
    sb.set_faults(
        error_rate=0.10, statuses=[500, 502, 503, 429], timeout_rate=0.02, truncate_rate=0.03, hang_ms=1500, seed=3
    )
    report = _sync(sb, tmp_path, "full", keys, request_timeout=0.75)
    sb.set_faults()
    assert sum(w.retries for w in report.workspaces) > 0
    for key in keys:
        assert_warehouse_equals_api(tmp_path / "outreach.duckdb", api_truth(sb.base_url, key))
    assert_no_duplicates(tmp_path / "outreach.duckdb")


def test_bodies_cap_defer_keep_and_vanished_rows_are_marked(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    db = tmp_path / "outreach.duckdb"
    cap = 15
    first = _sync(sb, tmp_path, "full", keys, reply_body_cap=cap)
    totals = {}
    for ws in first.workspaces:
        n = query(db, "select count(*), count(body) from outreach.replies where workspace_id = ?", ws.workspace_id)[0]
        totals[ws.workspace_id] = n[0]
        assert n[0] > cap and n[1] == cap and ws.bodies_deferred == n[0] - cap and ws.bodies_fetched == cap
    stored = dict(query(db, "select id, body from outreach.replies where body is not null"))
    # a full re-read (list items have no body) keeps every stored body; deferred ones get fetched next
    second = _sync(sb, tmp_path, "full", keys, reply_body_cap=cap)
    for ws in second.workspaces:
        assert ws.bodies_fetched == min(cap, totals[ws.workspace_id] - cap)
    after = dict(query(db, "select id, body from outreach.replies where body is not null"))
    assert all(after[rid] == body for rid, body in stored.items())
    assert len(after) == len(stored) + sum(ws.bodies_fetched for ws in second.workspaces)

    # rows the API no longer returns are marked, not dropped (full); scd2 rows of the other workspace stay current
    ws_a = first.workspaces[0].workspace_id
    import duckdb

    con = duckdb.connect()
    con.execute(f"attach '{db}' as wh")
    con.execute("use wh")
    con.execute(
        "insert into outreach.campaign_recipients (id, workspace_id, campaign_id, status) "
        "values ('gone-1', ?, 'c-gone', 'sent')",
        [ws_a],
    )
    con.execute(
        "insert into outreach.replies (id, workspace_id, campaign_id, _dlt_load_id, _dlt_id) "
        "values ('gone-r', ?, 'c-gone', 'x', 'y')",
        [ws_a],
    )
    con.close()
    key_a = next(k for k in keys if api_truth(sb.base_url, k, with_bodies=False)["workspace_id"] == ws_a)
    _sync(sb, tmp_path, "full", [key_a], reply_body_cap=BIG_CAP)
    marked = query(db, "select id, deleted_at is not null from outreach.campaign_recipients where id = 'gone-1'")
    assert marked == [("gone-1", True)]
    assert query(db, "select deleted_at is not null from outreach.replies where id = 'gone-r'") == [(True,)]
    assert query(db, "select count(*) from outreach.campaign_recipients where deleted_at is not null")[0][0] == 1
    for key in keys:
        truth = api_truth(sb.base_url, key, with_bodies=False)
        current = {
            r[0]
            for r in query(
                db,
                "select id from outreach.campaigns where workspace_id = ? and _dlt_valid_to is null",
                truth["workspace_id"],
            )
        }
        assert current == set(truth["campaigns"])


def test_bad_key_fails_fast_with_one_line_via_the_cli(shared_small_sandbox: Any, tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("outreach")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    shared_small_sandbox.reset_metrics()
    started = time.monotonic()
    proc = subprocess.run(
        [
            str(exe),
            "sync",
            "--api-key",
            "sk_wrong_key_000",
            "--base-url",
            shared_small_sandbox.base_url,
            "--duckdb",
            str(tmp_path / "w.duckdb"),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        cwd=tmp_path,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode != 0
    # fast means one request, never retried (401 is not a retry's to fix), before the warehouse is made or
    # waited for; about 1 s on an idle machine, the bound is for a loaded one
    assert shared_small_sandbox.metrics()["by_status"] == {"401": 1}
    assert elapsed < 5.0, elapsed
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and "API key rejected (401)" in lines[0], proc.stderr
    assert "sk_wrong_key_000" not in proc.stderr + proc.stdout
    assert not (tmp_path / "w.duckdb").exists()


def test_the_sync_edge_imports_no_dlt_pandas_or_pyarrow() -> None:
    """Commands that never sync import the edge (and the package it sits in): neither imports dlt, pandas or
    pyarrow until a sync runs."""
    code = (
        "import sys, pipelines.sync, pipelines.sync.edge\n"
        "print(sorted(m for m in ('dlt', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_bad_key_raises_auth_error_in_process(shared_small_sandbox: Any, tmp_path: Path) -> None:
    with pytest.raises(AuthError) as info:
        _sync(shared_small_sandbox, tmp_path, "quick", ["sk_nope_123"])
    assert "sk_nope_123" not in str(info.value)


def test_same_relative_path_in_two_directories_is_two_warehouses(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`outreach sync` run from two directories (default data/outreach.duckdb in each, one shared dlt
    pipelines dir): the second run fills its own warehouse from the API and leaves the first untouched."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    common = dict(
        api_keys=keys,
        base_url=sb.base_url,
        pipelines_dir=tmp_path / "pipelines",
        spool_dir=tmp_path / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
        reply_body_cap=BIG_CAP,
    )
    for project in ("a", "b"):
        (tmp_path / project).mkdir()
    monkeypatch.chdir(tmp_path / "a")
    run_sync(mode="full", duckdb_path=Path("data/outreach.duckdb"), **common)
    first = tmp_path / "a" / "data" / "outreach.duckdb"
    before = table_snapshot(first)

    monkeypatch.chdir(tmp_path / "b")
    run_sync(mode="quick", duckdb_path=Path("data/outreach.duckdb"), **common)
    assert_warehouse_equals_api(tmp_path / "b" / "data" / "outreach.duckdb", api_truth(sb.base_url, keys[0]))
    assert table_snapshot(first) == before


def test_another_dlt_destination_by_configuration(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[sources.outreach] destination` picks any dlt destination: here SQLite through dlt's sqlalchemy
    destination. Two full syncs leave one row per id, with every reply body kept."""
    import sqlite3

    monkeypatch.setenv("SOURCES__OUTREACH__DESTINATION", "sqlalchemy")
    monkeypatch.setenv("DESTINATION__SQLALCHEMY__CREDENTIALS", f"sqlite:///{tmp_path}/w.db")
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    truth = api_truth(sb.base_url, keys[0])
    for _ in range(2):
        report = run_sync(
            mode="full",
            api_keys=keys,
            base_url=sb.base_url,
            pipelines_dir=tmp_path / "p",
            spool_dir=tmp_path / "no-spool",
            progress=False,
            rate_limit_per_minute=0,
            reply_body_cap=BIG_CAP,
        )
    assert report.destination == "sqlalchemy"
    con = sqlite3.connect(tmp_path / "w__outreach.db")
    recipient_ids = {r[0] for r in con.execute("select id from campaign_recipients")}
    assert con.execute("select count(*) from campaign_recipients").fetchone()[0] == len(recipient_ids)
    assert recipient_ids == set(truth["recipients"])
    bodies = dict(con.execute("select id, body from replies"))
    assert bodies == {rid: r["body"] for rid, r in truth["replies"].items()}


def test_two_keys_of_one_workspace_sync_it_once(make_sandbox: Any, tmp_path: Path) -> None:
    """Its read-write and read-only keys (or one key twice) synced the workspace twice in one run: twice the
    requests, and its history rows written twice over and repaired by the next load ("removed duplicate history
    rows left by a resumed load"); the summary listed it twice."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = sb.keys()
    rw = next(k for k in keys if k["level"] == "rw" and k["role"] == "admin")
    read = next(k for k in keys if k["level"] == "read" and k["workspace_id"] == rw["workspace_id"])
    said: list[str] = []
    db = tmp_path / "w.duckdb"
    sb.reset_metrics()
    report = run_sync(**sandbox_sync_args(sb, [rw["key"], read["key"], rw["key"]], db, tmp_path, mode="full"),
                      notify=said.append)  # fmt: skip
    assert said == [
        f"key #{n} is of workspace {rw['workspace_name']} ({rw['workspace_id']}) as key #1 is: synced once, with key #1"
        for n in (2, 3)
    ]
    assert [ws.workspace_id for ws in report.workspaces] == [rw["workspace_id"]]
    once = sb.metrics()["by_route"]
    assert once["GET /account"] == 3 and once["GET /campaigns"] == 1, once  # each key checked, the workspace read once
    assert_warehouse_equals_api(db, api_truth(sb.base_url, rw["key"]))
