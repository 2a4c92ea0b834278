"""How much of the raw rows the syncs re-wrote since the last good build, and whether the build should then
rebuild every mart from every row (dbt's `--full-refresh`) instead of going incrementally.

After a full sync every raw recipient and reply carries that run's `synced_at`: an incremental build would
rebuild every lead through its incremental machinery (the touched leads, an undo record of every row, data tests
scoped to every row), which costs at least what a build from every row does and, at 10M recipients, ran out of
DuckDB's memory limit (models/README.md, incremental models; bench/models_full_sync.py). Both builds give the
same tables; past `REBUILD_ABOVE` of the rows re-written, `outreach models` builds from every row.

The count reads the snapshot of the last good build (`reporting_inputs.incremental_marks`, macros/incremental.sql)
the way the incremental models do: a row is re-written when its `synced_at` is not among the snapshot's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import duckdb

from pipelines.core.root_cause import one_line
from pipelines.warehouse.destination import Warehouse

log = logging.getLogger(__name__)

#: a share of the raw recipients and replies re-written; past it a build from every row costs no more
REBUILD_ABOVE = 0.1
TABLES = ("campaign_recipients", "replies")  # macros/incremental.sql incremental_marked_tables()
_MARKS = "reporting_inputs.incremental_marks"
_REWRITTEN = (
    "select count(case when synced_at is not null and synced_at not in (select stamp from {marks} "
    "where table_name = '{table}' and column_name = 'synced_at') then 1 end), count(*) from outreach.{table}"
)

Query = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]


def rewritten_share(target: Warehouse) -> float | None:
    """The share of raw recipients and replies re-written since the last good build; None when there is no
    snapshot to compare with (the incremental build then rebuilds every lead anyway), no such table, or the count
    failed (logged: the build then goes incrementally, as it would have, and meets the cause itself)."""
    import psycopg2

    try:
        return _count(target)
    except (duckdb.Error, psycopg2.Error) as exc:
        log.warning("cannot count the raw rows re-written since the last build: %s", one_line(exc))
        return None


def _count(target: Warehouse) -> float | None:
    if target.duckdb_path is not None:
        con = duckdb.connect()
        try:
            con.execute(f"attach '{str(target.duckdb_path).replace(chr(39), chr(39) * 2)}' as warehouse (read_only)")
            con.execute("use warehouse")
            return _share(lambda sql, params: con.execute(sql, list(params)).fetchall())
        finally:
            con.close()
    pg = target.connect()
    try:
        with pg, pg.cursor() as cur:

            def query(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
                cur.execute(sql.replace("?", "%s"), list(params))
                return list(cur.fetchall())

            return _share(query)
    finally:
        pg.close()


def _share(query: Query) -> float | None:
    found = {
        (schema, table, column)
        for schema, table, column in query(
            "select table_schema, table_name, column_name from information_schema.columns "
            "where table_catalog = current_database() and table_schema in (?, ?)",
            ["outreach", "reporting_inputs"],
        )
    }
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
