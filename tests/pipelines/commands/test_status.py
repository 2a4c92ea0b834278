"""`outreach status`: what the warehouse says about each workspace's runs, cursors, deferred bodies and last
error, read from the warehouse alone (no API request), as a table or JSON; and a warehouse never synced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_sync_support import admin_keys, query

from pipelines.core.errors import AuthError
from pipelines.sync.edge import run_sync


def _status(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env["COLUMNS"] = "250"
    return subprocess.run(
        [str(Path(sys.executable).with_name("outreach")), "status", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )


def test_a_warehouse_never_synced_says_so(tmp_path: Path) -> None:
    missing = _status("--duckdb", str(tmp_path / "none.duckdb"), cwd=tmp_path)
    assert missing.returncode == 0 and "does not exist: nothing synced yet" in missing.stdout, missing.stderr
    import duckdb

    duckdb.connect(str(tmp_path / "empty.duckdb")).close()
    empty = _status("--duckdb", str(tmp_path / "empty.duckdb"), "--json", cwd=tmp_path)
    assert empty.returncode == 0, empty.stderr
    report = json.loads(empty.stdout)
    assert report["synced"] is False and "holds no sync yet" in report["note"] and report["workspaces"] == []


def test_another_dlt_destination_is_said_to_be_neither_duckdb_nor_postgres(tmp_path: Path) -> None:
    """The sync loads any dlt destination; status reads two. It asked for PostgreSQL's credentials."""
    (tmp_path / ".dlt").mkdir()
    (tmp_path / ".dlt" / "config.toml").write_text('[sources.outreach]\ndestination = "snowflake"\n')
    done = _status(cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: status reads a DuckDB or PostgreSQL warehouse; snowflake is neither\n"


def test_status_shows_runs_rows_cursors_deferred_bodies_and_the_last_error_without_an_api_request(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    db = tmp_path / "outreach.duckdb"
    common: dict[str, Any] = dict(
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp_path / "p",
        spool_dir=tmp_path / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
        reply_body_cap=5,
    )
    run_sync(mode="full", api_keys=keys, **common)
    with pytest.raises(AuthError, match=r"workspace key #3: API key rejected \(401\)"):
        run_sync(mode="quick", api_keys=[*keys, "sk_not_a_key_0000"], **common)

    sb.reset_metrics()
    out = _status("--duckdb", str(db), "--json", "--runs", "3", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert sb.metrics()["requests"] == 0, "status must not call the API"
    report = json.loads(out.stdout)
    assert report["synced"] is True and report["warehouse"] == str(db)
    by_id = {w["workspace_id"]: w for w in report["workspaces"]}
    truth_ids = {r[0] for r in query(db, "select id from outreach.workspaces")}
    assert set(by_id) == truth_ids | {None}

    for workspace_id in truth_ids:
        ws = by_id[workspace_id]
        assert [r["mode"] for r in ws["runs"]] == ["quick", "full"] and {r["outcome"] for r in ws["runs"]} == {"ok"}
        full = ws["runs"][1]
        campaigns = query(db, "select count(*) from outreach.campaigns where workspace_id = ?", workspace_id)[0][0]
        assert full["rows_loaded"]["campaigns"] == campaigns and full["rows_loaded"]["replies"] > 0
        assert full["started_at"] <= full["ended_at"] <= ws["runs"][0]["started_at"]
        newest = query(db, "select max(received_at) from outreach.replies where workspace_id = ?", workspace_id)[0][0]
        assert ws["newest_reply"] == newest.isoformat()
        # the last full reconcile is the full run's, not the quick one's
        last_full = datetime.fromisoformat(ws["last_full_at"])
        assert datetime.fromisoformat(full["started_at"]) - timedelta(seconds=5) <= last_full
        assert (
            last_full <= datetime.fromisoformat(full["ended_at"]) < datetime.fromisoformat(ws["runs"][0]["started_at"])
        )
        deferred = query(
            db,
            "select count(*) from outreach.replies where workspace_id = ? and body is null and deleted_at is null",
            workspace_id,
        )[0][0]
        assert ws["deferred_bodies"] == deferred > 0
        assert ws["last_error"] is None

    rejected = by_id[None]
    assert rejected["workspace_name"] == "key #3" and rejected["runs"][0]["outcome"] == "failed"
    assert rejected["last_error"].startswith("API key rejected (401)") and "\n" not in rejected["last_error"]
    assert "sk_not_a_key_0000" not in out.stdout

    table = _status("--duckdb", str(db), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    for needle in ("outreach status", "last run", "deferred bodies", "quick", "ok", "key #3", "API key rejected (401)"):
        assert needle in table.stdout, f"{needle!r} missing:\n{table.stdout}"


def test_status_shows_the_last_builds_source_freshness_per_source(make_sandbox: Any, tmp_path: Path) -> None:
    """`dbt source freshness` of the last model build (models.freshness, saved beside the warehouse) appears per
    source in the table and in --json; a source made stale shows its new outcome after the next check."""
    import duckdb

    from models.freshness import check_freshness
    from models.settings import resolve_target

    sb = make_sandbox(scale="tiny", rate_limit=0)
    db = tmp_path / "outreach.duckdb"
    run_sync(
        mode="full", api_keys=admin_keys(sb), base_url=sb.base_url, duckdb_path=db, pipelines_dir=tmp_path / "p",
        spool_dir=tmp_path / "no-spool", progress=False, rate_limit_per_minute=0, reply_body_cap=0,
    )  # fmt: skip
    before = _status("--duckdb", str(db), "--json", cwd=tmp_path)
    assert before.returncode == 0, before.stderr
    assert json.loads(before.stdout)["source_freshness"] is None
    table = _status("--duckdb", str(db), cwd=tmp_path).stdout
    assert "source freshness: not checked yet (run `outreach models`)" in table

    fresh = check_freshness(resolve_target(db))
    assert not fresh.error and {s.status for s in fresh.sources} == {"pass"}, fresh.to_dict()
    shown = json.loads(_status("--duckdb", str(db), "--json", cwd=tmp_path).stdout)["source_freshness"]
    assert shown == fresh.to_dict()
    assert {s["source"] for s in shown["sources"]} >= {"workspaces", "campaign_recipients", "replies"}

    con = duckdb.connect(str(db))  # the last quick sync 4 hours ago: past workspaces' 3-hour error threshold
    try:
        con.execute("update outreach.outreach.workspaces set synced_at = synced_at - interval 4 hour")
    finally:
        con.close()
    stale = check_freshness(resolve_target(db))
    by_source = {s.source: s.status for s in stale.sources}
    assert by_source["workspaces"] == "error" and by_source["replies"] == "pass", by_source
    shown = json.loads(_status("--duckdb", str(db), "--json", cwd=tmp_path).stdout)["source_freshness"]
    assert {s["source"]: s["status"] for s in shown["sources"]} == by_source
    table = _status("--duckdb", str(db), cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    row = next(line for line in table.stdout.splitlines() if " workspaces " in line and "45 minutes" in line)
    assert "error" in row and "3 hours" in row, table.stdout
    assert "source freshness (last model build" in table.stdout


def test_a_name_with_brackets_is_shown_as_it_is(make_sandbox: Any, tmp_path: Path) -> None:
    """Names come from the API, and rich read their [brackets] as markup: "Client [old] / [/old]" lost its brackets'
    words, and a "[/x]" failed `outreach status` (MarkupError) and the sync's live table on a terminal."""
    from rich.console import Console

    from pipelines.core.progress import SyncProgress, WorkspaceProgress

    name = "Client [old] / [/old] [/x] [bold]EU[/bold]"
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    db = tmp_path / "w.duckdb"
    run_sync(mode="full", api_keys=admin_keys(sb)[:1], base_url=sb.base_url, duckdb_path=db,
             pipelines_dir=tmp_path / "p", progress=False, rate_limit_per_minute=0)  # fmt: skip
    with duckdb.connect(str(db)) as con:
        con.execute("update outreach.sync_runs set workspace_name = ?", [name])
    table = _status("--duckdb", str(db), cwd=tmp_path)
    assert table.returncode == 0 and table.stderr == "", table.stderr
    assert f"│ {name}" in table.stdout, table.stdout

    console = Console(width=250, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(SyncProgress([WorkspaceProgress(label=name)]).renderable())
    assert f"│ {name}" in console.export_text()


def test_spool_files_kept_apart_are_said_until_they_are_mended(make_sandbox: Any, tmp_path: Path) -> None:
    """A loaded spool file with lines that are no spool record is kept in rejected/ (receiver/README.md), with a
    warning in that sync's log: status says it is there, where a scheduled sync's log is not read."""
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    db = tmp_path / "w.duckdb"
    run_sync(mode="full", api_keys=admin_keys(sb)[:1], base_url=sb.base_url, duckdb_path=db,
             pipelines_dir=tmp_path / "p", progress=False, rate_limit_per_minute=0)  # fmt: skip
    assert json.loads(_status("--duckdb", str(db), "--json", cwd=tmp_path).stdout)["rejected_spool_files"] == []
    kept = tmp_path / "w_spool" / "rejected" / "events-20260101T000000000000-1-0000.jsonl"
    kept.parent.mkdir(parents=True)
    kept.write_text("{not json\n")
    assert json.loads(_status("--duckdb", str(db), "--json", cwd=tmp_path).stdout)["rejected_spool_files"] == [
        str(kept)
    ]
    table = _status("--duckdb", str(db), cwd=tmp_path).stdout.splitlines()
    assert table[-1] == (
        f"webhook spool: 1 file(s) in {kept.parent} hold lines that are no spool record and were not loaded: mend "
        "them and move the files back into the spool to load them (receiver/README.md)"
    )
