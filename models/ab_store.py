"""Run the A/B statistics (models/ab_test.py) before dbt and store them for variant_performance.

dbt-postgres runs no Python models, so the statistics are computed here, in the same process as the build,
on DuckDB and PostgreSQL alike: read the variants and the stats totals from the raw tables (rows the API
still returns), compute, and replace the rows of `reporting_inputs.variant_tests`. The staging view `stg_variant_tests`
reads it and the data tests check the invariants (a winner has 100+ recipients per arm, adjusted p >= raw p).
A failure here stops the build before dbt runs, so the published tables stay as they were.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from models.ab_test import COLUMNS, variant_tests
from models.errors import WarehouseError
from models.settings import PostgresTarget, postgres_target
from pipelines.core.root_cause import one_line
from pipelines.warehouse.destination import Warehouse

log = logging.getLogger(__name__)

SCHEMA = "reporting_inputs"
TABLE = "variant_tests"
RAW = "outreach"

_VARIANTS = """
    select campaign_id, "index" as variant_index, coalesce(sent, 0) as count_sent, coalesce(replied, 0) as count_replied
    from {raw}.campaign_variants where deleted_at is null
"""
_TOTALS = """
    select campaign_id, coalesce(totals__sent, 0) as count_sent,
        coalesce(totals__recipients, 0) - coalesce(totals__pending, 0) as count_contacted
    from {raw}.campaign_stats where deleted_at is null
"""
#: DuckDB names a file's catalog after its stem: data/outreach.duckdb's catalog `outreach` clashes with the
#: raw schema, so the file is attached under this alias (as the dbt profile does)
_ALIAS = "warehouse"
_TYPES = {
    "campaign_id": "text",
    "variant_index": "bigint",
    "estimated_recipients": "bigint",
    "reply_rate": "double precision",
    "reply_rate_ci_low": "double precision",
    "reply_rate_ci_high": "double precision",
    "compared_variant_index": "bigint",
    "z_score": "double precision",
    "p_value": "double precision",
    "adjusted_p_value": "double precision",
    "is_winner": "boolean",
    "test_state": "text",
    "recipients_needed": "bigint",
}
_COLUMNS_DDL = ", ".join(f"{c} {_TYPES[c]}" for c in COLUMNS)


def write_variant_tests(target: Warehouse) -> int:
    """Compute and store the per-variant statistics; returns the number of variants."""
    try:
        if target.duckdb_path is not None:
            return _write_duckdb(target.duckdb_path)
        if target.is_postgres:
            return _write_postgres(postgres_target(target))
    except (duckdb.Error, OSError) as exc:
        raise WarehouseError(f"the A/B statistics could not be stored in {target.label}: {one_line(exc)}") from exc
    return 0


def _compute(variants: pd.DataFrame, totals: pd.DataFrame) -> pd.DataFrame:
    tests = variant_tests(variants, totals)
    log.info("A/B statistics for %d variants of %d campaigns", len(tests), tests["campaign_id"].nunique())
    return tests


def _write_duckdb(path: Path) -> int:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{str(path).replace(chr(39), chr(39) * 2)}' as {_ALIAS}")
        tables = {
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where database_name = ? and schema_name = ?", [_ALIAS, RAW]
            ).fetchall()
        }
        tests = _compute(*_inputs(tables, lambda sql: con.execute(sql.format(raw=f"{_ALIAS}.{RAW}")).df()))
        con.execute("begin")
        con.execute(f"create schema if not exists {_ALIAS}.{SCHEMA}")
        # replace the rows, never the table: the staging view stg_variant_tests depends on it (PostgreSQL
        # refuses to drop a table a view reads)
        con.execute(f"create table if not exists {_ALIAS}.{SCHEMA}.{TABLE} ({_COLUMNS_DDL})")
        con.execute(f"delete from {_ALIAS}.{SCHEMA}.{TABLE}")
        con.register("tests_frame", tests)
        con.execute(f"insert into {_ALIAS}.{SCHEMA}.{TABLE} select {', '.join(COLUMNS)} from tests_frame")
        con.execute("commit")
        return len(tests)
    finally:
        con.close()


def _write_postgres(pg: PostgresTarget) -> int:
    import psycopg2
    from psycopg2.extras import execute_values

    try:
        con = psycopg2.connect(
            host=pg.host, port=pg.port, user=pg.username, password=pg.password, dbname=pg.database, connect_timeout=10
        )
    except psycopg2.Error as exc:
        raise WarehouseError(f"the A/B statistics could not be stored in {pg.label}: {one_line(exc)}") from exc
    try:
        with con, con.cursor() as cur:
            cur.execute("select table_name from information_schema.tables where table_schema = %s", [RAW])
            tables = {r[0] for r in cur.fetchall()}

            def read(sql: str) -> pd.DataFrame:
                cur.execute(sql.format(raw=RAW))
                return pd.DataFrame(cur.fetchall(), columns=[d[0] for d in cur.description or []])

            tests = _compute(*_inputs(tables, read))
            cur.execute(f"create schema if not exists {SCHEMA}")
            cur.execute(f"create table if not exists {SCHEMA}.{TABLE} ({_COLUMNS_DDL})")
            cur.execute(f"delete from {SCHEMA}.{TABLE}")
            values = [tuple(_plain(v) for v in row) for row in tests[COLUMNS].itertuples(index=False)]
            if values:
                execute_values(cur, f"insert into {SCHEMA}.{TABLE} ({', '.join(COLUMNS)}) values %s", values)
        return len(tests)
    except psycopg2.Error as exc:
        raise WarehouseError(f"the A/B statistics could not be stored in {pg.label}: {one_line(exc)}") from exc
    finally:
        con.close()


def _inputs(tables: set[str], read: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The raw variants and totals; empty frames while the sync has not created the tables."""
    variants = (
        read(_VARIANTS)
        if "campaign_variants" in tables
        else pd.DataFrame(columns=["campaign_id", "variant_index", "count_sent", "count_replied"])
    )
    totals = (
        read(_TOTALS)
        if "campaign_stats" in tables
        else pd.DataFrame(columns=["campaign_id", "count_sent", "count_contacted"])
    )
    return variants, totals


def _plain(value: object) -> object:
    """numpy scalars and NaN -> Python values psycopg2 adapts (NaN -> NULL)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    return value.item() if hasattr(value, "item") else value
