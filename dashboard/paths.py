"""Where the report reads from and writes to.

The warehouse path is the one setting the dashboard reads (``duckdb_path`` of
``[sources.outreach]``, or ``SOURCES__OUTREACH__DUCKDB_PATH``). It is looked up in
:func:`configured_warehouse` only, so it can move to the engine's settings object in one place.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.core.constants import DEFAULT_DUCKDB_PATH
from pipelines.core.constants import bi_path_for as bi_path_for  # re-exported: part of the dashboard's interface

DEFAULT_WAREHOUSE = Path(DEFAULT_DUCKDB_PATH)
REPORT_NAME = "report.html"


def configured_warehouse() -> Path:
    """The warehouse named by dlt config (``sources.outreach.duckdb_path``), else ``data/outreach.duckdb``."""
    import dlt

    value: object = dlt.config.get("sources.outreach.duckdb_path")
    return Path(str(value)) if value else DEFAULT_WAREHOUSE


def report_path_for(warehouse: str | Path) -> Path:
    """``report.html`` beside the warehouse: ``data/report.html`` for the default warehouse."""
    return Path(warehouse).with_name(REPORT_NAME)
