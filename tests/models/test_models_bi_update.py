"""A publish that starts from the previous BI file (models/bi_update.py) writes the same file as a publish from
nothing: every table row for row, the same columns, types and comments, the same storage version; and a
DuckDB release that BI tools ship reads it."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import duckdb
import pytest

from devtools.readers import current_reader, python_reader
from devtools.synthetic import make_raw_warehouse
from models import bi_update
from models.build import build
from models.publish import publish_bi
from models.settings import bi_path_for
from tests.duckdb_sql import read_sql, run_sql

pytestmark = pytest.mark.timeout(600)

ANEW = "writing the BI file anew"


def _differences(updated: Path, fresh: Path) -> list[str]:
    """What tells the two BI files apart: tables, columns with their types and comments, table comments,
    storage versions, and each table's rows (EXCEPT ALL both ways)."""
    con = duckdb.connect()
    try:
        con.execute(f"attach '{updated}' as u (read_only); attach '{fresh}' as f (read_only)")
        found = []
        for what, sql in {
            "tables": "select table_name, comment from duckdb_tables() where database_name = ? order by all",
            "columns": "select table_name, column_index, column_name, data_type, comment from duckdb_columns() "
            "where database_name = ? order by all",
            "storage": "select tags from duckdb_databases() where database_name = ?",
        }.items():
            if con.execute(sql, ["u"]).fetchall() != con.execute(sql, ["f"]).fetchall():
                found.append(what)
        tables = con.execute("select table_name from duckdb_tables() where database_name = 'f'").fetchall()
        for (table,) in tables:
            for a, b in (("u", "f"), ("f", "u")):
                extra = con.execute(
                    f'select count(*) from (select * from {a}.reporting."{table}" '
                    f'except all select * from {b}.reporting."{table}")'
                ).fetchall()[0][0]
                if extra:
                    found.append(f"{table}: {extra} rows only in {a}")
        return found
    finally:
        con.close()


def test_a_publish_from_the_previous_file_equals_one_from_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=2000)
    assert build(path).passed
    bi = bi_path_for(path)
    # every table by rows, not only those of 100,000 rows and more
    monkeypatch.setattr(bi_update, "WHOLE_BELOW", 0)

    # a sync changes a recipient's name and moves another to a new address
    sync = "update outreach.campaign_recipients set {}, synced_at = '2030-01-01 00:00:01+00' where id = ({})"
    live = "select {}(id) from outreach.campaign_recipients where deleted_at is null"
    run_sql(path, sync.format("first_name = 'Renamed'", live.format("min")))
    run_sql(path, sync.format("email = 'moved.' || email", live.format("max")))
    with caplog.at_level(logging.DEBUG, logger="models"):
        assert build(path).passed
    assert ANEW not in caplog.text
    # the renamed lead, and the moved recipient's two leads: only their rows are replaced
    assert "lead_engagement (rebuilt leads): 2 rows deleted, 2 inserted" in caplog.text, caplog.text[-2000:]
    assert "lead_timeline (rebuilt leads): 0 rows deleted, 0 inserted" in caplog.text
    shutil.move(bi, tmp_path / "updated.duckdb")
    publish_bi(path)  # from nothing: no previous file
    assert _differences(tmp_path / "updated.duckdb", bi) == []

    old = python_reader("1.1.3")
    assert old.census(tmp_path / "updated.duckdb") == current_reader().census(bi)


def test_a_previous_file_of_a_later_storage_version_is_written_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    monkeypatch.setattr(bi_update, "WHOLE_BELOW", 0)
    assert build(path, publish=False).passed
    bi = bi_path_for(path)
    con = duckdb.connect()
    con.execute(f"attach '{bi}' as later (storage_version 'v1.2.0')")
    con.execute("create schema later.reporting; create table later.reporting.campaign_performance as select 1 as n")
    con.close()
    with caplog.at_level(logging.INFO, logger="models"):
        publish_bi(path)
    assert ANEW in caplog.text
    shutil.move(bi, tmp_path / "anew.duckdb")
    publish_bi(path)
    assert _differences(tmp_path / "anew.duckdb", bi) == []


def test_small_marts_are_published_into_a_new_file(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    assert build(path).passed
    size = bi_path_for(path).stat().st_size
    with caplog.at_level(logging.DEBUG, logger="models"):
        assert build(path).passed
    assert "rows deleted" not in caplog.text
    assert bi_path_for(path).stat().st_size == size  # a copy would also hold the replaced tables' free blocks


def test_a_previous_file_of_another_build_has_its_rows_compared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The rebuilt leads are relative to the build before: a BI file of an earlier build, a file changed since its
    publish, or a build from every row (`--full-refresh`; after a full sync: models/change_share.py) has every row
    compared instead, and the file is still right."""
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=300)
    monkeypatch.setattr(bi_update, "WHOLE_BELOW", 0)
    bi = bi_path_for(path)
    names = iter(range(100))

    def sync_then_build(**options: bool) -> str:
        run_sql(
            path,
            f"update outreach.campaign_recipients set first_name = 'Renamed {next(names)}', synced_at = now() "
            "where id = (select min(id) from outreach.campaign_recipients)",
        )
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="models"):
            assert build(path, **options).passed
        return caplog.text

    assert build(path).passed
    sync_then_build(publish=False)
    # the BI file is two builds old: the last build's rebuilt leads are not all that changed since
    said = sync_then_build()
    assert "lead_engagement (rows compared): 1 rows deleted, 1 inserted" in said, said[-2000:]
    con = duckdb.connect(str(bi))  # a file changed since it was published: a table the marts no longer have
    con.execute("create table reporting.dropped_mart as select 1 as n")
    con.close()
    assert "lead_engagement (rows compared)" in sync_then_build()
    assert "lead_engagement (rows compared)" in sync_then_build(full_refresh=True)
    assert read_sql(path, "select previous_build_id from reporting_inputs.incremental_build") == [(None,)]
    kept = "select count(*) from duckdb_tables() where table_name like 'incremental_rebuilt_%'"
    assert read_sql(path, kept) == [(0,)]  # every lead was rebuilt: none kept
    assert "(rebuilt leads)" in sync_then_build()  # and the next build's publish replaces them again

    shutil.move(bi, tmp_path / "updated.duckdb")
    publish_bi(path)
    assert _differences(tmp_path / "updated.duckdb", bi) == []
