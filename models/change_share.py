"""Whether `outreach models` should rebuild every mart from every row (dbt's `--full-refresh`) instead of going
incrementally, and why: when the incremental build would rebuild every lead anyway, through its incremental
machinery (the touched leads, an undo record of every row), which costs more than a build from every row.

- After a full sync every raw recipient and reply carries that run's `synced_at`. Past `REBUILD_ABOVE` of them
  re-written since the last good build, the build is from every row: at 10M recipients the incremental build
  after a full sync ran out of DuckDB's memory limit (its data tests scoped to every row).
- After a change of the models or of a var, the last good build's snapshot holds another fingerprint
  (macros/incremental.sql): the incremental build would rebuild every lead; at 10M recipients it took longer
  than a build from every row.
Both builds give the same tables (models/README.md, incremental models; bench/models_full_sync.py).

The count reads the snapshot of the last good build (`reporting_inputs.incremental_marks` and
`incremental_build`) the way the incremental models do: a row is re-written when its `synced_at` is not among
the snapshot's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import duckdb

from pipelines.core.errors import WarehouseError
from pipelines.core.root_cause import one_line
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.duckdb_file import sql_string

log = logging.getLogger(__name__)

#: a share of the raw recipients and replies re-written; past it a build from every row costs no more
REBUILD_ABOVE = 0.1
TABLES = ("campaign_recipients", "replies")  # macros/incremental.sql incremental_marked_tables()
_MARKS = "reporting_inputs.incremental_marks"
_REWRITTEN = (
    "select count(case when synced_at is not null and synced_at not in (select stamp from {marks} "
    "where table_name = '{table}' and column_name = 'synced_at') then 1 end), count(*) from outreach.{table}"
)
OTHER_VERSION = "the last good build was of another version of the models or of other vars"

Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
Columns = set[tuple[str, str, str]]


def why_every_row(target: Warehouse, fingerprint: str) -> str:
    """Why this build (of project fingerprint `fingerprint`, models.build.project_fingerprint) should rebuild every
    mart from every row; "" when it should go incrementally, also when the warehouse could not be read (logged:
    the build then meets the cause itself)."""
    import psycopg2

    try:
        with _query(target) as query:
            found = _columns(query)
            if ("reporting_inputs", "incremental_build", "fingerprint") in found:
                stored = query("select fingerprint from reporting_inputs.incremental_build", [])
                if stored and stored[0][0] != fingerprint:
                    return OTHER_VERSION
            share = _share(query, found)
    except (duckdb.Error, psycopg2.Error, WarehouseError) as exc:
        log.warning("cannot read what changed since the last build: %s", one_line(exc))
        return ""
    if share is None or share <= REBUILD_ABOVE:
        return ""
    rewritten = f"{share:.0%} of the raw recipients and replies were re-written since the last build"
    return f"{rewritten} (a full sync re-writes all)"


@contextmanager
def _query(target: Warehouse) -> Iterator[Query]:
    if target.duckdb_path is not None:
        con = duckdb.connect()
        try:
            con.execute(f"attach '{sql_string(target.duckdb_path)}' as warehouse (read_only)")
            con.execute("use warehouse")
            yield lambda sql, params: con.execute(sql, list(params)).fetchall()
        finally:
            con.close()
        return
    pg = target.connect()
    try:
        with pg, pg.cursor() as cur:

            def query(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                cur.execute(sql.replace("?", "%s"), list(params))
                return list(cur.fetchall())

            yield query
    finally:
        pg.close()


def _columns(query: Query) -> Columns:
    return {
        (schema, table, column)
        for schema, table, column in query(
            "select table_schema, table_name, column_name from information_schema.columns "
            "where table_catalog = current_database() and table_schema in (?, ?)",
            ["outreach", "reporting_inputs"],
        )
    }


def _share(query: Query, found: Columns) -> float | None:
    tables = [table for table in TABLES if ("outreach", table, "id") in found]
    if ("reporting_inputs", "incremental_marks", "stamp") not in found or not tables:
        return None
    rewritten = total = 0
    for table in tables:
        if ("outreach", table, "synced_at") in found:
            ((changed, rows),) = query(_REWRITTEN.format(marks=_MARKS, table=table), [])
        else:  # synced by a version without it: every row counts as re-written, as the models count it
            ((rows,),) = query(f"select count(*) from outreach.{table}", [])
            changed = rows
        rewritten, total = rewritten + int(changed), total + int(rows)
    return rewritten / total if total else None
