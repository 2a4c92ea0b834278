"""Publish the reporting tables to the BI file by writing a new file and renaming it over the old one.

A BI tool holding the BI file open (read-only) keeps reading its snapshot: on Linux and
macOS `os.replace` swaps the directory entry while open handles keep the old inode, and
the next connection opens the new file. The warehouse's write lock is never involved.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import duckdb

from models.connect import bi_path_for, open_warehouse, resolve_path
from models.errors import WarehouseError
from models.docs import load_docs
from models.graph import REPORTING

log = logging.getLogger(__name__)
_ALIAS = "bi_next"


def publish_bi(duckdb_path: str | Path | None = None, *, con: duckdb.DuckDBPyConnection | None = None) -> Path:
    """Copy every reporting table (marts; not the staging views) to `<stem>_bi.duckdb`, atomically.

    Table and column comments come from models/README.md, so a BI tool shows the docs.
    """
    path = resolve_path(duckdb_path)
    target = bi_path_for(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    for leftover in (tmp, Path(f"{tmp}.wal")):
        leftover.unlink(missing_ok=True)
    own = con is None
    connection = open_warehouse(path, read_only=True) if con is None else con
    try:
        source = connection.execute("select current_database()").fetchall()[0][0]
        tables = [
            row[0]
            for row in connection.execute(
                "select table_name from information_schema.tables where table_schema = ? "
                "and table_type = 'BASE TABLE' and table_catalog = ? order by table_name",
                [REPORTING, source],
            ).fetchall()
        ]
        if not tables:
            raise WarehouseError(f"no {REPORTING} tables in {path}: run `outreach models` first")
        connection.execute(f"attach '{_quote(tmp)}' as {_ALIAS}")
        try:
            connection.execute(f"create schema {_ALIAS}.{REPORTING}")
            for table in tables:
                connection.execute(
                    f'create table {_ALIAS}.{REPORTING}.{table} as select * from "{source}".{REPORTING}.{table}'
                )
            _comment(connection, tables)
            connection.execute(f"checkpoint {_ALIAS}")
        finally:
            connection.execute(f"detach {_ALIAS}")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        if own:
            connection.close()
    _fsync(tmp)
    stale_wal = Path(f"{target}.wal")
    if stale_wal.exists():
        # Only a read-write opener leaves a WAL; replaying it over the new file would corrupt it.
        log.warning("removing %s left by a read-write connection to the BI file (open it read-only)", stale_wal)
        stale_wal.unlink()
    os.replace(tmp, target)
    _fsync(target.parent)
    log.info("published %d tables to %s", len(tables), target)
    return target


def _comment(con: duckdb.DuckDBPyConnection, tables: list[str]) -> None:
    docs = load_docs()
    for table in tables:
        doc = docs.get(table)
        if doc is None:
            continue
        con.execute(f"comment on table {_ALIAS}.{REPORTING}.{table} is '{_quote(doc.grain)}'")
        for column, meaning in doc.columns.items():
            con.execute(
                f'comment on column {_ALIAS}.{REPORTING}.{table}."{column}" is \'{_quote(meaning)}\''
            )


def _quote(value: object) -> str:
    return str(value).replace("'", "''")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
