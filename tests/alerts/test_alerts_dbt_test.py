"""The dbt test `alert_incidents_one_open` fails on two open incidents of one rule and subject, and passes on
one (run by dbt itself on a DuckDB warehouse; the sandbox journey runs it inside every build)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb

from alerts.db import connect
from alerts.store import TABLE, ensure_table
from models.dbt_invoke import invoke
from models.settings import resolve_target
from pipelines.warehouse.destination import warehouse_target

ROW = f"insert into {TABLE} (incident_id, rule, subject_type, subject_id, state, opened_at) values (?, ?, ?, ?, ?, ?)"


def _test_status(db: Path) -> tuple[str, object]:
    outcome = invoke(["test", "--select", "alert_incidents_one_open"], resolve_target(db, "duckdb"))
    (result,) = [r for r in outcome.results if r.node.name == "alert_incidents_one_open"]
    return str(result.status), result.failures


def test_two_open_incidents_of_one_rule_and_subject_fail_the_test(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    duckdb.connect(str(db)).close()
    now = datetime(2026, 3, 10, tzinfo=UTC)
    with connect(warehouse_target(duckdb_path=db)) as con:
        ensure_table(con)
        con.execute(ROW, ["a", "sync_stale", "workspace", "ws-1", "open", now])
        con.execute(ROW, ["b", "sync_stale", "workspace", "ws-2", "open", now])
        con.execute(ROW, ["c", "sync_stale", "workspace", "ws-1", "resolved", now])
    assert _test_status(db) == ("pass", 0)
    with connect(warehouse_target(duckdb_path=db)) as con:
        con.execute(ROW, ["d", "sync_stale", "workspace", "ws-1", "open", now])
    assert _test_status(db) == ("fail", 1)
