"""The sync's entry points, for callers that import them from here.

The work is split by concern: `pipelines.source.plan` (what each workspace reads), `pipelines.sync.extract`
(extract and normalize a batch), `pipelines.sync.load` (load it), `pipelines.sync.run` (the whole run: lock,
keys, batches, workers). Settings: `pipelines.core.config`; the warehouse: `pipelines.warehouse.destination`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.api.accounts import check_keys
from pipelines.core.report import SyncReport, WorkspaceReport
from pipelines.sync.batches import run_batches
from pipelines.sync.extract import Extracted, extract_batch, pipeline_name_for
from pipelines.sync.load import load_batch
from pipelines.sync.run import run_sync
from pipelines.warehouse.destination import Warehouse, warehouse_target
from pipelines.warehouse.destination import make_pipeline as _make_pipeline
from pipelines.warehouse.warehouse_prep import load_spool_events


def make_pipeline(name: str, warehouse: Warehouse | str | Path | None, pipelines_dir: str | Path | None) -> Any:
    """`pipelines.warehouse.destination.make_pipeline`; `warehouse` may also be a DuckDB path (None: the
    configured one)."""
    if not isinstance(warehouse, Warehouse):
        warehouse = warehouse_target(duckdb_path=warehouse, destination="duckdb" if warehouse else None)
    return _make_pipeline(name, warehouse, pipelines_dir)


__all__ = [
    "Extracted",
    "SyncReport",
    "Warehouse",
    "WorkspaceReport",
    "check_keys",
    "extract_batch",
    "load_batch",
    "load_spool_events",
    "make_pipeline",
    "pipeline_name_for",
    "run_batches",
    "run_sync",
    "warehouse_target",
]
