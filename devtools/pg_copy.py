"""Copy a DuckDB warehouse's raw `outreach` tables into a PostgreSQL database (tests and benchmarks).

The tables keep their columns and types (DuckDB type -> PostgreSQL type), so the dbt project reads the
same raw data on both engines. Data moves as CSV through `COPY`: DuckDB writes it, psycopg2 streams it.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import duckdb

RAW = "outreach"
_TYPES = {
    "VARCHAR": "text",
    "BIGINT": "bigint",
    "INTEGER": "integer",
    "SMALLINT": "smallint",
    "DOUBLE": "double precision",
    "FLOAT": "real",
    "BOOLEAN": "boolean",
    "TIMESTAMP WITH TIME ZONE": "timestamp with time zone",
    "TIMESTAMP": "timestamp",
    "DATE": "date",
    "JSON": "jsonb",
}


def pg_type(duckdb_type: str) -> str:
    if duckdb_type.startswith("DECIMAL"):
        return duckdb_type.replace("DECIMAL", "numeric")
    return _TYPES.get(duckdb_type, "text")


def copy_raw_tables(duckdb_path: Path, dsn: str) -> dict[str, int]:
    """Create schema `outreach` in the database of `dsn` with every raw table of the warehouse; rows per table."""
    import psycopg2

    copied: dict[str, int] = {}
    con = duckdb.connect()
    pg = psycopg2.connect(dsn)
    try:
        con.execute(f"attach '{duckdb_path}' as w (read_only)")
        columns: dict[str, list[tuple[str, str]]] = {}
        for table, column, dtype in con.execute(
            "select table_name, column_name, data_type from duckdb_columns() where database_name = 'w' "
            "and schema_name = ? order by table_name, column_index",
            [RAW],
        ).fetchall():
            columns.setdefault(table, []).append((column, dtype))
        with pg, pg.cursor() as cur, tempfile.TemporaryDirectory() as tmp:
            cur.execute(f'create schema if not exists "{RAW}"')
            for table, cols in columns.items():
                ddl = ", ".join(f'"{name}" {pg_type(dtype)}' for name, dtype in cols)
                cur.execute(f'create table "{RAW}"."{table}" ({ddl})')
                csv = Path(tmp) / f"{table}.csv"
                con.execute(f"copy (select * from w.{RAW}.\"{table}\") to '{csv}' (header false)")
                with open(csv) as handle:
                    cur.copy_expert(f'copy "{RAW}"."{table}" from stdin with (format csv)', handle)
                copied[table] = cur.rowcount
    finally:
        pg.close()
        con.close()
    return copied
