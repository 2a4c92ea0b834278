"""Run the A/B statistics (models/ab_test.py) before dbt and store them for variant_performance.

dbt-postgres runs no Python models, so the statistics are computed here, in the same process as the build,
on DuckDB and PostgreSQL alike: read the variants and the stats totals from the raw tables (rows the API
still returns), compute, and replace the rows of `reporting_inputs.variant_tests`. The staging view `stg_variant_tests`
reads it and the data tests check the invariants (a winner has 100+ recipients per arm, adjusted p >= raw p).
A failure here stops the build before dbt runs, so the published tables stay as they were.

Computing needs statsmodels, scipy and pandas, a second or two of imports in every build. The rows are a function of
the inputs and of the statistics' code alone, so a build whose inputs and code are those the stored rows were computed
from keeps them (the fingerprint in `reporting_inputs.variant_tests_inputs`, written with the rows); `--full-refresh`
computes them again.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from models.ab_columns import COLUMN_TYPES, COLUMNS
from models.errors import WarehouseError
from models.settings import PostgresTarget, postgres_target
from pipelines.core.root_cause import explain_sqlstate, one_line
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.duckdb_file import sql_string

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

SCHEMA = "reporting_inputs"
TABLE = "variant_tests"
#: one row: the fingerprint of the inputs and code that the rows of TABLE were computed from
INPUTS = "variant_tests_inputs"
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
_COLUMNS_DDL = ", ".join(f"{column} {kind}" for column, kind in COLUMN_TYPES.items())
#: the packages the rows are computed with, beside models/ab_test.py: a new release of one may compute other figures
_PACKAGES = ("statsmodels", "scipy", "numpy", "pandas")

Rows = Sequence[Sequence[Any]]


def write_variant_tests(target: Warehouse, *, recompute: bool = False) -> int | None:
    """Compute and store the per-variant statistics; returns the number of variants, or None when the stored rows
    were computed from the same inputs and code and are kept (`recompute`: compute them anyway)."""
    try:
        if target.duckdb_path is not None:
            return _write_duckdb(target.duckdb_path, recompute)
        if target.is_postgres:
            return _write_postgres(postgres_target(target), recompute)
    except (duckdb.Error, OSError) as exc:
        raise WarehouseError(f"the A/B statistics could not be stored in {target.label}: {one_line(exc)}") from exc
    return 0


def _write_duckdb(path: Path, recompute: bool) -> int | None:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{sql_string(path)}' as {_ALIAS}")
        found = con.execute(
            "select schema_name, table_name from duckdb_tables() where database_name = ?", [_ALIAS]
        ).fetchall()
        tables = {table for schema, table in found if schema == RAW}

        def read(sql: str) -> Rows:
            return con.execute(sql.format(raw=f"{_ALIAS}.{RAW}", schema=f"{_ALIAS}.{SCHEMA}")).fetchall()

        variants, totals = _inputs(tables, read)
        fingerprint = _fingerprint(variants, totals)
        if not recompute and _kept(found, fingerprint, read):
            return None
        tests = _compute(variants, totals)
        con.execute("begin")
        con.execute(f"create schema if not exists {_ALIAS}.{SCHEMA}")
        # replace the rows, never the table: the staging view stg_variant_tests depends on it (PostgreSQL
        # refuses to drop a table a view reads)
        con.execute(f"create table if not exists {_ALIAS}.{SCHEMA}.{TABLE} ({_COLUMNS_DDL})")
        con.execute(f"delete from {_ALIAS}.{SCHEMA}.{TABLE}")
        con.register("tests_frame", tests)
        con.execute(f"insert into {_ALIAS}.{SCHEMA}.{TABLE} select {', '.join(COLUMNS)} from tests_frame")
        con.execute(f"create or replace table {_ALIAS}.{SCHEMA}.{INPUTS} as select ? as fingerprint", [fingerprint])
        con.execute("commit")
        return len(tests)
    finally:
        con.close()


def _write_postgres(pg: PostgresTarget, recompute: bool) -> int | None:
    import psycopg2
    from psycopg2.extras import execute_values

    con = pg.connect()
    try:
        with con, con.cursor() as cur:
            cur.execute("select table_schema, table_name from information_schema.tables")
            found = cur.fetchall()
            tables = {table for schema, table in found if schema == RAW}

            def read(sql: str) -> Rows:
                cur.execute(sql.format(raw=RAW, schema=SCHEMA))
                return cur.fetchall()

            variants, totals = _inputs(tables, read)
            fingerprint = _fingerprint(variants, totals)
            if not recompute and _kept(found, fingerprint, read):
                return None
            tests = _compute(variants, totals)
            cur.execute(f"create schema if not exists {SCHEMA}")
            cur.execute(f"create table if not exists {SCHEMA}.{TABLE} ({_COLUMNS_DDL})")
            cur.execute(f"delete from {SCHEMA}.{TABLE}")
            values = [tuple(_plain(v) for v in row) for row in tests[COLUMNS].itertuples(index=False)]
            if values:
                execute_values(cur, f"insert into {SCHEMA}.{TABLE} ({', '.join(COLUMNS)}) values %s", values)
            cur.execute(f"drop table if exists {SCHEMA}.{INPUTS}")
            cur.execute(f"create table {SCHEMA}.{INPUTS} as select %s::text as fingerprint", [fingerprint])
        return len(tests)
    except psycopg2.Error as exc:
        raise WarehouseError(
            f"the A/B statistics could not be stored in {pg.label}: {explain_sqlstate(exc) or one_line(exc)}"
        ) from exc
    finally:
        con.close()


def _inputs(tables: set[str], read: Callable[[str], Rows]) -> tuple[Rows, Rows]:
    """The raw variants' rows (_VARIANTS) and the campaigns' totals (_TOTALS), sorted; none while the sync has not
    created the tables."""
    variants = read(_VARIANTS) if "campaign_variants" in tables else []
    totals = read(_TOTALS) if "campaign_stats" in tables else []
    return sorted(map(tuple, variants), key=repr), sorted(map(tuple, totals), key=repr)


def _fingerprint(variants: Rows, totals: Rows) -> str:
    """SHA-256 of the inputs, models/ab_test.py and the versions of the packages it computes with."""
    digest = hashlib.sha256(Path(__file__).with_name("ab_test.py").read_bytes())
    digest.update(repr([f"{package}=={version(package)}" for package in _PACKAGES]).encode())
    digest.update(repr((list(variants), list(totals))).encode())
    return digest.hexdigest()


def _kept(found: Rows, fingerprint: str, read: Callable[[str], Rows]) -> bool:
    """Whether the stored rows were computed from the inputs and code of `fingerprint`. `found`: every table's
    (schema, name); `read(sql)`: the rows of `sql`, its {schema} SCHEMA."""
    if not {TABLE, INPUTS} <= {table for schema, table in found if schema == SCHEMA}:
        return False
    if [tuple(row) for row in read(f"select fingerprint from {{schema}}.{INPUTS}")] != [(fingerprint,)]:
        return False
    log.info("A/B statistics kept: the same inputs and code as when they were computed")
    return True


def _compute(variants: Rows, totals: Rows) -> pd.DataFrame:
    import pandas as pd  # imported here with the statistics: a build that keeps the rows needs neither

    from models.ab_test import variant_tests

    tests = variant_tests(
        pd.DataFrame(variants, columns=["campaign_id", "variant_index", "count_sent", "count_replied"]),
        pd.DataFrame(totals, columns=["campaign_id", "count_sent", "count_contacted"]),
    )
    log.info("A/B statistics for %d variants of %d campaigns", len(tests), tests["campaign_id"].nunique())
    return tests


def _plain(value: object) -> object:
    """numpy scalars and NaN -> Python values psycopg2 adapts (NaN -> NULL)."""
    if value is None:
        return None
    if isinstance(value, float) and value != value:
        return None
    return value.item() if hasattr(value, "item") else value
