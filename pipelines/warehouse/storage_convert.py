"""A warehouse's storage format: the note when a file is in a newer one than configured (`storage_note`), and
its rewrite in an older one, so that older DuckDB releases (most BI tools) can open it (`convert_storage`;
`python -m pipelines.warehouse.diagnose convert PATH` runs it)."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from pipelines.core.constants import DEFAULT_STORAGE_VERSION
from pipelines.core.errors import WarehouseError
from pipelines.warehouse.duckdb_file import STORAGE_NUMBERS, sql_string, storage_number


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
        con.execute(f"attach '{sql_string(path)}' as src")
        con.execute("checkpoint src")  # fold the WAL in: the backup must not leave a WAL behind
        con.execute(f"attach '{sql_string(tmp)}' as dst (storage_version '{storage_version}')")
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


def storage_note(duckdb_path: Path, storage_version: str = DEFAULT_STORAGE_VERSION) -> str | None:
    """One line when an existing file is in a newer storage format than `storage_version` (else None)."""
    path = Path(duckdb_path)
    number = storage_number(path)
    wanted = STORAGE_NUMBERS.get(_major_minor(storage_version))
    if number is None or wanted is None or number <= wanted:
        return None
    made_by = next((v for v, n in sorted(STORAGE_NUMBERS.items()) if n == number), f"number {number}")
    python = shlex.quote(sys.executable or "python")
    command = (
        f"{python} -m pipelines.warehouse.diagnose convert {shlex.quote(str(path))} --storage-version {storage_version}"
    )
    return (
        f"note: warehouse {path} is in DuckDB's {made_by} storage format, which DuckDB releases older than "
        f"{made_by} (most BI tools) cannot open; convert it to {storage_version} with: {command}"
    )


def _major_minor(version: str) -> str:
    parts = version.strip().lstrip("v").split(".")
    return f"v{parts[0]}.{parts[1]}" if len(parts) >= 2 else version
