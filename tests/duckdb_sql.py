"""SQL on a warehouse, one connection per statement (the build opens the warehouse between them): a DuckDB file, or a
PostgreSQL database (`run_pg_sql`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from pipelines.warehouse.destination import Warehouse


def run_sql(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Run one statement on the file; its rows, or [] for a statement that returns none."""
    con = duckdb.connect(str(path))
    try:
        cursor = con.execute(sql)
        return cursor.fetchall() if cursor.description else []
    finally:
        con.close()


def read_sql(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """Run one query on the file opened read-only (it neither writes the file nor waits for a writer's lock)."""
    con = duckdb.connect()
    try:
        con.execute(f"attach '{path}' as w (read_only)")
        con.execute("use w")
        return con.execute(sql).fetchall()
    finally:
        con.close()


def run_pg_sql(dsn: str, sql: str) -> list[tuple[Any, ...]]:
    """Run one statement on the PostgreSQL database of `dsn` and commit; its rows, or [] for a statement that returns
    none."""
    import psycopg2

    return _run_on(psycopg2.connect(dsn), sql)


def run_warehouse_sql(warehouse: Warehouse, sql: str) -> list[tuple[Any, ...]]:
    """`run_sql` or `run_pg_sql` on the warehouse as the settings resolve it (a DuckDB file, or PostgreSQL)."""
    if warehouse.duckdb_path is not None:
        return run_sql(warehouse.duckdb_path, sql)
    return _run_on(warehouse.connect(), sql)


def _run_on(con: Any, sql: str) -> list[tuple[Any, ...]]:
    """Run one statement on a psycopg2 connection, commit and close it."""
    try:
        with con, con.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchall() if cursor.description else []
    finally:
        con.close()
