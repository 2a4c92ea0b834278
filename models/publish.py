"""Publish the reporting tables to the BI file: a new file in an old storage format, renamed over the old one.

- Only the mart tables of `reporting` go (never a staging model, which reads raw tables, nor a
  `__next` table of a build in progress), with the table and column comments dbt persisted from the
  yml docs, so a BI tool shows them.
- Timestamps are UTC `TIMESTAMP`s (the warehouse's `TIMESTAMPTZ` converted), their comments saying so.
- The file is written with `ATTACH ... (STORAGE_VERSION ...)` (`[sources.outreach] duckdb_storage_version`,
  default v1.0.0), a format DuckDB 1.1 and later read: BI tools ship older DuckDB releases than ours.
- A BI tool holding the BI file open read-only keeps reading its snapshot: on Linux and macOS
  `os.replace` swaps the directory entry while open handles keep the old inode.
- Leftovers of a publish that was killed (`.<name>.<pid>.tmp` and its `.wal`) are removed by the next one.
- `.<stem>_dbt/bi_published.json` records the build the file was published from (`models/bi_update.py`).
- Where a mart is large (`models/bi_update.py`), a publish starts from a copy of the previous BI file and
  changes only what differs: the result is the same file a publish from nothing writes, table for table.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import duckdb

from models import STAGING_PREFIX, bi_update
from models.errors import PublishError, WarehouseError
from models.settings import bi_path_for, duckdb_state_dir, storage_version
from pipelines.core.root_cause import one_line
from pipelines.warehouse.duckdb_file import sql_string

log = logging.getLogger(__name__)

REPORTING = "reporting"
NEXT_SUFFIX = "__next"
_SOURCE = "warehouse"
_TARGET = "bi_next"
_INSTANT_TYPE = "TIMESTAMP WITH TIME ZONE"  # duckdb_columns().data_type of a TIMESTAMPTZ
#: appended to the comment of every timestamp column of the BI file
UTC_NOTE = "In the BI file: a UTC TIMESTAMP (no time zone)."


def publish_bi(duckdb_path: str | Path) -> tuple[Path, dict[str, int]]:
    """Write `<stem>_bi.duckdb` beside the warehouse from its mart tables; returns the path and rows per table."""
    path = Path(duckdb_path)
    target = bi_path_for(path)
    version = storage_version()
    if target.is_dir():  # checked first: a finished copy could not be renamed over it
        raise PublishError(
            f"the BI file's path {target} is a directory: move it away (the BI file is written there); the "
            "reporting tables are built"
        )
    _remove_leftovers(target)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    started = time.perf_counter()
    con = duckdb.connect()
    try:
        # DuckDB draws a bar on stderr for a query over 2 s (at 10M recipients): over our progress, or in a log
        con.execute("set enable_progress_bar = false")
        try:
            con.execute(f"attach '{sql_string(path)}' as {_SOURCE} (read_only)")
        except duckdb.Error as exc:
            raise WarehouseError(f"cannot read warehouse {path} to publish the BI file: {one_line(exc)}") from exc
        tables = _mart_tables(con)
        if not tables:
            raise WarehouseError(f"no {REPORTING} tables in {path}: run `outreach models` first")
        build_id, previous_build_id = bi_update.build_ids(con, _SOURCE)
        # the previous file is the build before's: the leads this build rebuilt are all that changed since
        record = duckdb_state_dir(path) / bi_update.RECORD
        chained = previous_build_id is not None and bi_update.published_from(record, target) == previous_build_id
        rows = _write(con, tmp, tables, version, previous=target, chained=chained)
    except (duckdb.Error, OSError) as exc:
        _unlink(tmp)
        raise PublishError(
            f"publishing the BI file failed: {one_line(exc)} (the previous BI file is untouched; "
            "check disk space and permissions, then rerun)"
        ) from exc
    except BaseException:
        _unlink(tmp)
        raise
    finally:
        con.close()
    try:
        _fsync(tmp)
        stale_wal = Path(f"{target}.wal")
        if stale_wal.exists():
            # only a read-write opener leaves a WAL; replaying it over the new file would corrupt it
            log.warning("removing %s left by a read-write connection to the BI file (open it read-only)", stale_wal)
            stale_wal.unlink()
        os.replace(tmp, target)
        _fsync(target.parent)
    except OSError as exc:
        _unlink(tmp)
        raise PublishError(
            f"publishing the BI file {target} failed: {type(exc).__name__} ({exc.strerror or 'no detail'}): the "
            "previous BI file is untouched; check the path and its permissions, then rerun"
        ) from exc
    try:
        record.parent.mkdir(exist_ok=True)
        bi_update.record_published(record, target, build_id)
    except OSError as exc:  # the next publish then compares every row: slower, as right
        log.warning("cannot record which build %s is from: %s", target, one_line(exc))
    log.info(
        "published %d tables to %s (storage %s) in %.2fs", len(tables), target, version, time.perf_counter() - started
    )
    return target, rows


def _mart_tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute(
        "select table_name from duckdb_tables() where database_name = ? and schema_name = ? order by table_name",
        [_SOURCE, REPORTING],
    ).fetchall()
    return [name for (name,) in rows if not name.endswith(NEXT_SUFFIX) and not name.startswith(STAGING_PREFIX)]


def _write(
    con: duckdb.DuckDBPyConnection, tmp: Path, tables: list[str], version: str, previous: Path, chained: bool
) -> dict[str, int]:
    large = bi_update.large_tables(con, _SOURCE, REPORTING, tables)
    reused = _attach_copy(con, previous, tmp, version, bool(large))
    rows: dict[str, int] = {}
    try:
        con.execute(f"create schema if not exists {_TARGET}.{REPORTING}")
        for stale in bi_update.stale_tables(con, _TARGET, REPORTING, tables) if reused else []:
            con.execute(f'drop table {_TARGET}.{REPORTING}."{stale}"')
        for table in tables:
            columns = _columns(con, table)
            if not (reused and table in large and _update(con, table, columns, chained)):
                select = ", ".join(f'{expression} as "{name}"' for expression, name, _ in columns)
                con.execute(
                    f'create or replace table {_TARGET}.{REPORTING}."{table}" as select {select} '
                    f'from {_SOURCE}.{REPORTING}."{table}"'
                )
            rows[table] = int(con.execute(f'select count(*) from {_TARGET}.{REPORTING}."{table}"').fetchall()[0][0])
        _copy_comments(con, tables, clear=reused)
        con.execute(f"checkpoint {_TARGET}")
    finally:
        con.execute(f"detach {_TARGET}")
    return rows


def _update(con: duckdb.DuckDBPyConnection, table: str, columns: list[tuple[str, str, str]], chained: bool) -> bool:
    """Bring the copy's `table` up to date (`models/bi_update.py`); False when it must be written whole."""
    rebuilt = bi_update.rebuilt_leads(con, _SOURCE, table) if chained else None
    if rebuilt is not None:
        return bi_update.replace_leads(con, _SOURCE, _TARGET, REPORTING, table, columns, rebuilt)
    return bi_update.update_table(con, _SOURCE, _TARGET, REPORTING, table, columns)


def _attach_copy(con: duckdb.DuckDBPyConnection, previous: Path, tmp: Path, version: str, large: bool) -> bool:
    """Attach `tmp` as the file to write: a copy of the previous BI file where it can be reused (True), else a new
    file (`models/bi_update.py` says when)."""
    if large and previous.is_file() and not Path(f"{previous}.wal").exists():
        shutil.copyfile(previous, tmp)
        try:
            con.execute(f"attach '{sql_string(tmp)}' as {_TARGET} (storage_version '{version}')")
        except duckdb.Error as exc:  # e.g. a file of a later storage version, which DuckDB will not lower
            log.info("writing the BI file anew: the previous one cannot be reused (%s)", one_line(exc))
        else:
            if bi_update.reusable(con, _TARGET):
                return True
            log.info("writing the BI file anew: the previous one has many free blocks")
            con.execute(f"detach {_TARGET}")
        _unlink(tmp)
    con.execute(f"attach '{sql_string(tmp)}' as {_TARGET} (storage_version '{version}')")
    return False


def _columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str, str]]:
    """(expression over the warehouse's row, name, type in the BI file) of every column, a TIMESTAMPTZ one as a
    plain TIMESTAMP holding UTC: SQLAlchemy tools (Superset) read a TIMESTAMPTZ as naive and bucket it in the
    server's time zone; a UTC TIMESTAMP means the same everywhere."""
    columns = con.execute(
        "select column_name, data_type from duckdb_columns() where database_name = ? and schema_name = ? "
        "and table_name = ? order by column_index",
        [_SOURCE, REPORTING, table],
    ).fetchall()
    return [
        (f"timezone('UTC', \"{name}\")", name, "TIMESTAMP")
        if data_type == _INSTANT_TYPE
        else (f'"{name}"', name, data_type)
        for name, data_type in columns
    ]


def _copy_comments(con: duckdb.DuckDBPyConnection, tables: list[str], clear: bool) -> None:
    """The table and column docs dbt persisted in the warehouse (persist_docs), onto the BI file's tables; with
    `clear`, the copy's own comments are removed first (a doc removed since the previous publish)."""
    if clear:
        statements = [f'comment on table {_TARGET}.{REPORTING}."{table}" is null' for table in tables]
        for table, column in con.execute(
            "select table_name, column_name from duckdb_columns() where database_name = ? and schema_name = ? "
            "and comment is not null",
            [_TARGET, REPORTING],
        ).fetchall():
            statements.append(f'comment on column {_TARGET}.{REPORTING}."{table}"."{column}" is null')
        con.execute(";\n".join(statements))
    for table, comment in con.execute(
        "select table_name, comment from duckdb_tables() where database_name = ? and schema_name = ? "
        "and comment is not null",
        [_SOURCE, REPORTING],
    ).fetchall():
        if table in tables:
            con.execute(f"comment on table {_TARGET}.{REPORTING}.\"{table}\" is '{sql_string(comment)}'")
    statements = []
    for table, column, comment, data_type in con.execute(
        "select table_name, column_name, comment, data_type from duckdb_columns() where database_name = ? "
        "and schema_name = ? and comment is not null",
        [_SOURCE, REPORTING],
    ).fetchall():
        if table in tables:
            if data_type == _INSTANT_TYPE:
                comment = f"{comment.rstrip()} {UTC_NOTE}"
            statements.append(
                f'comment on column {_TARGET}.{REPORTING}."{table}"."{column}" is \'{sql_string(comment)}\''
            )
    if statements:  # one call for every column, not a call (and a parse) each
        con.execute(";\n".join(statements))


def _remove_leftovers(target: Path) -> None:
    """Temporary files of a publish that was killed (any pid) and their WALs: writers are serialised."""
    for leftover in sorted(target.parent.glob(f".{target.name}.*.tmp*")):
        if not leftover.is_file():
            continue
        log.warning("removing %s left by an interrupted BI publish", leftover)
        _unlink(leftover)


def _unlink(path: Path) -> None:
    """Remove a temporary file and its WAL (never a directory: that is not ours)."""
    for candidate in (path, Path(f"{path}.wal")):
        if candidate.is_file():
            candidate.unlink(missing_ok=True)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
