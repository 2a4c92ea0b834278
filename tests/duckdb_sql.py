"""SQL on a DuckDB warehouse file, one connection per statement (the build opens the file between them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb


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
