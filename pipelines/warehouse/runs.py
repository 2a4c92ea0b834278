"""Run records: one row per workspace per run in ``outreach.sync_runs``, so `outreach status` and the marts can
tell what each run did.

Columns: run_id, workspace_id, workspace_name, mode, started_at, ended_at, outcome (``ok``, ``failed``,
``interrupted``: stopped by SIGINT / SIGTERM, or ``rejected``: loaded, but records went to rejected_records),
rows_loaded (JSON: rows per table), requests, error (one line), load_ids (JSON list), rejected (JSON: records
rejected per endpoint).

A batch's records travel in the batch's own load package, after its data, so they commit with it:
``ok`` for each workspace that extracted everything, ``failed`` with the reason for the others
(``ended_at`` is then the end of extraction; `outreach status` shows the load's completion from
``_dlt_loads``). When the load itself fails, the records of the whole batch are written as
``failed`` in a small load of their own (`record_failed_runs`), if the warehouse takes it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import dlt
from dlt.common.schema.typing import TTableSchemaColumns

from pipelines.core import constants
from pipelines.core.deadline import SyncInterrupted
from pipelines.warehouse.diagnose import chain

log = logging.getLogger(__name__)

RUNS_TABLE = "sync_runs"
RUNS_PIPELINE = "outreach_runs"

RUNS_COLUMNS = cast(
    TTableSchemaColumns,
    {
        "run_id": {"data_type": "text", "nullable": False},
        "workspace_id": {"data_type": "text"},
        "workspace_name": {"data_type": "text"},
        "mode": {"data_type": "text"},
        "started_at": {"data_type": "timestamp", "timezone": True},
        "ended_at": {"data_type": "timestamp", "timezone": True},
        "outcome": {"data_type": "text"},
        "rows_loaded": {"data_type": "json"},
        "requests": {"data_type": "bigint"},
        "error": {"data_type": "text"},
        "load_ids": {"data_type": "json"},
        "rejected": {"data_type": "json"},
    },
)

_failed_runs_lock = threading.Lock()


def outcome_of(failure: BaseException | None) -> str:
    """``ok`` without a failure, ``interrupted`` when a signal stopped the workspace, else ``failed``."""
    if failure is None:
        return "ok"
    return "interrupted" if any(isinstance(e, SyncInterrupted) for e in chain(failure)) else "failed"


def run_row(
    *,
    run_id: str,
    workspace_id: str | None,
    workspace_name: str,
    mode: str,
    started_at: datetime,
    outcome: str,
    rows_loaded: dict[str, int],
    requests: int,
    error: str = "",
    load_ids: Sequence[str] = (),
    ended_at: datetime | None = None,
    rejected: dict[str, int] | None = None,
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "workspace_id": workspace_id,
        "workspace_name": workspace_name,
        "mode": mode,
        "started_at": started_at,
        "ended_at": ended_at or datetime.now(UTC),
        "outcome": outcome,
        "rows_loaded": dict(rows_loaded),
        "requests": int(requests),
        "error": error or None,
        "load_ids": list(load_ids),
        "rejected": dict(rejected or {}),
    }


def runs_resource(rows: Any) -> Any:
    """The `sync_runs` resource; `rows` is a callable giving the rows when the resource runs."""

    @dlt.resource(name=RUNS_TABLE, write_disposition="append", columns=RUNS_COLUMNS)
    def sync_runs() -> Iterator[list[dict[str, Any]]]:
        ready = list(rows())
        if ready:
            yield ready

    return sync_runs()


def current_load_id() -> str | None:
    """The load id of the package being extracted (inside a resource)."""
    try:
        return str(dlt.current.load_package_state()["load_id"])
    except Exception:  # noqa: BLE001 - outside an extract there is no package
        return None


def record_failed_runs(warehouse: Any, pipelines_dir: str | None, rows: Iterable[dict[str, Any]]) -> bool:
    """Write run records of a batch whose load failed, in a load of their own. False if the warehouse
    refused them too (the run's error says why)."""
    from pipelines.warehouse.destination import make_pipeline

    batch = list(rows)
    if not batch:
        return True
    from pipelines.warehouse.turns import pipeline_turn, taking_turns

    # one dlt pipeline working dir: one user at a time
    with _failed_runs_lock, taking_turns(warehouse, [pipeline_turn(RUNS_PIPELINE)], "run records"):
        try:
            pipeline = make_pipeline(RUNS_PIPELINE, warehouse, pipelines_dir)
            pipeline.extract(_runs_source(batch))
            pipeline.normalize()
            pipeline.load().raise_on_failed_jobs()
            return True
        except Exception as exc:  # noqa: BLE001 - the warehouse cannot take them: nothing more to do
            log.warning("run records not written (%s): the warehouse refused them too", type(exc).__name__)
            return False


def flush_failed_runs(warehouse: Any, pipelines_dir: str | None) -> None:
    """Load run records an earlier run could not write (its warehouse refused them), if any are waiting."""
    from pipelines.warehouse.destination import Warehouse, dlt_working_dir, make_pipeline

    if isinstance(warehouse, Warehouse) and not (dlt_working_dir(warehouse, pipelines_dir) / RUNS_PIPELINE).is_dir():
        return
    from pipelines.warehouse.turns import pipeline_turn, taking_turns

    with _failed_runs_lock, taking_turns(warehouse, [pipeline_turn(RUNS_PIPELINE)], "run records"):
        try:
            pipeline = make_pipeline(RUNS_PIPELINE, warehouse, pipelines_dir)
            if pipeline.has_pending_data:
                pipeline.normalize()
                pipeline.load().raise_on_failed_jobs()
        except Exception as exc:  # noqa: BLE001 - they wait for the next run
            log.warning("earlier run records still not written (%s)", type(exc).__name__)


@dlt.source(name=constants.SOURCE_NAME)
def _runs_source(rows: list[dict[str, Any]]) -> Any:
    return runs_resource(lambda: rows)
