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

The previous file is reused only when a mart has at least `WHOLE_BELOW` rows (below, a new file is as quick and
holds no free blocks), and when it is a plain file without a WAL (a read-write opener's changes, which the copy
would lose), opens in the configured storage version (DuckDB raises an older file's version and refuses to lower
a later one's, which is then written anew) and has few free blocks (else it is written anew, which compacts it).
"""

from __future__ import annotations

import logging

import duckdb

log = logging.getLogger(__name__)

#: a mart with fewer rows than this is written whole: a diff would cost more than the copy
WHOLE_BELOW = 100_000
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


def update_table(
    con: duckdb.DuckDBPyConnection, source_db: str, target_db: str, schema: str, table: str,
    columns: list[tuple[str, str, str]],
) -> bool:  # fmt: skip
    """Make the copy's table (database `target_db`; one of `large_tables`) hold the rows of the warehouse's
    (`source_db`), changing only the rows that differ; False when it must be written whole instead (it may then
    be half changed: the caller replaces it). `columns`: (expression over a warehouse row, column name, its type
    in the BI file)."""
    source, target = (f'{database}.{schema}."{table}"' for database in (source_db, target_db))
    held = con.execute(
        "select column_name, data_type from duckdb_columns() where database_name = ? and schema_name = ? "
        "and table_name = ? order by column_index",
        [target_db, schema, table],
    ).fetchall()
    if held != [(name, data_type) for _, name, data_type in columns]:
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
    (held_rows,) = con.execute(f"select count(*) from {target}").fetchone() or (0,)
    log.debug("BI file %s: %d rows deleted, %d inserted, %d held", table, deleted, inserted, held_rows)
    return bool(held_rows == count)
