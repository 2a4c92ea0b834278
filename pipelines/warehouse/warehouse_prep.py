"""Before a sync's first API request: the warehouse checked writable (a missing DuckDB file created in the
configured storage format), and webhook events waiting in the warehouse's spool loaded first."""

from __future__ import annotations

import logging
from pathlib import Path

from pipelines.core import constants
from pipelines.core.config import OutreachSettings
from pipelines.warehouse.destination import Warehouse, make_pipeline
from pipelines.warehouse.turns import pipeline_turn, taking_turns

log = logging.getLogger(__name__)


def prepare_warehouse(warehouse: Warehouse) -> None:
    """Before the first API request (or, with keys given, right after the key check): check the warehouse
    can be written, and create a missing DuckDB file in the configured storage format (so that DuckDB 1.x
    readers can open it). Raises a one-line error.

    `pipelines.warehouse.diagnose.preflight_warehouse` finds a missing parent, a read-only place, a file that is not
    DuckDB, a lock held by process N, no space, and notes a file in a newer storage format. Then the file is
    opened for writing once (created if missing).
    """
    if warehouse.duckdb_path is None:
        return
    from pipelines.warehouse.diagnose import preflight_warehouse

    preflight_warehouse(warehouse.duckdb_path, warehouse.storage_version)
    try:
        warehouse.open_for_writing()
    except Exception as exc:  # noqa: BLE001 - one line naming the cause
        from pipelines.core.errors import WarehousePathError
        from pipelines.warehouse.diagnose import damage_problem
        from pipelines.warehouse.failure import WarehouseUnavailable, explain

        # a damaged file stays damaged (no retry passes); anything else, such as a lock, may end
        damaged = damage_problem(warehouse.duckdb_path)
        kind = WarehousePathError if damaged else WarehouseUnavailable
        line = damaged or explain(exc, warehouse.duckdb_path)
        raise kind(f"cannot open the warehouse {warehouse.duckdb_path} for writing: {line}") from None


def load_spool_events(settings: OutreachSettings, warehouse: Warehouse, spool_dir: str | Path | None = None) -> int:
    """Load webhook events waiting in the spool (pipelines.events.loading) first; 0 if there are none.
    `spool_dir` overrides the configured spool."""
    spool = Path(spool_dir) if spool_dir else settings.spool_path()
    if spool_dir is None and settings.spool_dir is None:
        _note_shared_spool(settings.spool_location())
    if spool is None or not spool.is_dir():
        return 0
    from pipelines.events.loading import load_spool

    with taking_turns(warehouse, [pipeline_turn(constants.EVENTS_PIPELINE_NAME)], "spool load"):
        pipeline = make_pipeline(constants.EVENTS_PIPELINE_NAME, warehouse, settings.pipelines_dir)
        return int(load_spool(pipeline, spool))


def _note_shared_spool(own: Path) -> None:
    """Deliveries waiting in the old shared default spool belong to whichever warehouse they were meant for:
    never loaded into this one by guess; one line says where they are and how to load them."""
    shared = Path(constants.DEFAULT_SPOOL_DIR)
    waiting = sorted(shared.glob("*.jsonl")) if shared.is_dir() else []
    if waiting and shared.resolve() != own.resolve():
        log.warning(
            "%s holds %d webhook spool file(s) from before spools were per warehouse: move them into %s to load "
            "them into this warehouse (or pass --spool %s)",
            shared,
            len(waiting),
            own,
            shared,
        )
