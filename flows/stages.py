"""The calls each flow stage makes into ``pipelines`` and ``models`` (one place to adapt them).

The flows run the same engine as `outreach sync`: `pipelines.extract.extract_batch` and
`pipelines.load.load_batch`, with settings resolved once per flow run (`settings`) and the warehouse
named by `pipelines.destination.warehouse_target` (``duckdb_path`` parameter, else
``SOURCES__OUTREACH__DUCKDB_PATH`` / ``.dlt/config.toml``, else ``data/outreach.duckdb``).
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path
from typing import Any

from pipelines.config import OutreachSettings, resolve_settings
from pipelines.destination import Warehouse, warehouse_target
from pipelines.settings import bi_path_for as bi_path_for  # re-exported: the flows' name for it


def settings(**explicit: Any) -> OutreachSettings:
    """The run's settings: flow parameters (None = not given) over dlt config over defaults."""
    return resolve_settings(**explicit)


def warehouse(cfg: OutreachSettings) -> Warehouse:
    return warehouse_target(cfg)


def warehouse_path(duckdb_path: str | Path | None) -> str:
    """The absolute DuckDB warehouse path: the given one, else the configured one (dlt config), else
    ``data/outreach.duckdb`` under the working directory."""
    target = warehouse_target(resolve_settings(duckdb_path=duckdb_path, destination="duckdb"))
    return str(target.duckdb_path)


def spool_path(spool_dir: str | Path | None) -> str | None:
    """The spool to load: the given one, else the configured one if it exists, else none."""
    if spool_dir:
        return str(Path(spool_dir).expanduser().resolve())
    found = resolve_settings().spool_path()
    return str(found) if found else None


def extract(api_key: str, *, mode: str, settings: OutreachSettings) -> Any:
    """Check the key, then plan, extract and normalize its workspace; nothing is written to the warehouse
    but, when it fails, its run record (as `outreach sync` records a failed run).

    Raises the workspace's error (a bad key, the API down...) so the task's retry rule applies.
    """
    from pipelines.accounts import check_keys
    from pipelines.extract import extract_batch
    from pipelines.lock import WarehouseLock
    from pipelines.run import new_run_id

    target = warehouse_target(settings)
    run_id = new_run_id()
    (checked,) = check_keys(
        [api_key],
        str(settings.base_url),
        timeout=settings.request_timeout,
        rate_limit_per_minute=settings.rate_limit_per_minute or None,
    )
    if isinstance(checked, BaseException):
        _record_failure(settings, run_id, mode, checked)
        raise checked
    target.create_if_missing()
    extracted = extract_batch(
        [checked],
        mode=mode,
        settings=settings,
        warehouse=target,
        run_id=run_id,
        read_lock=WarehouseLock(target, "sync (reading the warehouse)", shared=True, timeout_s=settings.lock_timeout_s),
    )
    (plan,) = extracted.batch.plans
    if plan.error is not None:
        _record_failure(settings, run_id, mode, plan.error, extracted)
        raise plan.error
    return extracted


def _record_failure(
    settings: OutreachSettings, run_id: str, mode: str, error: BaseException, extracted: Any = None
) -> None:
    """The failed attempt's run record, written if the warehouse takes it (never masks the error)."""
    from datetime import datetime

    from pipelines.extract import run_record
    from pipelines.lock import warehouse_writer
    from pipelines.runs import record_failed_runs, run_row

    target = warehouse_target(settings)
    if extracted is not None:
        rows = [run_record(extracted, plan, [], error) for plan in extracted.batch.plans]
    else:  # the key named no workspace
        line = str(error).splitlines()[0] if str(error) else type(error).__name__
        rows = [run_row(run_id=run_id, workspace_id=None, workspace_name="key", mode=mode,
                        started_at=datetime.now(UTC), outcome="failed", rows_loaded={}, requests=1,
                        error=line)]  # fmt: skip
    try:
        with warehouse_writer(target, what="run record", shared=True, timeout_s=min(settings.lock_timeout_s, 30)):
            target.create_if_missing()
            record_failed_runs(target, settings.pipelines_dir, rows)
    except Exception:  # noqa: BLE001 - the failure itself is what the task reports
        pass


def load(extracted: Any) -> Any:
    """Load what :func:`extract` produced (the caller holds the warehouse lock); the workspace's report."""
    from pipelines.load import load_batch

    (report,) = load_batch(extracted)
    (plan,) = extracted.batch.plans
    if plan.error is not None:
        raise plan.error
    return report


def sync_report_markdown(
    mode: str, workspace_reports: list[Any], destination: str, seconds: float, events_loaded: int = 0
) -> str:
    """Render loaded workspaces' reports with the pipeline's own markdown."""
    from pipelines.report import SyncReport

    report = SyncReport(
        mode=mode,
        workspaces=list(workspace_reports),
        seconds=seconds,
        destination=destination,
        events_loaded=events_loaded,
    )
    return report.to_markdown()


def load_spool(spool_dir: str | None, cfg: OutreachSettings) -> int:
    """Load webhook events from the spool (if it exists); returns how many (the caller holds the lock)."""
    from pipelines.run import load_spool_events

    if not spool_dir:
        return 0
    return load_spool_events(cfg, warehouse_target(cfg), spool_dir)


def build_models(target: Warehouse) -> Any:
    """Build the reporting schema of ``target`` (a DuckDB file or PostgreSQL) with dbt (models and data tests,
    all or nothing), without publishing.

    ``models.build.build`` runs ``dbt build``: models are built beside the published ones and swapped
    in only when every model and test passed, so a failing test leaves the previous reporting tables:
    the two stages are one call. Raises ``models.errors.BuildFailed`` naming each failing model or test.
    """
    from models.build import build

    if target.duckdb_path is not None:
        return build(duckdb_path=target.duckdb_path, publish=False)
    return build(destination=target.destination, publish=False)


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
