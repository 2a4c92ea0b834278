"""`outreach status`: is the data fresh, and did the last runs work? Read from the warehouse alone (no API
request): our run records (``sync_runs``), the per-workspace state (``sync_state``), dlt's load table
(``_dlt_loads``: only committed loads count) and the replies still waiting for a body.

`read_status` returns a `WarehouseStatus`; `pipelines.commands.status_output` shows it (`render`: the rich table,
`as_json`: the dict for scripts).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pipelines.core.errors import WarehouseError
from pipelines.source.state import STATE_TABLE
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.duckdb_file import given_path_problem, sql_string
from pipelines.warehouse.lock import current_holder
from pipelines.warehouse.runs import RUNS_TABLE

log = logging.getLogger(__name__)

DEFAULT_RUNS = 5


@dataclass
class RunInfo:
    run_id: str
    mode: str
    started_at: datetime | None
    ended_at: datetime | None
    outcome: str
    rows_loaded: dict[str, int]
    requests: int
    error: str | None


@dataclass
class WorkspaceStatus:
    workspace_id: str | None
    workspace_name: str
    runs: list[RunInfo] = field(default_factory=list)  # newest first
    newest_reply: datetime | None = None
    last_full_at: datetime | None = None
    last_quick_at: datetime | None = None
    deferred_bodies: int = 0
    last_error: str | None = None


@dataclass
class WarehouseStatus:
    warehouse: str
    synced: bool
    note: str = ""  # why there is nothing to show (never synced, a sync holds the file)
    workspaces: list[WorkspaceStatus] = field(default_factory=list)
    #: the last model build's `dbt source freshness` (models.freshness_outcome.FreshnessReport.to_dict()); None when
    #: no build recorded one. Plain JSON, so pipelines need not import models; the command line fills it.
    source_freshness: dict[str, Any] | None = None
    #: spool files kept apart because some of their lines are no spool record (pipelines.events.spool_reader);
    #: they wait for someone to mend them, so status says they are there. The command line fills it.
    rejected_spool_files: list[str] = field(default_factory=list)


def read_status(warehouse: Warehouse, runs: int = DEFAULT_RUNS) -> WarehouseStatus:
    """The status of every workspace the warehouse has run records or state for."""
    if not (warehouse.is_duckdb or warehouse.is_postgres):  # another dlt destination: the sync loads it, no reader here
        raise WarehouseError(f"status reads a DuckDB or PostgreSQL warehouse; {warehouse.label} is neither")
    path = warehouse.duckdb_path
    problem = given_path_problem(path) if path is not None else None
    if problem:
        raise WarehouseError(problem)
    if warehouse.duckdb_path is not None and not warehouse.duckdb_path.exists():
        return WarehouseStatus(
            warehouse.label, False, f"{warehouse.label} does not exist: nothing synced yet (run `outreach sync`)"
        )
    running = current_holder(warehouse) if warehouse.duckdb_path is not None else None
    note = (
        f"a {running.what} is running since {running.started_at} (process {running.pid}): shown is what was "
        "committed up to its last checkpoint"
        if running is not None
        else ""
    )
    try:
        with _connect(warehouse) as cursor:
            tables = _tables(cursor, warehouse)
            if RUNS_TABLE not in tables and STATE_TABLE not in tables:
                return WarehouseStatus(
                    warehouse.label, False, note or f"{warehouse.label} holds no sync yet (run `outreach sync`)"
                )
            return WarehouseStatus(warehouse.label, True, note, workspaces=_workspaces(cursor, tables, runs))
    except _Busy as busy:
        return WarehouseStatus(warehouse.label, False, str(busy))


class _Busy(Exception):
    """The DuckDB file is open for writing by a sync: it cannot be read until that ends."""


@contextmanager
def _connect(warehouse: Warehouse) -> Iterator[Any]:
    """A DB-API cursor on the warehouse, read-only where the database allows it."""
    if warehouse.duckdb_path is not None:
        import duckdb

        con = duckdb.connect()
        try:
            con.execute("set TimeZone = 'UTC'")
            # while a sync holds the warehouse, read a copy: a reader of the file itself would make the sync's next
            # open for writing fail (DuckDB lets no writer in beside a reader of another process)
            holder = current_holder(warehouse)
            if holder is None:
                try:
                    con.execute(f"attach '{sql_string(warehouse.duckdb_path)}' as wh (read_only)")
                except duckdb.Error:
                    holder = current_holder(warehouse)
                    if holder is None:  # nobody holds it: the file itself is the problem; say which
                        from pipelines.warehouse.diagnose import damage_problem, warehouse_problem

                        path = warehouse.duckdb_path
                        problem = warehouse_problem(path) or damage_problem(path)
                        raise WarehouseError(problem or f"{warehouse.label} cannot be opened by DuckDB") from None
            if holder is not None:
                with _committed_copy(warehouse.duckdb_path) as copy:
                    try:
                        con.execute(f"attach '{sql_string(copy)}' as wh (read_only)")
                    except duckdb.Error:  # copied while a checkpoint wrote it: try again in a moment
                        raise _Busy(
                            f"{warehouse.label} is open for writing by {holder.line()}: its status can be read "
                            "once that ends"
                        ) from None
                    con.execute("use wh")
                    yield con
                    return
            con.execute("use wh")
            yield con
        finally:
            con.close()
        return
    conn = warehouse.connect()
    try:
        conn.set_session(readonly=True, autocommit=True)
        with conn.cursor() as cursor:
            yield cursor
    finally:
        conn.close()


@contextmanager
def _committed_copy(path: Path) -> Iterator[Path]:
    """A copy of the warehouse's main file while a sync holds it (DuckDB lets no other process open it):
    the main file holds what was committed up to the last checkpoint (newer commits wait in the WAL)."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="outreach-status-") as folder:
        copy = Path(folder) / path.name
        shutil.copyfile(path, copy)
        yield copy


def _fetch(cursor: Any, sql: str) -> list[tuple[Any, ...]]:
    cursor.execute(sql)
    return [tuple(row) for row in cursor.fetchall()]


def _tables(cursor: Any, warehouse: Warehouse) -> set[str]:
    catalog = " and table_catalog = current_database()" if warehouse.is_duckdb else ""
    rows = _fetch(cursor, f"select table_name from information_schema.tables where table_schema = 'outreach'{catalog}")
    return {str(r[0]) for r in rows}


def _workspaces(cursor: Any, tables: set[str], runs: int) -> list[WorkspaceStatus]:
    found: dict[str, WorkspaceStatus] = {}

    def entry(workspace_id: str | None, name: str) -> WorkspaceStatus:
        key = workspace_id or f"? {name}"
        if key not in found:
            found[key] = WorkspaceStatus(workspace_id=workspace_id, workspace_name=name)
        elif name and not found[key].workspace_name:
            found[key].workspace_name = name
        return found[key]

    if RUNS_TABLE in tables:
        # one line per run and workspace: a run whose load failed has a `failed` record and, once a later
        # run loaded its package, its own `ok` record too: the run failed when it ran, so `failed` wins
        rows = _fetch(
            cursor,
            f"""
            with records as (
                select coalesce(r.workspace_id, r.workspace_name) as ws_key, r.run_id,
                       max(r.workspace_id) as workspace_id, max(r.workspace_name) as workspace_name,
                       max(r.mode) as mode, min(r.started_at) as started_at,
                       max(coalesce(l.inserted_at, r.ended_at)) as ended_at, min(r.outcome) as outcome,
                       max(cast(r.rows_loaded as varchar)) as rows_loaded, max(r.requests) as requests,
                       max(r.error) as error
                from outreach.{RUNS_TABLE} r
                join outreach._dlt_loads l on l.load_id = r._dlt_load_id and l.status = 0
                group by coalesce(r.workspace_id, r.workspace_name), r.run_id
            )
            select workspace_id, workspace_name, run_id, mode, started_at, ended_at, outcome, rows_loaded, requests,
                   error
            from (
                select *, row_number() over (partition by ws_key order by started_at desc, run_id desc) as rn
                from records
            ) as recent
            where rn <= {int(runs)}
            order by workspace_name, started_at desc
            """,
        )
        for ws, name, run_id, mode, started, ended, outcome, rows_loaded, requests, error in rows:
            item = entry(ws, str(name or ""))
            item.runs.append(
                RunInfo(
                    str(run_id),
                    str(mode),
                    started,
                    ended,
                    str(outcome),
                    _counts(rows_loaded),
                    int(requests or 0),
                    error,
                )
            )
        errors = _fetch(
            cursor,
            f"""
            select coalesce(r.workspace_id, r.workspace_name), r.error from outreach.{RUNS_TABLE} r
            join outreach._dlt_loads l on l.load_id = r._dlt_load_id and l.status = 0
            where r.outcome in ('failed', 'rejected')
              and r.started_at = (
                  select max(x.started_at) from outreach.{RUNS_TABLE} x
                  where x.outcome in ('failed', 'rejected')
                    and coalesce(x.workspace_id, x.workspace_name) = coalesce(r.workspace_id, r.workspace_name)
              )
            """,
        )
        last_errors = {str(k): e for k, e in errors}
        for item in found.values():
            item.last_error = last_errors.get(item.workspace_id or item.workspace_name)
    if STATE_TABLE in tables:
        for ws, name, cursor_at, last_full, last_quick in _fetch(
            cursor,
            f"select s.workspace_id, s.workspace_name, s.reply_cursor, s.last_full_at, s.last_quick_at "
            f"from outreach.{STATE_TABLE} s join outreach._dlt_loads l on l.load_id = s._dlt_load_id and l.status = 0",
        ):
            item = entry(str(ws), str(name or ""))
            item.newest_reply, item.last_full_at, item.last_quick_at = cursor_at, last_full, last_quick
    if "replies" in tables:
        for ws, count in _fetch(
            cursor,
            "select workspace_id, count(*) from outreach.replies where body is null and deleted_at is null "
            "group by workspace_id",
        ):
            if str(ws) in found:
                found[str(ws)].deferred_bodies = int(count)
    return sorted(found.values(), key=lambda w: (w.workspace_id is None, w.workspace_name, w.workspace_id or ""))


def _counts(value: Any) -> dict[str, int]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}


def rejected_spool_files(spool: Path) -> list[str]:
    """The files of `spool`'s ``rejected/`` folder (none when there is no such folder)."""
    from pipelines.events.spool_files import PREFIX, REJECTED_DIR

    return sorted(str(path) for path in (spool / REJECTED_DIR).glob(f"{PREFIX}*"))
