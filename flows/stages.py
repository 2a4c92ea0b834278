"""The calls the flows' stages after the sync make into ``models`` and ``dashboard`` (one place to adapt them).

The sync itself is ``pipelines.sync.run.sync``, called directly; the warehouse is the one
`pipelines.warehouse.destination.warehouse_target` names (``duckdb_path`` parameter, else
``SOURCES__OUTREACH__DUCKDB_PATH`` / ``.dlt/config.toml``, else ``data/outreach.duckdb``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipelines.core.config import resolve_settings
from pipelines.core.constants import bi_path_for as bi_path_for  # re-exported: the flows' name for it
from pipelines.warehouse.destination import Warehouse, warehouse_target


def warehouse_path(duckdb_path: str | Path | None) -> str:
    """The absolute DuckDB warehouse path: the given one, else the configured one (dlt config), else
    ``data/outreach.duckdb`` under the working directory."""
    target = warehouse_target(resolve_settings(duckdb_path=duckdb_path, destination="duckdb"))
    return str(target.duckdb_path)


def sync_report_markdown(
    mode: str, workspace_reports: list[Any], destination: str, seconds: float, events_loaded: int = 0
) -> str:
    """Render loaded workspaces' reports with the pipeline's own markdown."""
    from pipelines.core.report import SyncReport

    report = SyncReport(
        mode=mode,
        workspaces=list(workspace_reports),
        seconds=seconds,
        destination=destination,
        events_loaded=events_loaded,
    )
    return report.to_markdown()


def build_models(target: Warehouse) -> Any:
    """Build the reporting schema of ``target`` (a DuckDB file or PostgreSQL) with dbt (models and data tests,
    all or nothing), without publishing.

    ``models.build.build`` runs ``dbt build``: models are built beside the published ones and swapped
    in only when every model and test passed, so a failing test leaves the previous reporting tables:
    the two stages are one call. Raises ``models.errors.BuildFailed`` naming each failing model or test.
    """
    from models.build import build

    return build(target, publish=False)


def evaluate_alerts(target: Warehouse) -> str:
    """The alert rules after a build (alerts.after_build): one line; never raises."""
    from alerts import after_build

    return after_build(target)


def write_dashboard(bi_path: str) -> str:
    """The HTML dashboard (`outreach report`) beside the BI file just published, as a markdown line.

    A dashboard that cannot be drawn is reported in the line, not raised: the data it would show
    is loaded, tested and published already.
    """
    from dashboard import ReportError, report_path_for, write_report

    try:
        path = write_report(Path(bi_path), report_path_for(bi_path))
    except ReportError as exc:
        return f"not written: {exc}"
    size_mb = path.stat().st_size / 2**20
    return f"[{path.name}]({path.resolve().as_uri()}) ({size_mb:.1f} MB), on the worker at `{path.resolve()}`"


def data_test_seconds(build_report: Any) -> float:
    """Seconds the data tests took inside a build (summed over dbt's threads, at most the build's time)."""
    tests = float(sum(t.seconds for t in getattr(build_report, "tests", [])))
    return min(tests, float(getattr(build_report, "seconds", tests)))


def publish_bi(duckdb_path: str) -> Path:
    """Publish the reporting tables to the BI file by atomic rename (in the storage format BI tools read)."""
    from models.publish import publish_bi as _publish

    path, _rows = _publish(duckdb_path)
    return path
