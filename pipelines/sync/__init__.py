"""The sync's entry points, for callers that import them from here.

The work is split by concern: `pipelines.source.plan` (what each workspace reads), `pipelines.sync.extract`
(extract and normalize a batch), `pipelines.sync.load` (load it), `pipelines.sync.run` (the whole run: lock,
keys, batches, workers), `pipelines.sync.edge` (its keyword form, `run_sync`). Settings:
`pipelines.core.config`; the warehouse: `pipelines.warehouse.destination`.

The names load on first use: importing one light module of the package (the edge, which checks given keys
before dlt is imported) must not import dlt through this file.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipelines.api.accounts import check_keys
    from pipelines.core.report import SyncReport, WorkspaceReport
    from pipelines.sync.batches import run_batches
    from pipelines.sync.edge import run_sync
    from pipelines.sync.extract import Extracted, extract_batch, pipeline_name_for
    from pipelines.sync.load import load_batch
    from pipelines.warehouse.destination import Warehouse, warehouse_target
    from pipelines.warehouse.warehouse_prep import load_spool_events

_HOME = {
    "Extracted": "pipelines.sync.extract",
    "SyncReport": "pipelines.core.report",
    "Warehouse": "pipelines.warehouse.destination",
    "WorkspaceReport": "pipelines.core.report",
    "check_keys": "pipelines.api.accounts",
    "extract_batch": "pipelines.sync.extract",
    "load_batch": "pipelines.sync.load",
    "load_spool_events": "pipelines.warehouse.warehouse_prep",
    "pipeline_name_for": "pipelines.sync.extract",
    "run_batches": "pipelines.sync.batches",
    "run_sync": "pipelines.sync.edge",
    "warehouse_target": "pipelines.warehouse.destination",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)


__all__ = [
    "Extracted",
    "SyncReport",
    "Warehouse",
    "WorkspaceReport",
    "check_keys",
    "extract_batch",
    "load_batch",
    "load_spool_events",
    "pipeline_name_for",
    "run_batches",
    "run_sync",
    "warehouse_target",
]
