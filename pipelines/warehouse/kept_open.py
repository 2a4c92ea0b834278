"""`kept_open`: one connection to a DuckDB warehouse held while a sync runs."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from pipelines.core import constants
from pipelines.warehouse.destination import Warehouse, make_pipeline


@contextlib.contextmanager
def kept_open(warehouse: Warehouse, pipelines_dir: str | Path | None) -> Iterator[None]:
    """Keep one connection to a DuckDB warehouse open while a run lasts (opening it read-write is also the
    last check, before the first API request, that the warehouse can be written: a locked or unreadable
    file fails here in one line).

    Each dlt step opens and closes its own connections; when the last one closes, DuckDB closes the
    database, and the next step opens it again, reading the catalog of every table and staging schema
    from disk. With one connection held, later opens join the open database (same settings, so DuckDB
    shares it within the process): measured at 100 idle workspaces, loads took a third of the time.
    Opened through dlt, with dlt's own connection settings. A no-op elsewhere.
    """
    if not warehouse.is_duckdb:
        yield
        return
    client = make_pipeline(constants.EVENTS_PIPELINE_NAME, warehouse, pipelines_dir).sql_client()
    try:
        client.open_connection()
    except Exception as exc:  # noqa: BLE001 - said in one line with its root cause, before any API request
        from pipelines.warehouse.failure import WarehouseUnavailable, explain

        raise WarehouseUnavailable(
            f"cannot open the warehouse {warehouse.label} for writing: {explain(exc, warehouse.duckdb_path)}"
        ) from None
    try:
        yield
    finally:
        client.close_connection()
