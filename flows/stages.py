"""The calls each flow stage makes into ``pipelines`` and ``models`` (one place to adapt them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DEFAULT_WAREHOUSE = Path("data/outreach.duckdb")


def warehouse_path(duckdb_path: str | Path | None) -> str:
    """The absolute warehouse path (default ``data/outreach.duckdb`` under the working directory)."""
    return str(Path(duckdb_path or DEFAULT_WAREHOUSE).expanduser().resolve())


DEFAULT_SPOOL_DIR = Path("data/spool")


def spool_path(spool_dir: str | Path | None) -> str | None:
    """The spool to load: the given one, else ``data/spool`` if it exists, else none."""
    if spool_dir:
        return str(Path(spool_dir).expanduser().resolve())
    return str(DEFAULT_SPOOL_DIR.resolve()) if DEFAULT_SPOOL_DIR.is_dir() else None


def bi_path_for(duckdb_path: str | Path) -> Path:
    """``<stem>_bi.duckdb`` beside the warehouse (the DESIGN contract)."""
    path = Path(duckdb_path)
    return path.with_name(f"{path.stem}_bi.duckdb")


def extract(
    api_key: str,
    *,
    mode: str,
    base_url: str | None,
    duckdb_path: str,
    rate_limit_per_minute: int | None,
    reply_body_cap: int | None,
    pipelines_dir: str | None,
) -> Any:
    """Extract and normalize one workspace; nothing is written to the warehouse."""
    from flows.writer_lock import WarehouseLock
    from pipelines.sync import extract_workspace

    return extract_workspace(
        api_key,
        mode=mode,
        base_url=base_url,
        duckdb_path=duckdb_path,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        pipelines_dir=pipelines_dir,
        warehouse_lock=WarehouseLock(duckdb_path, holder="read warehouse state"),
    )


def load(extracted: Any) -> Any:
    """Load what :func:`extract` produced (the caller holds the writer lock)."""
    from pipelines.sync import load_workspace

    return load_workspace(extracted)


def sync_report_markdown(
    mode: str, workspace_reports: list[Any], duckdb_path: str, seconds: float, events_loaded: int = 0
) -> str:
    """Render loaded workspaces' reports with the pipeline's own markdown."""
    from pipelines.report import SyncReport

    report = SyncReport(
        mode=mode,
        workspaces=list(workspace_reports),
        seconds=seconds,
        destination=duckdb_path,
        events_loaded=events_loaded,
    )
    return report.to_markdown()


def load_spool(spool_dir: str | None, duckdb_path: str, pipelines_dir: str | None) -> int:
    """Load webhook events from the spool (if it exists); returns how many (the caller holds the lock)."""
    from pipelines.sync import load_spool_events

    return load_spool_events(
        spool_dir=Path(spool_dir) if spool_dir else None, duckdb_path=duckdb_path, pipelines_dir=pipelines_dir
    )


def build_models(duckdb_path: str) -> Any:
    """Build the reporting schema with dbt (models and data tests, all or nothing), without publishing.

    ``models.build.build`` runs ``dbt build``: models are built beside the published ones and swapped
    in only when every model and test passed, so a failing test leaves the previous reporting tables:
    the two stages are one call. Raises ``models.errors.BuildFailed`` naming each failing model or test.
    """
    from models.build import build

    return build(duckdb_path=duckdb_path, publish=False)


def data_test_seconds(build_report: Any) -> float:
    """Seconds the data tests took inside a build (summed over dbt's threads, at most the build's time)."""
    tests = float(sum(t.seconds for t in getattr(build_report, "tests", [])))
    return min(tests, float(getattr(build_report, "seconds", tests)))


def publish_bi(duckdb_path: str) -> Path:
    """Publish the reporting tables to the BI file by atomic rename (in the storage format BI tools read)."""
    from models.publish import publish_bi as _publish

    path, _rows = _publish(duckdb_path)
    return path
