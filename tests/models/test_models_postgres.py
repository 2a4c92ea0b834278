"""The same dbt project on a real PostgreSQL: every mart equals the DuckDB build, row for row.

A small sandbox is synced three times (a simulated day apart, webhook events from real signed deliveries
loaded from the receiver's spool) into DuckDB and built there; its raw tables are copied into a fresh
PostgreSQL database (devtools.pg_copy), `outreach models --destination postgres` builds there from dlt's
own credentials setting, and each mart is compared with DuckDB's: same columns, same types, same rows,
floats within a tolerance. A synthetic warehouse whose `workspaces` keeps history (scd2) is compared the
same way, so every mart (credits per day included) has rows on both engines.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import duckdb
import pytest
from test_models_engagement_support import delivered_sandbox
from test_sync_support import query

from devtools.pg_copy import copy_raw_tables
from devtools.runner_parity import KEYS
from devtools.synthetic import make_raw_warehouse
from models import STAGING_PREFIX
from models.build import build
from models.errors import DataTestFailure

pytestmark = pytest.mark.timeout(600)

OUTREACH = Path(sys.executable).with_name("outreach")
PASSWORD = "not-printed-pw"  # the test server trusts loopback; the password only travels, it must never show
PG_TYPES = {
    "text": "VARCHAR", "character varying": "VARCHAR", "bigint": "BIGINT", "integer": "INTEGER",
    "double precision": "DOUBLE", "boolean": "BOOLEAN", "date": "DATE",
    "timestamp with time zone": "TIMESTAMP WITH TIME ZONE",
}  # fmt: skip
#: rates, pct_* and other values rounded to 2 decimals may round a binary tie differently (PostgreSQL
#: rounds a numeric made from the double): allow one unit in the last kept decimal, nothing more
ROUNDING_TOLERANCE = 0.01 + 1e-9


def _duckdb_marts(path: Path) -> dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]]:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as w (read_only)")
        out = {}
        for (table,) in con.execute(
            "select table_name from duckdb_tables() where database_name = 'w' and schema_name = 'reporting'"
        ).fetchall():
            columns = con.execute(
                "select column_name, data_type from duckdb_columns() where database_name = 'w' "
                "and schema_name = 'reporting' and table_name = ? order by column_index",
                [table],
            ).fetchall()
            out[table] = (columns, con.execute(f"select * from w.reporting.{table}").fetchall())
        return out
    finally:
        con.close()


def _pg_marts(dsn: str) -> dict[str, tuple[list[tuple[str, str]], list[tuple[Any, ...]]]]:
    import psycopg2

    con = psycopg2.connect(dsn)
    try:
        with con.cursor() as cur:
            # alert_incidents is the alerts' own table (written after `outreach models`), not a mart
            cur.execute("select table_name from information_schema.tables where table_schema = 'reporting' "
                        "and table_type = 'BASE TABLE' and table_name <> 'alert_incidents'")  # fmt: skip
            out = {}
            for (table,) in cur.fetchall():
                cur.execute(
                    "select column_name, data_type from information_schema.columns where table_schema = 'reporting' "
                    "and table_name = %s order by ordinal_position",
                    [table],
                )
                columns = [(name, PG_TYPES.get(dtype, dtype)) for name, dtype in cur.fetchall()]
                cur.execute(f'select * from reporting."{table}"')
                out[table] = (columns, cur.fetchall())
            return out
    finally:
        con.close()


def _sort_key(row: tuple[Any, ...], positions: list[int]) -> tuple[Any, ...]:
    return tuple((row[i] is None, str(row[i])) for i in positions)


def _same(a: Any, b: Any) -> tuple[bool, float]:
    """Equal values; floats within the rounding tolerance (returns the float difference)."""
    if a is None or b is None:
        return a is None and b is None, 0.0
    if isinstance(a, float) or isinstance(b, (float, Decimal)):
        diff = abs(float(a) - float(b))
        return diff <= ROUNDING_TOLERANCE or math.isclose(float(a), float(b), rel_tol=1e-9), diff
    if isinstance(a, datetime) and isinstance(b, datetime):
        return a == b, 0.0
    if isinstance(a, date) and isinstance(b, date):
        return a == b, 0.0
    return a == b, 0.0


def _compare(duck: dict[str, Any], pg: dict[str, Any]) -> dict[str, Any]:
    figures: dict[str, Any] = {"tables": 0, "rows": 0, "cells": 0, "max_float_diff": 0.0, "float_diffs": 0,
                               "empty": []}  # fmt: skip
    # the staging tables are compared through the marts: they keep the API's JSON text as each engine prints it
    # (`["mon","tue"]` and `["mon", "tue"]`)
    assert set(pg) == set(duck) and {t for t in duck if not t.startswith(STAGING_PREFIX)} == set(KEYS)
    for table, (columns, rows) in ((t, duck[t]) for t in KEYS):
        pg_columns, pg_rows = pg[table]
        assert pg_columns == columns, f"{table}: columns or types differ"
        names = [c for c, _ in columns]
        positions = [names.index(k) for k in KEYS[table]]
        assert len(rows) == len(pg_rows), f"{table}: {len(rows)} rows on DuckDB, {len(pg_rows)} on PostgreSQL"
        for row, pg_row in zip(sorted(rows, key=lambda r: _sort_key(r, positions)),
                               sorted(pg_rows, key=lambda r: _sort_key(r, positions)), strict=True):  # fmt: skip
            for name, a, b in zip(names, row, pg_row, strict=True):
                same, diff = _same(a, b)
                assert same, f"{table}.{name}: {a!r} on DuckDB, {b!r} on PostgreSQL (key {[row[i] for i in positions]})"
                figures["cells"] += 1
                if diff:
                    figures["float_diffs"] += 1
                    figures["max_float_diff"] = max(figures["max_float_diff"], diff)
        figures["tables"] += 1
        figures["rows"] += len(rows)
        if not rows:
            figures["empty"].append(table)
    return figures


def test_postgres_build_equals_duckdb_build_and_keeps_tables_on_failure(
    make_sandbox: Callable[..., Any], pg_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with delivered_sandbox(make_sandbox, tmp_path) as world:
        world.sync("full")
        world.subscribe()
        for _ in range(2):
            world.advance(86_400)
            world.sync("full")
    warehouse = world.warehouse
    assert build(warehouse, publish=False).passed

    dsn = pg_server.create_database("models_pg_parity")
    copied = copy_raw_tables(warehouse, dsn)
    assert copied["campaign_recipients"] == 3000
    with_password = dsn.replace("postgres@", f"postgres:{PASSWORD}@")
    env = {**os.environ, "DESTINATION__POSTGRES__CREDENTIALS": with_password}
    out = subprocess.run([str(OUTREACH), "models", "--destination", "postgres"], capture_output=True, text=True,
                         env=env, timeout=300, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    where = urlsplit(dsn)  # the warehouse as every command names it (never the password)
    assert f"on postgres {where.path.lstrip('/')}@{where.hostname}:{where.port}" in out.stdout
    assert "BI file: not published" in out.stdout
    assert PASSWORD not in out.stdout + out.stderr

    figures = _compare(_duckdb_marts(warehouse), _pg_marts(dsn))
    assert figures["tables"] == len(KEYS) == 18 and figures["rows"] > 3000
    assert figures["empty"] == [], "every mart has rows to compare"
    print(f"\nPostgreSQL vs DuckDB: {figures}")

    # all or nothing on PostgreSQL too: failing data tests leave the published tables as they were. One fails on
    # the marts, one on a raw value dlt could not type (the variant column it would have made, `__v_text`).
    import psycopg2

    before = _pg_marts(dsn)
    con = psycopg2.connect(dsn)
    with con, con.cursor() as cur:
        cur.execute("update outreach.campaign_variants set sent = sent + 5 where \"index\" = 0 "
                    "and campaign_id = (select min(campaign_id) from outreach.campaign_stats)")  # fmt: skip
        cur.execute("alter table outreach.campaign_recipients add column current_step__v_text text")
        cur.execute("update outreach.campaign_recipients set current_step__v_text = 'two' "
                    "where id = (select min(id) from outreach.campaign_recipients)")  # fmt: skip
    con.close()
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", with_password)
    with pytest.raises(DataTestFailure, match="variant_sent_adds_up") as info:
        build(destination="postgres")
    drift = "test no_uncoerced_variants: 1 row (raw_table=campaign_recipients variant_column=current_step__v_text "
    assert any(p.startswith(drift) and p.endswith("raw_value=two)") for p in info.value.problems), info.value.problems
    after = _pg_marts(dsn)
    assert {t: sorted(map(str, rows)) for t, (_, rows) in after.items()} == {
        t: sorted(map(str, rows)) for t, (_, rows) in before.items()
    }
    con = psycopg2.connect(dsn)
    with con.cursor() as cur:
        cur.execute("select count(*) from information_schema.tables where table_schema = 'reporting' "
                    "and table_name like '%%__next'")  # fmt: skip
        assert cur.fetchone() == (0,)
    con.close()


def test_postgres_build_equals_duckdb_build_on_a_workspace_history(pg_server: Any, tmp_path: Path) -> None:
    """Workspaces as scd2 history (a balance per day), events of every kind, free-mail and unknown reply types."""
    warehouse = make_raw_warehouse(tmp_path / "outreach.duckdb", recipients=3000, seed=5, workspace_history=True)
    con = duckdb.connect(str(warehouse))
    try:
        con.execute("update outreach.outreach.replies set reply_type = 'vacation_responder' where hash(id) % 9 = 2")
    finally:
        con.close()
    assert build(warehouse, publish=False).passed
    dsn = pg_server.create_database("models_pg_history")
    raw_tables = copy_raw_tables(warehouse, dsn)
    env = {**os.environ, "DESTINATION__POSTGRES__CREDENTIALS": dsn.replace("postgres@", f"postgres:{PASSWORD}@")}
    out = subprocess.run([str(OUTREACH), "models", "--destination", "postgres"], capture_output=True, text=True,
                         env=env, timeout=300, check=False)  # fmt: skip
    assert out.returncode == 0, out.stderr + out.stdout
    assert "value_field=vacation_responder" in out.stdout, "the unknown reply type warns on PostgreSQL too"
    # the build gathered the planner's statistics of what it read and of what it built (ANALYZE, not autovacuum)
    analyzed = _analyzed_tables(dsn)
    sources = {table for table in raw_tables if not table.startswith("_dlt")}  # dlt's own tables are no source
    assert sources <= analyzed["outreach"], sources - analyzed["outreach"]
    assert set(KEYS) <= analyzed["reporting"], set(KEYS) - analyzed["reporting"]
    figures = _compare(_duckdb_marts(warehouse), _pg_marts(dsn))
    assert figures["tables"] == len(KEYS) == 18 and figures["empty"] == []
    print(f"\nPostgreSQL vs DuckDB (workspace history): {figures}")
    # the same table and column docs as comments on both engines (persist_docs), none empty
    pg_comments, duck_comments = _pg_comments(dsn), _duckdb_comments(warehouse)
    assert pg_comments == duck_comments and len(pg_comments) > 17 * 5
    assert all(text and text.strip() for text in pg_comments.values())
    assert "count_human_replied / count_contacted" in pg_comments[("campaign_performance", "human_reply_rate")]


def _analyzed_tables(dsn: str) -> dict[str, set[str]]:
    """Schema -> its tables that an ANALYZE (not autovacuum's) has gathered statistics of."""
    out: dict[str, set[str]] = {"outreach": set(), "reporting": set()}
    analyzed = "select schemaname, relname from pg_stat_user_tables where last_analyze is not null"
    for schema, table in query(dsn, analyzed):
        out.setdefault(schema, set()).add(table)
    return out


def _pg_comments(dsn: str) -> dict[tuple[str, str], str | None]:
    """(table, "") -> the table's comment and (table, column) -> the column's, of every mart on PostgreSQL."""
    import psycopg2

    con = psycopg2.connect(dsn)
    try:
        with con.cursor() as cur:
            cur.execute(
                "select c.relname, coalesce(a.attname, ''), "
                "case when a.attname is null then obj_description(c.oid, 'pg_class') "
                "else col_description(c.oid, a.attnum) end "
                "from pg_class c join pg_namespace n on n.oid = c.relnamespace "
                "left join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped "
                "where n.nspname = 'reporting' and c.relkind = 'r' and c.relname <> 'alert_incidents' "
                "union all select c.relname, '', obj_description(c.oid, 'pg_class') from pg_class c "
                "join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'reporting' and c.relkind = 'r' "
                "and c.relname <> 'alert_incidents'"
            )  # the marts only: alert_incidents is the alerts' table, commented by alerts/store.py
            return {(str(t), str(col)): text for t, col, text in cur.fetchall()}
    finally:
        con.close()


def _duckdb_comments(path: Path) -> dict[tuple[str, str], str | None]:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as w (read_only)")
        tables = con.execute(
            "select table_name, '', comment from duckdb_tables() "
            "where database_name = 'w' and schema_name = 'reporting'"
        ).fetchall()
        columns = con.execute(
            "select table_name, column_name, comment from duckdb_columns() where database_name = 'w' "
            "and schema_name = 'reporting' and table_name in (select table_name from duckdb_tables() "
            "where database_name = 'w' and schema_name = 'reporting')"
        ).fetchall()
        return {(str(t), str(c)): text for t, c, text in tables + columns}
    finally:
        con.close()
