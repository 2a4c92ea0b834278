"""Checks before dbt runs, so a wrong warehouse fails in one line naming the cause and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from models.ab_store import SCHEMA as STATE
from models.errors import WarehouseError
from models.publish import REPORTING
from models.settings import PostgresTarget, postgres_target
from pipelines.core.root_cause import one_line
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.duckdb_file import given_path_problem, is_duckdb_file, sql_string

RAW = "outreach"
#: the schemas a build writes: dbt's (profiles.yml) and the builds' own state (macros/incremental.sql)
WRITTEN = (REPORTING, STATE)


def check_warehouse(target: Warehouse) -> None:
    """Raise WarehouseError unless the warehouse exists, holds raw `outreach` tables and can be opened."""
    if target.duckdb_path is not None:
        check_duckdb(target.duckdb_path)
    elif target.is_postgres:
        check_postgres(postgres_target(target))


def check_duckdb_path(path: Path) -> None:
    """What can be told of the DuckDB warehouse without opening it: before its lock file is made beside it."""
    if not path.exists():
        raise WarehouseError(f"warehouse {path} does not exist: run `outreach sync` first (or pass --duckdb PATH)")
    if path.is_dir():
        raise WarehouseError(f"warehouse {path} is a directory: pass the DuckDB file (--duckdb PATH)")
    problem = given_path_problem(path)
    if problem:
        raise WarehouseError(problem)
    if not is_duckdb_file(path):
        raise WarehouseError(
            f"{path} is not a DuckDB database file: pass the warehouse the sync writes (--duckdb PATH), "
            "or move this file away and run `outreach sync`"
        )


def check_duckdb(path: Path) -> None:
    check_duckdb_path(path)
    con = duckdb.connect()
    try:
        try:
            con.execute(f"attach '{sql_string(path)}' as warehouse (read_only)")
        except duckdb.IOException as exc:
            from pipelines.warehouse.diagnose import damage_problem
            from pipelines.warehouse.duckdb_file import lock_holder

            if lock_holder(path) is None:  # nobody holds it: the file itself cannot be read
                line = damage_problem(path) or f"cannot open warehouse {path}: {one_line(exc)}"
                raise WarehouseError(line) from exc
            raise WarehouseError(
                f"cannot open warehouse {path}: another process holds it for writing (DuckDB: {one_line(exc)}); "
                "retry when that sync or build finishes"
            ) from exc
        except duckdb.Error as exc:
            raise WarehouseError(
                f"cannot open warehouse {path}: {one_line(exc)} (close other connections to it in this process)"
            ) from exc
        count = con.execute(
            "select count(*) from duckdb_tables() where database_name = 'warehouse' and schema_name = ?", [RAW]
        ).fetchall()[0][0]
    finally:
        con.close()
    if not count:
        raise WarehouseError(f"warehouse {path} has no `{RAW}` tables: run `outreach sync` first")


def check_postgres(pg: PostgresTarget) -> None:
    con = pg.connect()
    try:
        with con.cursor() as cur:
            cur.execute("select count(*) from information_schema.tables where table_schema = %s", [RAW])
            row = cur.fetchone()
            if not row or not row[0]:
                raise WarehouseError(
                    f"PostgreSQL {pg.label} has no `{RAW}` tables: run `outreach sync --destination postgres` first"
                )
            _check_privileges(cur, pg)
    finally:
        con.close()


def _check_privileges(cur: Any, pg: PostgresTarget) -> None:
    """The build's user may create in the schemas it writes, or create them: else every model failed on its own,
    each in dbt's words ("permission denied for schema reporting"), with no fix."""
    cur.execute(
        # each privilege on its own: has_schema_privilege of a list holds when any one of them is held
        "select n.nspname, pg_get_userbyid(n.nspowner), "
        "has_schema_privilege(n.oid, 'USAGE') and has_schema_privilege(n.oid, 'CREATE') "
        "from pg_namespace as n where n.nspname = any(%s)",
        [list(WRITTEN)],
    )
    found = {name: (owner, allowed) for name, owner, allowed in cur.fetchall()}
    cur.execute("select current_user, current_database(), has_database_privilege(current_database(), 'CREATE')")
    user, database, creates = cur.fetchone()
    for name in WRITTEN:
        if name in found and not found[name][1]:
            raise WarehouseError(
                f"PostgreSQL {pg.label}: the user {user} may not create tables in schema {name} (its owner is "
                f"{found[name][0]}): grant it (`GRANT USAGE, CREATE ON SCHEMA {name} TO {user}`), or connect as "
                "a user who may (DESTINATION__POSTGRES__CREDENTIALS)"
            )
        if name not in found and not creates:
            raise WarehouseError(
                f"PostgreSQL {pg.label}: the user {user} may not create schema {name}, which the build writes: grant "
                f"it (`GRANT CREATE ON DATABASE {database} TO {user}`), or connect as a user who may "
                "(DESTINATION__POSTGRES__CREDENTIALS)"
            )
