"""Rewrite a DuckDB warehouse in an older storage format, so that older DuckDB releases (most BI tools) can
open it; `python -m pipelines.warehouse.diagnose convert PATH` runs it."""

from __future__ import annotations

import os
from pathlib import Path

from pipelines.core.constants import DEFAULT_STORAGE_VERSION
from pipelines.core.errors import WarehouseError
from pipelines.warehouse.duckdb_file import sql_path, storage_number


def convert_storage(duckdb_path: Path, storage_version: str = DEFAULT_STORAGE_VERSION) -> Path:
    """Rewrite the warehouse in `storage_version` (every schema, table, view; rows checked), keeping the
    original as ``<file>.<number>.bak``; returns the backup's path. Nothing may hold the warehouse: the
    caller checks that first (`pipelines.warehouse.diagnose.warehouse_problem`, as
    `python -m pipelines.warehouse.diagnose convert`)."""
    import duckdb

    path = Path(duckdb_path).absolute()
    number = storage_number(path)
    if number is None:
        raise WarehouseError(f"warehouse {path} does not exist: nothing to convert")
    tmp = path.with_name(path.name + ".convert.tmp")
    backup = path.with_name(f"{path.name}.{number}.bak")
    for stale in (tmp, Path(f"{tmp}.wal")):
        stale.unlink(missing_ok=True)
    con = duckdb.connect()
    try:
        con.execute(f"attach '{sql_path(path)}' as src")
        con.execute("checkpoint src")  # fold the WAL in: the backup must not leave a WAL behind
        con.execute(f"attach '{sql_path(tmp)}' as dst (storage_version '{storage_version}')")
        con.execute("copy from database src to dst")
        before = _row_counts(con, "src")
        after = _row_counts(con, "dst")
        con.execute("detach dst")
        con.execute("detach src")
    finally:
        con.close()
    if before != after:
        tmp.unlink(missing_ok=True)
        raise WarehouseError(f"converting {path}: row counts differ after the copy; the warehouse was left as it was")
    os.replace(path, backup)
    os.replace(tmp, path)
    return backup


def _row_counts(con: object, catalog: str) -> dict[str, int]:
    import duckdb

    assert isinstance(con, duckdb.DuckDBPyConnection)
    tables = con.execute(
        "select schema_name, table_name from duckdb_tables() where database_name = ?", [catalog]
    ).fetchall()
    counts: dict[str, int] = {}
    for schema, table in tables:
        row = con.execute(f'select count(*) from "{catalog}"."{schema}"."{table}"').fetchone()
        counts[f"{schema}.{table}"] = int(row[0]) if row else 0
    return counts
