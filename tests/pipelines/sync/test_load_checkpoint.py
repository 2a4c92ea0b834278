"""After each batch's load on DuckDB, the write-ahead log is folded into the file although the warehouse stays
open for the run: otherwise the WAL, and DuckDB's memory for it, grew with every batch of a long run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from pipelines.sync.load import _checkpoint
from pipelines.warehouse.destination import Warehouse, kept_open, make_pipeline


def _wal(db: Path) -> int:
    wal = db.with_name(db.name + ".wal")
    return wal.stat().st_size if wal.exists() else 0


def test_the_wal_is_folded_in_after_a_load_while_the_warehouse_stays_open(tmp_path: Path) -> None:
    db = tmp_path / "warehouse.duckdb"
    warehouse = Warehouse("duckdb", db)
    warehouse.create_if_missing()
    pipelines_dir = tmp_path / "pipelines"
    pipeline = make_pipeline("outreach_checkpoint_test", warehouse, pipelines_dir)
    with kept_open(warehouse, pipelines_dir):
        with pipeline.sql_client() as client:
            client.execute_sql("create table main.rows_loaded as select range as id from range(200000)")
        assert _wal(db) > 0  # committed, not yet in the file: the open database holds it
        _checkpoint(cast(Any, SimpleNamespace(warehouse=warehouse, pipeline=pipeline)))
        assert _wal(db) == 0
        with pipeline.sql_client() as client:
            assert client.execute_sql("select count(*) from main.rows_loaded") == [(200000,)]
