"""The share of raw rows re-written since the last good build, on DuckDB and PostgreSQL, counted as the
incremental models count a change (models/change_share.py); past a tenth, `outreach models` builds from every
row and says why."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.change_share import OTHER_VERSION, why_every_row
from pipelines.warehouse.destination import Warehouse
from tests.duckdb_sql import read_sql, run_sql, run_warehouse_sql

SNAPSHOT = "2026-03-01 00:00:00+00"
SYNC = "2026-03-02 00:00:00+00"


def _execute(warehouse: Warehouse, statements: list[str]) -> None:
    for statement in statements:
        run_warehouse_sql(warehouse, statement)


def test_rows_written_since_the_snapshot_count_and_another_fingerprint_rebuilds_every_row(
    empty_warehouse: Warehouse,
) -> None:
    _execute(
        empty_warehouse,
        [
            "create schema outreach",
            "create table outreach.campaign_recipients (id text, synced_at timestamptz)",
            "create table outreach.replies (id text, synced_at timestamptz)",
        ],
    )
    assert why_every_row(empty_warehouse, "this build") == ""  # no snapshot: nothing to compare with
    _execute(
        empty_warehouse,
        [
            "create schema reporting_inputs",
            "create table reporting_inputs.incremental_build (fingerprint text)",
            "insert into reporting_inputs.incremental_build values ('this build')",
            "create table reporting_inputs.incremental_marks (table_name text, column_name text, stamp timestamptz)",
            f"insert into reporting_inputs.incremental_marks values ('campaign_recipients', 'synced_at', '{SNAPSHOT}'),"
            f" ('replies', 'synced_at', '{SNAPSHOT}'), ('replies', 'deleted_at', '{SYNC}')",
            # 8 recipients as the snapshot saw them, 1 never stamped (not a change)
            *[f"insert into outreach.campaign_recipients values ('r{n}', '{SNAPSHOT}')" for n in range(8)],
            "insert into outreach.campaign_recipients values ('r10', null)",
            # 4 replies as seen, 1 new; a mark of another column of the same stamp does not hide it
            *[f"insert into outreach.replies values ('p{n}', '{SNAPSHOT}')" for n in range(4)],
            f"insert into outreach.replies values ('p4', '{SYNC}')",
        ],
    )
    assert why_every_row(empty_warehouse, "this build") == ""  # 1 of 14: incremental
    _execute(empty_warehouse, [f"insert into outreach.campaign_recipients values ('r8', '{SYNC}'), ('r9', '{SYNC}')"])
    rewritten = "of the raw recipients and replies were re-written since the last build (a full sync re-writes all)"
    assert why_every_row(empty_warehouse, "this build") == f"19% {rewritten}"  # 3 of 16
    # a table synced by a version without `synced_at`: every row counts as re-written, as the models count it
    _execute(empty_warehouse, ["alter table outreach.replies drop column synced_at"])
    assert why_every_row(empty_warehouse, "this build") == f"44% {rewritten}"  # 7 of 16
    assert why_every_row(empty_warehouse, "another version") == OTHER_VERSION


def test_after_a_full_sync_the_build_is_from_every_row_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    assert build(path, publish=False).passed
    run_sql(path, "update outreach.campaign_recipients set synced_at = now()")  # what a full sync writes
    with caplog.at_level(logging.INFO, logger="models"):
        report = build(path, publish=False)
    assert report.passed
    assert report.every_row.endswith(
        "% of the raw recipients and replies were re-written since the last build (a full sync re-writes all)"
    )
    assert f"built from every row: {report.every_row}" in report.summary()
    assert "every mart is rebuilt from every row, as with --full-refresh" in caplog.text
    assert "incremental_rebuilt_lead_engagement" not in {
        name for (name,) in read_sql(path, "select table_name from duckdb_tables()")
    }  # built from every row: no rebuilt leads for the BI publish (models/bi_update.py)
    # the snapshot moved on: the next build is incremental again (a build that failed would not have moved it)
    assert build(path, publish=False).every_row == ""


def test_after_a_change_of_the_vars_the_build_is_from_every_row(tmp_path: Path) -> None:
    """The last good build's snapshot holds another fingerprint: every lead would be rebuilt anyway."""
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    assert build(path, publish=False).every_row == ""  # the first build: nothing to compare with
    as_positive = {"extra_reply_classes": {"not_interested": "positive"}}
    report = build(path, publish=False, dbt_vars=as_positive)
    assert report.passed and report.every_row == OTHER_VERSION
    assert build(path, publish=False, dbt_vars=as_positive).every_row == ""  # the same vars again
