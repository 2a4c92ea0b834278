"""After each batch's load on DuckDB, the write-ahead log is folded into the file although the warehouse stays
open for the run, and the batch's staging schema is dropped: otherwise the WAL and the staging schemas, and
DuckDB's memory for them, grew with every batch of a long run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from pipelines.sync.load import _tidy_duckdb
from pipelines.warehouse.destination import Warehouse, make_pipeline
from pipelines.warehouse.kept_open import kept_open


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
        _tidy_duckdb(cast(Any, SimpleNamespace(warehouse=warehouse, pipeline=pipeline)), drop_staging=False)
        assert _wal(db) == 0
        with pipeline.sql_client() as client:
            assert client.execute_sql("select count(*) from main.rows_loaded") == [(200000,)]


def test_a_good_loads_staging_schema_is_dropped_in_a_warehouse_whose_catalog_is_named_like_the_dataset(
    tmp_path: Path,
) -> None:
    """`outreach.duckdb`: catalog `outreach` and dataset `outreach`, where DuckDB finds a qualified DROP SCHEMA
    ambiguous. The dataset stays."""
    db = tmp_path / "outreach.duckdb"
    warehouse = Warehouse("duckdb", db)
    warehouse.create_if_missing()
    pipeline = make_pipeline("outreach_staging_test", warehouse, tmp_path / "pipelines")
    staging = "outreach_staging_staging_test"
    with pipeline.sql_client() as client:
        client.execute_sql(f"create schema {staging}")
        client.execute_sql(f"create table {staging}.staged as select 1 as id")
        client.execute_sql("create schema outreach")
    extracted = cast(Any, SimpleNamespace(warehouse=warehouse, pipeline=pipeline))
    _tidy_duckdb(extracted, drop_staging=True)
    with pipeline.sql_client() as client:
        schemas = {row[0] for row in client.execute_sql("select schema_name from duckdb_schemas()")}
    assert staging not in schemas and "outreach" in schemas
