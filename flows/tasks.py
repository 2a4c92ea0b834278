"""Prefect tasks of the sync flows: the sync itself, the model build, alerts, the BI publish, the dashboard and the
run's report. Each writer task holds the warehouse lock every writer takes (``pipelines.warehouse.lock``) and
carries the writer tag, so a Prefect tag limit can serialise them across machines.
"""

from __future__ import annotations

from typing import Any, Literal, cast

from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from flows import stages
from flows.keys import resolve_api_key
from flows.retry import SYNC_RETRY_DELAYS, retitled, retry_unless_permanent, with_ref
from flows.run_lock import WRITER_TAG
from flows.run_report import StageClock, WorkspaceResult
from pipelines.core.config import OutreachSettings
from pipelines.core.deadline import SyncInterrupted
from pipelines.core.errors import OutreachError
from pipelines.sync import run
from pipelines.warehouse.destination import warehouse_target
from pipelines.warehouse.lock import warehouse_writer

Mode = Literal["quick", "full"]

# Never cache or persist a stage's result: reports hold no secret, but a sync must run every time it is asked.
_NO_RESULTS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
# A task that writes the reporting tables; the tag lets a Prefect tag limit serialise them across machines.
_WRITER: dict[str, Any] = {**_NO_RESULTS, "tags": [WRITER_TAG]}


def quoted(settings: OutreachSettings) -> OutreachSettings:
    """The settings in Prefect's `quote` (not walked for futures); the task receives them unwrapped, hence the type."""
    return cast(OutreachSettings, quote(settings))


def _writer(settings: OutreachSettings, what: str) -> Any:
    """The warehouse lock of a task that writes the reporting tables (exclusive, like `outreach models`)."""
    return warehouse_writer(warehouse_target(settings), what=what, timeout_s=settings.lock_timeout_s)


@task(
    name="sync",
    retries=len(SYNC_RETRY_DELAYS),
    retry_delay_seconds=SYNC_RETRY_DELAYS,
    retry_condition_fn=retry_unless_permanent,
    **_NO_RESULTS,
)
def sync_task(key_refs: list[str], mode: Mode, settings: OutreachSettings) -> Any:
    """Resolve the keys from their references, then run `outreach sync`'s one function over them
    (`pipelines.sync.run.sync`: preflight, warehouse lock, key check, demo-warehouse guard, extract and load)."""
    keys = []
    for ref in key_refs:
        try:
            keys.append(resolve_api_key(ref))
        except OutreachError as exc:
            raise with_ref(exc, ref) from exc
    try:
        return run.sync(settings, mode=mode, api_keys=keys, progress=False)
    except SyncInterrupted:  # a signal stopped it (`stop_on_signals` of the caller): aborted, neither failed nor
        raise KeyboardInterrupt from None  # retried, as Prefect ends a run that a KeyboardInterrupt stopped
    except OutreachError as exc:
        if len(key_refs) == 1:
            raise with_ref(exc, key_refs[0]) from exc
        raise retitled(exc, f"batch [{', '.join(key_refs)}]: {exc}") from exc


@task(name="build-models-and-data-tests", **_WRITER)
def build_models_task(settings: OutreachSettings) -> Any:
    """Build ``reporting`` and run the data tests in one transaction (a failing test rolls back)."""
    with _writer(settings, "model build"):
        return stages.build_models(warehouse_target(settings))


@task(name="alerts", **_WRITER)
def alerts_task(settings: OutreachSettings) -> str:
    """Evaluate the alert rules on the new build: incidents, their notifications and events, the opt-in guard.
    Never fails the run (its one line says why it did not evaluate)."""
    with _writer(settings, "alerts"):
        return stages.evaluate_alerts(warehouse_target(settings))


@task(name="publish-bi", **_WRITER)
def publish_bi_task(settings: OutreachSettings) -> str:
    """Publish the reporting tables to ``<stem>_bi.duckdb`` by atomic rename (a DuckDB warehouse only: BI tools
    read a server warehouse directly)."""
    target = warehouse_target(settings)
    if target.duckdb_path is None:
        return ""
    with _writer(settings, "BI publish"):
        return str(stages.publish_bi(str(target.duckdb_path)))


@task(name="write-dashboard", **_NO_RESULTS)
def write_dashboard_task(bi_path: str) -> str:
    """Write the HTML dashboard from the BI file just published; returns the artifact's line about it."""
    return stages.write_dashboard(bi_path)


@task(name="publish-report", **_NO_RESULTS)
def publish_report_task(markdown: str, key: str | None, description: str) -> None:
    """Publish the run's markdown artifact."""
    create_markdown_artifact(markdown=markdown, key=key, description=description)


def sync_markdown(mode: str, results: list[WorkspaceResult], destination: str, seconds: float) -> str:
    """The pipeline's own report of the loaded workspaces (rows, requests, 429s, bodies deferred)."""
    reports = [r.sync_report for r in results if r.ok and r.sync_report is not None]
    if not reports:
        return ""
    events = sum(r.events_loaded for r in results if r.ok)
    return stages.sync_report_markdown(mode, reports, destination, seconds, events)


def models_stages(settings: OutreachSettings, clock: StageClock) -> tuple[Any, str]:
    """Build, test, publish and draw the dashboard; returns the build report and the dashboard's line."""
    build_clock = StageClock()
    with build_clock.stage("build"):
        report = build_models_task(quoted(settings))
    tests_s = stages.data_test_seconds(report)
    clock.add("build models", max(0.0, build_clock.seconds["build"] - tests_s))
    clock.add("data tests", tests_s)
    with clock.stage("alerts"):
        get_run_logger().info("%s", alerts_task(quoted(settings)))
    with clock.stage("publish BI"):
        bi_path = publish_bi_task(quoted(settings))
    if not bi_path:  # a server warehouse: no BI file, no dashboard drawn from it
        return report, ""
    with clock.stage("dashboard"):
        dashboard = write_dashboard_task(bi_path)
    return report, dashboard
