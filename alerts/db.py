"""One connection to the warehouse for the rules, the incident store and the guard's audit.

A DuckDB warehouse is attached under the alias `warehouse`, the name dbt's profile gives it, so the staging
views of `reporting` (which dbt wrote against that alias) bind. Queries use `?` placeholders.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from pipelines.core.errors import WarehouseError
from pipelines.warehouse.destination import Warehouse


class Db:
    """A DuckDB connection over the warehouse file (the only warehouse the rules' SQL is written for)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, label: str) -> None:
        self.con = con
        self.label = label
        self._tables: set[tuple[str, str]] | None = None

    def has(self, schema: str, table: str) -> bool:
        if self._tables is None:
            rows = self.con.execute(
                "select schema_name, table_name from duckdb_tables() where database_name = 'warehouse' "
                "union all select schema_name, view_name from duckdb_views() where database_name = 'warehouse'"
            ).fetchall()
            self._tables = {(str(a), str(b)) for a, b in rows}
        return (schema, table) in self._tables

    def columns(self, schema: str, table: str) -> set[str]:
        rows = self.con.execute(
            "select column_name from duckdb_columns() where database_name = 'warehouse' and schema_name = ? "
            "and table_name = ?",
            [schema, table],
        ).fetchall()
        return {str(r[0]) for r in rows}

    def forget_tables(self) -> None:
        self._tables = None

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.con.execute(sql, list(params)).fetchall()

    def dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self.con.execute(sql, list(params))
        names = [d[0] for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.con.execute(sql, list(params)).fetchone()
        return None if row is None else row[0]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self.con.execute(sql, list(params))


@contextmanager
def connect(warehouse: Warehouse) -> Iterator[Db]:
    """The warehouse, opened for reading and writing; WarehouseError naming the fix when it cannot be."""
    if warehouse.duckdb_path is None:
        raise WarehouseError(f"alerts run on a DuckDB warehouse; {warehouse.label} is not one yet (see README, Alerts)")
    path = Path(warehouse.duckdb_path)
    if not path.exists():
        raise WarehouseError(f"no warehouse at {path}: run `outreach sync` and `outreach models` first")
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        escaped = str(path).replace("'", "''")
        con.execute(f"attach '{escaped}' as warehouse")
        con.execute("use warehouse")
    except duckdb.Error as exc:
        con.close()
        raise WarehouseError(f"cannot open warehouse {path} for alerts: {str(exc).splitlines()[0]}") from exc
    try:
        yield Db(con, str(path))
    finally:
        con.close()
