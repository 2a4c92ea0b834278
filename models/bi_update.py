"""Bring a copy of the previous BI file up to date, instead of writing every mart into a new file.

Writing a table into a file of an old storage format is most of what a publish costs at scale (compression and
writes), while an incremental build rewrites about 1% of the per-lead marts' rows (the figures: bench/RESULTS.md,
the incremental models' section). So `models.publish` copies the previous BI file, if it can be reused, and in
the copy:
- a mart table of fewer than `WHOLE_BELOW` rows, a new one, or one whose columns changed is written whole;
- a larger one is changed row by row: the copy's rows whose content the warehouse no longer holds are deleted,
  and the warehouse's rows the copy lacks are inserted. A row's content is two 64-bit hashes of all its columns
  as the BI file holds them. Exact when the warehouse's rows are distinct, which is checked (their first hashes
  are: otherwise the table is written whole), and the copy must then hold as many rows as the warehouse;
- a table the warehouse no longer has is dropped.

After an incremental build, a large mart whose rows the build replaced lead by lead (`lead_engagement`,
`lead_timeline`) is brought up to date without comparing its rows, when the previous BI file was published from
the build before (macros/incremental_rebuilt.sql): its rows of the leads the build rebuilt are deleted and the
warehouse's rows of those leads inserted, as the build did in the warehouse. Which build a BI file was published
from is recorded in the warehouse's state directory (`.<stem>_dbt/bi_published.json`, with the file's size,
modification time and inode, so a file replaced or changed since has its rows compared).

The previous file is reused only when a mart has at least `WHOLE_BELOW` rows (below, a new file is as quick and
holds no free blocks), and when it is a plain file without a WAL (a read-write opener's changes, which the copy
would lose), opens in the configured storage version (DuckDB raises an older file's version and refuses to lower
a later one's, which is then written anew) and has few free blocks (else it is written anew, which compacts it).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import duckdb

log = logging.getLogger(__name__)

#: a mart with fewer rows than this is written whole: a diff would cost more than the copy
WHOLE_BELOW = 100_000
#: in the warehouse's state directory (models.settings.duckdb_state_dir): the build the BI file is from
RECORD = "bi_published.json"
INPUTS = "reporting_inputs"  # the warehouse's schema of the builds' own state (macros/incremental.sql)
#: a reused copy may hold at most this share of free blocks (of its used ones) before it is written anew
MAX_FREE_SHARE = 0.25


def large_tables(con: duckdb.DuckDBPyConnection, source_db: str, schema: str, tables: list[str]) -> set[str]:
    """The marts large enough to be changed row by row. With none, every table is written whole, and a new file
    is smaller than a copy holding the old tables' free blocks."""
    sizes = con.execute(
        "select table_name, estimated_size from duckdb_tables() where database_name = ? and schema_name = ?",
        [source_db, schema],
    ).fetchall()
    return {name for name, size in sizes if name in tables and size >= WHOLE_BELOW}


def reusable(con: duckdb.DuckDBPyConnection, alias: str) -> bool:
    """Whether the attached copy `alias` has little enough free space to be brought up to date."""
    row = con.execute(
        "select used_blocks, free_blocks from pragma_database_size() where database_name = ?", [alias]
    ).fetchone()
    return row is not None and row[1] <= MAX_FREE_SHARE * row[0]


def stale_tables(con: duckdb.DuckDBPyConnection, alias: str, schema: str, tables: list[str]) -> list[str]:
    """The copy's tables in `schema` that are not among the marts to publish."""
    rows = con.execute(
        "select table_name from duckdb_tables() where database_name = ? and schema_name = ?", [alias, schema]
    ).fetchall()
    return [name for (name,) in rows if name not in tables]


def build_ids(con: duckdb.DuckDBPyConnection, source_db: str) -> tuple[str | None, str | None]:
    """(the last good build's id, the id of the build before it, whose BI file its rebuilt leads update) from the
    warehouse's incremental snapshot: None where it holds none (no snapshot, or one of an older version)."""
    found = con.execute(
        "select count(*) from duckdb_columns() where database_name = ? and schema_name = ? and table_name = ? "
        "and column_name in ('build_id', 'previous_build_id')",
        [source_db, INPUTS, "incremental_build"],
    ).fetchone()
    if found is None or found[0] != 2:
        return None, None
    row = con.execute(f"select build_id, previous_build_id from {source_db}.{INPUTS}.incremental_build").fetchone()
    return (row[0], row[1]) if row else (None, None)


def _identity(bi_file: Path) -> list[int]:
    stat = bi_file.stat()
    return [stat.st_size, stat.st_mtime_ns, stat.st_ino]


def published_from(record: Path, bi_file: Path) -> str | None:
    """The build the BI file was published from, if the `record` describes this very file."""
    try:
        found = json.loads(record.read_text())
        identity = _identity(bi_file)
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("file") != identity:
        return None
    build_id = found.get("build_id")
    return build_id if isinstance(build_id, str) else None


def record_published(record: Path, bi_file: Path, build_id: str | None) -> None:
    """Record the build that the BI file, just published, was published from (none: no record)."""
    for leftover in record.parent.glob(f"{record.name}.*.tmp"):  # of a write that was killed
        leftover.unlink(missing_ok=True)
    if build_id is None:
        record.unlink(missing_ok=True)
        return
    tmp = record.with_name(f"{record.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"build_id": build_id, "file": _identity(bi_file)}))
    os.replace(tmp, record)


def rebuilt_leads(con: duckdb.DuckDBPyConnection, source_db: str, table: str) -> str | None:
    """The warehouse's table of the leads the last good build rebuilt in mart `table`, if it keeps one (a build
    that rewrote most rows, after a full sync, rebuilt every mart from every row and keeps none:
    models/change_share.py)."""
    name = f"incremental_rebuilt_{table}"
    found = con.execute(
        "select count(*) from duckdb_tables() where database_name = ? and schema_name = ? and table_name = ?",
        [source_db, INPUTS, name],
    ).fetchone()
    return f'{source_db}.{INPUTS}."{name}"' if found and found[0] else None


def replace_leads(
    con: duckdb.DuckDBPyConnection, source_db: str, target_db: str, schema: str, table: str,
    columns: list[tuple[str, str, str]], rebuilt: str,
) -> bool:  # fmt: skip
    """Make the copy's table hold the warehouse's rows by replacing the rows of the `rebuilt` leads (the copy
    is the previous build's); False when it must be written whole instead (as `update_table`)."""
    source, target = (f'{database}.{schema}."{table}"' for database in (source_db, target_db))
    if not _same_columns(con, target_db, schema, table, columns):
        return False
    expressions = ", ".join(expression for expression, _, _ in columns)

    def rows_of_rebuilt(relation: str) -> str:
        return (
            f"select lead_row.rowid from {relation} as lead_row inner join {rebuilt} as rebuilt "
            "on rebuilt.workspace_key = coalesce(lead_row.workspace_id, '') "
            "and rebuilt.lead_key = coalesce(lead_row.lead_email, '')"
        )

    ((deleted,),) = con.execute(f"delete from {target} where rowid in ({rows_of_rebuilt(target)})").fetchall()
    ((inserted,),) = con.execute(
        f"insert into {target} select {expressions} from {source} where rowid in ({rows_of_rebuilt(source)})"
    ).fetchall()
    return _holds_as_many(con, source, target, f"{table} (rebuilt leads)", deleted, inserted)


def _same_columns(
    con: duckdb.DuckDBPyConnection, target_db: str, schema: str, table: str, columns: list[tuple[str, str, str]]
) -> bool:
    held = con.execute(
        "select column_name, data_type from duckdb_columns() where database_name = ? and schema_name = ? "
        "and table_name = ? order by column_index",
        [target_db, schema, table],
    ).fetchall()
    return held == [(name, data_type) for _, name, data_type in columns]


def _holds_as_many(
    con: duckdb.DuckDBPyConnection, source: str, target: str, label: str, deleted: int, inserted: int
) -> bool:
    ((count,),) = con.execute(f"select count(*) from {source}").fetchall()
    ((held_rows,),) = con.execute(f"select count(*) from {target}").fetchall()
    log.debug("BI file %s: %d rows deleted, %d inserted, %d held", label, deleted, inserted, held_rows)
    return bool(held_rows == count)


def update_table(
    con: duckdb.DuckDBPyConnection, source_db: str, target_db: str, schema: str, table: str,
    columns: list[tuple[str, str, str]],
) -> bool:  # fmt: skip
    """Make the copy's table (database `target_db`; one of `large_tables`) hold the rows of the warehouse's
    (`source_db`), changing only the rows that differ; False when it must be written whole instead (it may then
    be half changed: the caller replaces it). `columns`: (expression over a warehouse row, column name, its type
    in the BI file)."""
    source, target = (f'{database}.{schema}."{table}"' for database in (source_db, target_db))
    if not _same_columns(con, target_db, schema, table, columns):
        return False
    expressions = ", ".join(expression for expression, _, _ in columns)
    names = ", ".join(f'"{name}"' for _, name, _ in columns)
    # two hashes (the second salted): a stale row survives only if both of its hashes match another row's
    con.execute(
        f"create or replace temp table bi_source_rows as select rowid as source_rowid, hash({expressions}) as h1, "
        f"hash({expressions}, 'outreach') as h2 from {source}"
    )
    # distinct first hashes: distinct rows (a collision of two rows only writes the table whole)
    count, distinct = con.execute("select count(*), count(distinct h1) from bi_source_rows").fetchone() or (0, 0)
    if count != distinct:
        return False
    con.execute(
        f"create or replace temp table bi_target_rows as select rowid as target_rowid, hash({names}) as h1, "
        f"hash({names}, 'outreach') as h2 from {target}"
    )
    ((deleted,),) = con.execute(
        f"delete from {target} where rowid in "
        "(select target_rowid from bi_target_rows anti join bi_source_rows using (h1, h2))"
    ).fetchall()
    ((inserted,),) = con.execute(
        f"insert into {target} select {expressions} from {source} where rowid in "
        "(select source_rowid from bi_source_rows anti join bi_target_rows using (h1, h2))"
    ).fetchall()
    con.execute("drop table bi_source_rows; drop table bi_target_rows")
    return _holds_as_many(con, source, target, f"{table} (rows compared)", deleted, inserted)
