"""One connection to the warehouse for the rules, the incident store and the guard's audit: DuckDB or
PostgreSQL, behind one small interface.

Every statement is written once, in SQL both engines run; the few differences live here, in `Dialect`
(column types of the tables alerts create, and unnesting a JSON array). Statements use `?` placeholders on
both. A DuckDB warehouse is attached under the alias `warehouse`, the name dbt's profile gives it, so the
staging views of `reporting` (which dbt wrote against that alias) bind. Both run in autocommit on UTC: a row
is saved the moment its statement returns, which the notification outbox relies on.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from models.preflight import check_duckdb_path
from pipelines.core.errors import WarehouseError
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.diagnose import explain
from pipelines.warehouse.duckdb_file import sql_string


@dataclass(frozen=True)
class Dialect:
    """What differs between the engines, and nothing else."""

    name: str
    double: str  # the type of a float column
    timestamp: str  # the type of the incident table's timestamps (UTC)
    json_array_text: str  # set-returning: each element of the JSON array `{expr}` as text
    temp_schema: str  # where temporary tables live: a name there never means a table of the warehouse

    def unnest_json_text(self, expr: str) -> str:
        return self.json_array_text.format(expr=expr)


# DuckDB keeps the incident table's `timestamp` columns it always had (UTC, naive), so an existing table
# and the BI file's copy of it keep their types
DUCKDB = Dialect("duckdb", "double", "timestamp", "unnest(from_json({expr}, '[\"VARCHAR\"]'))", "temp")
POSTGRES = Dialect(
    "postgres", "double precision", "timestamptz", "jsonb_array_elements_text(({expr})::jsonb)", "pg_temp"
)


class Db:
    """A connection to the warehouse in autocommit: DuckDB's or psycopg2's."""

    def __init__(self, con: Any, label: str, dialect: Dialect = DUCKDB) -> None:
        self.con = con
        self.label = label
        self.dialect = dialect
        self._tables: set[tuple[str, str]] | None = None

    def has(self, schema: str, table: str) -> bool:
        if self._tables is None:
            rows = self.rows(
                "select table_schema, table_name from information_schema.tables "
                "where table_catalog = current_database()"
            )
            self._tables = {(str(a), str(b)) for a, b in rows}
        return (schema, table) in self._tables

    def columns(self, schema: str, table: str) -> set[str]:
        rows = self.rows(
            "select column_name from information_schema.columns where table_catalog = current_database() "
            "and table_schema = ? and table_name = ?",
            [schema, table],
        )
        return {str(r[0]) for r in rows}

    def forget_tables(self) -> None:
        self._tables = None

    def _run(self, sql: str, params: Sequence[Any]) -> Any:
        if self.dialect is DUCKDB:
            return self.con.execute(sql, list(params))
        cursor = self.con.cursor()
        # psycopg2 takes %s and reads a literal % as the start of one
        cursor.execute(sql.replace("%", "%%").replace("?", "%s"), list(params))
        return cursor

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self._run(sql, params).fetchall()]

    def dicts(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        cursor = self._run(sql, params)
        names = [d[0] for d in cursor.description or []]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self._run(sql, params).fetchone()
        return None if row is None else row[0]

    def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._run(sql, params)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The block's statements commit together, or none of them does."""
        self.execute("begin")
        try:
            yield
        except BaseException:
            self.execute("rollback")
            raise
        self.execute("commit")

    def load_temp(self, name: str, columns: Sequence[tuple[str, str]], rows: Sequence[Sequence[Any]]) -> str:
        """A temporary table `name` (columns: name and SQL type) holding `rows`, loaded in one statement (DuckDB pays
        milliseconds per statement: thousands of inserts cost seconds); returns its qualified name."""
        name = f"{self.dialect.temp_schema}.{name}"
        self.execute(f"create temporary table {name} ({', '.join(f'{c} {t}' for c, t in columns)})")
        if not rows:
            return name
        if self.dialect is DUCKDB:
            import pyarrow as pa

            self.con.register("_loaded", pa.table({c: [row[i] for row in rows] for i, (c, _) in enumerate(columns)}))
            try:
                self.con.execute(f"insert into {name} select * from _loaded")
            finally:
                self.con.unregister("_loaded")
        else:
            from psycopg2.extras import execute_values

            with self.con.cursor() as cursor:
                execute_values(cursor, f"insert into {name} values %s", [tuple(row) for row in rows])
        return name


@contextmanager
def connect(warehouse: Warehouse) -> Iterator[Db]:
    """The warehouse, opened for reading and writing; WarehouseError naming the fix when it cannot be."""
    if warehouse.is_postgres:
        with _postgres(warehouse) as db:
            yield db
        return
    if warehouse.duckdb_path is None:
        raise WarehouseError(
            f"alerts run on a DuckDB or PostgreSQL warehouse; {warehouse.label} is neither (see README, Alerts)"
        )
    path = Path(warehouse.duckdb_path)
    check_duckdb_path(path)  # DuckDB would attach a CSV file too, as a table of its rows
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        con.execute(f"attach '{sql_string(path)}' as warehouse")
        con.execute("use warehouse")
    except duckdb.Error as exc:
        con.close()
        raise WarehouseError(f"cannot open warehouse {path} for alerts: {explain(exc, path)}") from exc
    try:
        yield Db(con, str(path))
    finally:
        con.close()


@contextmanager
def _postgres(warehouse: Warehouse) -> Iterator[Db]:
    con = warehouse.connect()  # a WarehouseError naming the fix when the server cannot be reached
    try:
        con.autocommit = True
        with con.cursor() as cursor:
            cursor.execute("set time zone 'UTC'")
        yield Db(con, warehouse.label, POSTGRES)
    finally:
        con.close()
