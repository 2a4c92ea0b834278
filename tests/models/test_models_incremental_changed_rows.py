"""An incremental build rebuilds exactly the leads of the raw rows a sync re-wrote since the last good build (a
recipient's and a reply's), on both engines, and leaves none of the run's ids of changed rows behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtools.pg_copy import copy_raw_tables
from devtools.synthetic import make_raw_warehouse
from models.build import build
from pipelines.warehouse.destination import Warehouse
from tests.duckdb_sql import run_warehouse_sql

pytestmark = pytest.mark.timeout(300)

SYNC = "2030-01-01 00:00:01+00"  # the start of a sync run after the first build


def test_an_incremental_build_rebuilds_the_leads_of_the_rows_a_sync_rewrote(
    empty_warehouse: Warehouse, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if empty_warehouse.duckdb_path is None:  # PostgreSQL: the synthetic raw tables copied into its database
        copy_raw_tables(make_raw_warehouse(tmp_path / "raw.duckdb", recipients=300), request.getfixturevalue("pg_dsn"))
    else:
        make_raw_warehouse(empty_warehouse.duckdb_path, recipients=300)

    def sql(statement: str) -> list[tuple[Any, ...]]:
        return run_warehouse_sql(empty_warehouse, statement)

    assert build(empty_warehouse, publish=False).passed

    # a recipient and a reply of two other leads, re-written by a sync run
    recipient, *recipient_lead = sql(
        "select id, workspace_id, lower(trim(email)) from outreach.campaign_recipients where deleted_at is null "
        "order by id limit 1"
    )[0]
    reply, *reply_lead = sql(
        'select id, workspace_id, lower(trim("from")) from outreach.replies where deleted_at is null '
        f"and lower(trim(\"from\")) <> '{recipient_lead[1]}' order by id limit 1"
    )[0]
    sql(f"update outreach.campaign_recipients set synced_at = '{SYNC}' where id = '{recipient}'")
    sql(f"update outreach.replies set synced_at = '{SYNC}' where id = '{reply}'")
    assert build(empty_warehouse, publish=False).passed

    rebuilt = sql("select workspace_key, lead_key from reporting_inputs.incremental_rebuilt_lead_engagement")
    assert sorted(rebuilt) == sorted([tuple(recipient_lead), tuple(reply_lead)])
    left = sql(
        "select table_name from information_schema.tables where table_schema = 'reporting_inputs' "
        "and table_name like 'incremental_changed_%'"
    )
    assert left == []  # the run's ids of changed rows went with it
