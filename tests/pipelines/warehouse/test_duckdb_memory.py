"""The loads' DuckDB memory settings: the limit read as DuckDB reads it, and threads that fit in it."""

from __future__ import annotations

import os
from pathlib import Path

import dlt
import duckdb
import pytest

from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.duckdb_memory import MEMORY_PER_THREAD, load_threads, memory_bytes


@pytest.mark.parametrize("limit", ["64MB", "64 mb", "64M", "1G", "0.5GB", "512MiB", "1GiB", "100000000B", "2TB"])
def test_a_memory_limit_reads_as_duckdb_reads_it(limit: str) -> None:
    # DuckDB shows the limit in binary units with one decimal, cut (not rounded)
    con = duckdb.connect(config={"memory_limit": limit})
    shown = con.execute("select current_setting('memory_limit')").fetchone()
    assert shown is not None
    number, unit = shown[0].split()
    scale = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[unit]
    parsed = memory_bytes(limit)
    assert parsed is not None and 0 <= parsed / scale - float(number) < 0.1, (limit, shown, parsed)


@pytest.mark.parametrize("limit", ["80%", "-1", "lots", ""])
def test_a_limit_that_is_not_a_size_sets_no_threads(limit: str) -> None:
    assert memory_bytes(limit) is None and load_threads(limit) is None
    assert "threads" not in Warehouse("duckdb", Path("w.duckdb"), memory_limit=limit).duckdb_config()


@pytest.mark.parametrize("limit", ["64MB", "250MB", "1GB"])
def test_the_loads_duckdb_runs_with_the_threads_its_memory_limit_allows(tmp_path: Path, limit: str) -> None:
    """With 64MB and 2 threads a `large` sync's merge of 1M staged recipients failed out of memory (the
    sync_memory bench): DuckDB needs about 125 MB per thread. The setting reaches the connection dlt loads with."""
    warehouse = Warehouse("duckdb", tmp_path / "w.duckdb", memory_limit=limit)
    pipeline = dlt.pipeline(
        "memory_settings", destination=warehouse.dlt_destination(), dataset_name="outreach",
        pipelines_dir=str(tmp_path / "pipelines"),
    )  # fmt: skip
    pipeline.run([{"id": 1}], table_name="rows")
    with pipeline.sql_client() as client:
        rows = client.execute_sql("select current_setting('threads'), current_setting('memory_limit')")
    assert rows is not None
    threads, shown = rows[0]
    limit_bytes = memory_bytes(limit)
    assert limit_bytes is not None
    assert int(threads) == load_threads(limit) == max(1, min(os.cpu_count() or 1, limit_bytes // MEMORY_PER_THREAD))
    assert int(threads) * MEMORY_PER_THREAD <= max(limit_bytes, MEMORY_PER_THREAD)
    assert (
        shown
        == duckdb.connect(config={"memory_limit": limit})
        .execute("select current_setting('memory_limit')")
        .fetchone()[0]
    )
