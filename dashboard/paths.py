"""Where the report reads from and writes to.

The warehouse is the one setting the dashboard reads: the engine's (`warehouse_target`), so that the report
reads the BI file beside the warehouse every other command means.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.core.constants import bi_path_for as bi_path_for  # re-exported: part of the dashboard's interface

REPORT_NAME = "report.html"


def configured_warehouse(given: Path | None = None) -> Path:
    """The DuckDB warehouse `given` (``--duckdb``), else the configured one (``sources.outreach.duckdb_path``, else
    ``data/outreach.duckdb``), as every command reads it: its own read took ``~/w.duckdb`` as a folder named ``~``,
    and took a PostgreSQL warehouse for the default file. ConfigError for an unusable path or setting, ReportError
    for a configured warehouse that is not a DuckDB file."""
    from dashboard.errors import ReportError
    from pipelines.warehouse.destination import warehouse_target

    target = warehouse_target(duckdb_path=given, destination="duckdb" if given is not None else None)
    if target.duckdb_path is None:
        raise ReportError(
            f"the report reads the BI file of a DuckDB warehouse, and the configured one is {target.destination}: "
            "pass --duckdb with a DuckDB warehouse"
        )
    return target.duckdb_path


def report_path_for(warehouse: str | Path) -> Path:
    """``report.html`` beside the warehouse: ``data/report.html`` for the default warehouse."""
    return Path(warehouse).with_name(REPORT_NAME)
