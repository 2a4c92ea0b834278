"""Opening the warehouse with the settings every build uses (UTC, optional memory limit)."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from models.errors import WarehouseError

DEFAULT_DUCKDB = Path("data/outreach.duckdb")

#: environment variables that tune DuckDB for big warehouses (see models/README.md)
MEMORY_LIMIT_ENV = "OUTREACH_DUCKDB_MEMORY_LIMIT"
THREADS_ENV = "OUTREACH_DUCKDB_THREADS"


def resolve_path(duckdb_path: str | Path | None) -> Path:
    return Path(duckdb_path) if duckdb_path is not None else DEFAULT_DUCKDB


def bi_path_for(duckdb_path: str | Path) -> Path:
    """`<dir>/<stem>_bi.duckdb` beside the warehouse (the DESIGN.md contract)."""
    path = Path(duckdb_path)
    return path.with_name(f"{path.stem}_bi.duckdb")


#: the name the warehouse file is attached under during a build
CATALOG = "warehouse"


def open_warehouse(path: Path, *, read_only: bool = False, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB session with the warehouse attached as `warehouse` and in use.

    Why attach instead of opening the file: DuckDB names a file's catalog after its stem, so in
    the default `data/outreach.duckdb` the name `outreach.campaigns` is ambiguous (catalog or
    schema?) and even fully qualified views fail to bind. Under the alias `warehouse`, the SQL
    files' two-part names (`outreach.x`, `reporting.x`) resolve to the file's schemas.
    Fails with a one-line cause and fix when the file is missing or locked.
    """
    if not path.exists():
        raise WarehouseError(f"warehouse {path} does not exist: run `outreach sync` first (or pass --duckdb PATH)")
    con = duckdb.connect()
    con.execute("set enable_progress_bar = false")
    try:
        con.execute("set TimeZone = 'UTC'")
        con.execute(f"set temp_directory = '{_quote(str(path) + '.tmp')}'")
        limit = memory_limit or os.environ.get(MEMORY_LIMIT_ENV)
        if limit:
            con.execute(f"set memory_limit = '{_safe_setting(limit)}'")
        threads = os.environ.get(THREADS_ENV)
        if threads:
            con.execute(f"set threads = {int(threads)}")
        mode = " (read_only)" if read_only else ""
        con.execute(f"attach '{_quote(str(path))}' as {CATALOG}{mode}")
        con.execute(f"use {CATALOG}")
    except duckdb.IOException as exc:
        con.close()
        raise WarehouseError(
            f"cannot open warehouse {path}: {str(exc).splitlines()[0]} "
            "(another process holds it for writing; retry when the sync finishes)"
        ) from exc
    except duckdb.Error as exc:
        con.close()
        reason = str(exc).splitlines()[0]
        if "already attached" in reason:
            raise WarehouseError(
                f"cannot open warehouse {path}: this process already has it open ({reason}); "
                "close that connection (duckdb.connect) before building the models"
            ) from exc
        raise WarehouseError(f"cannot open warehouse {path}: {reason}") from exc
    except BaseException:
        con.close()
        raise
    return con


def _quote(value: str) -> str:
    return value.replace("'", "''")


def _safe_setting(value: str) -> str:
    if not all(ch.isalnum() or ch in " .%" for ch in value):
        raise WarehouseError(f"bad DuckDB memory limit {value!r}: use e.g. '4GB' in {MEMORY_LIMIT_ENV}")
    return value
