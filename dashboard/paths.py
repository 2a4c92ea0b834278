"""Where the report reads from and writes to.

The warehouse is the one setting the dashboard reads: the engine's (`warehouse_target`), so that the report
reads the BI file beside the warehouse every other command means.
"""

from __future__ import annotations

from pathlib import Path

from pipelines.core.constants import bi_path_for as bi_path_for  # re-exported: part of the dashboard's interface

REPORT_NAME = "report.html"


def configured_warehouse() -> Path:
    """The configured DuckDB warehouse (``sources.outreach.duckdb_path``, else ``data/outreach.duckdb``), as every
    command reads it: its own read of the setting took ``~/w.duckdb`` as a folder named ``~``, and took a
    PostgreSQL warehouse for the default file. ConfigError for an unusable setting, ReportError for a warehouse
    that is not a DuckDB file."""
    from dashboard.errors import ReportError
    from pipelines.warehouse.destination import warehouse_target

    target = warehouse_target()
    if target.duckdb_path is None:
        raise ReportError(
            f"the report reads the BI file of a DuckDB warehouse, and the configured one is {target.destination}: "
            "pass --duckdb with a DuckDB warehouse"
        )
    return target.duckdb_path


def report_path_for(warehouse: str | Path) -> Path:
    """``report.html`` beside the warehouse: ``data/report.html`` for the default warehouse."""
    return Path(warehouse).with_name(REPORT_NAME)
