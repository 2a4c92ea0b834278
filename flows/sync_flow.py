"""Prefect flows: ``sync_workspace`` (one API key) and ``sync_all`` (every workspace, then models).

The sync itself is one task that calls the function `outreach sync` calls (``pipelines.sync.run.sync``), with its
guards (preflight, warehouse lock, key check, demo-warehouse guard); the flows add only scheduling, retries,
concurrency limits and artifacts. The sync task retries with backoff on errors a retry can fix (network,
5xx/429 after the client's own retries); errors a retry cannot fix (bad key, no permission, bad config) fail
it at once. The model build and the BI publish hold the warehouse lock every writer takes
(``pipelines.warehouse.lock``). Settings are resolved once per flow run from the parameters and dlt config. Keys
travel as references (``flows.keys``) and are resolved inside the sync task, so they never appear in a
parameter, a log line, a state or an artifact.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from flows import batches, stages
from flows.keys import configured_key_refs, parse_key_ref, resolve_api_key
from flows.logs import route_library_logs_to_prefect
from flows.retry import SYNC_RETRY_DELAYS, retitled, retry_unless_permanent, with_ref
from flows.run_lock import WRITER_TAG, exclusive_sync_run
from flows.run_report import StageClock, WorkspaceResult, render_run_markdown
from pipelines.core.config import OutreachSettings, resolve_settings
from pipelines.core.errors import ConfigError, OutreachError
from pipelines.sync import run
from pipelines.warehouse.destination import warehouse_target
from pipelines.warehouse.lock import warehouse_writer

if TYPE_CHECKING:
    from pipelines.core.report import SyncReport, WorkspaceReport

Mode = Literal["quick", "full"]

route_library_logs_to_prefect()


class SyncRunFailed(OutreachError):
    """Raised by ``sync_all`` when at least one workspace or the model build failed."""


# Never cache or persist a stage's result: reports hold no secret, but a sync must run every time it is asked.
_NO_RESULTS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
# A task that writes the reporting tables; the tag lets a Prefect tag limit serialise them across machines.
_WRITER: dict[str, Any] = {**_NO_RESULTS, "tags": [WRITER_TAG]}


def _quoted(settings: OutreachSettings) -> OutreachSettings:
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
        report = build_models_task(_quoted(settings))
    tests_s = stages.data_test_seconds(report)
    clock.add("build models", max(0.0, build_clock.seconds["build"] - tests_s))
    clock.add("data tests", tests_s)
    with clock.stage("alerts"):
        get_run_logger().info("%s", alerts_task(_quoted(settings)))
    with clock.stage("publish BI"):
        bi_path = publish_bi_task(_quoted(settings))
    if not bi_path:  # a server warehouse: no BI file, no dashboard drawn from it
        return report, ""
    with clock.stage("dashboard"):
        dashboard = write_dashboard_task(bi_path)
    return report, dashboard


def _stage_seconds(report: WorkspaceReport) -> dict[str, float]:
    """The artifact's two stages of one workspace, from the sync's own clock."""
    got = report.stage_seconds
    extract = sum(got.get(stage, 0.0) for stage in ("plan", "extract", "normalize"))
    return {"extract+normalize": round(extract, 3), "load": round(got.get("load", 0.0), 3)}


def settings_for(**explicit: Any) -> OutreachSettings:
    """The flow run's settings, resolved once: its parameters (None = not given) over dlt config over defaults."""
    return resolve_settings(**explicit)


@flow(
    name="sync-workspace",
    flow_run_name="sync-{mode}-{key_ref}",
    persist_result=False,
    validate_parameters=True,
)
def sync_workspace(
    mode: Mode = "quick",
    key_ref: str = "config:0",
    duckdb_path: str | None = None,
    base_url: str | None = None,
    build_models: bool = True,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    pipelines_dir: str | None = None,
    spool_dir: str | None = None,
) -> WorkspaceResult:
    """Sync one workspace, named by a key reference (``secret:<block>``, ``config:<n>``, ``env:<VAR>``).

    With ``build_models`` it then builds the models, runs the data tests and publishes the BI
    file; ``sync_all`` turns that off and builds once after every workspace has loaded.
    """
    logger = get_run_logger()
    parse_key_ref(key_ref)  # fail fast on a malformed reference
    settings = settings_for(
        duckdb_path=duckdb_path,
        base_url=base_url,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        pipelines_dir=pipelines_dir,
        spool_dir=spool_dir,
    )
    destination = warehouse_target(settings).label
    report = cast("SyncReport", sync_task([key_ref], mode, _quoted(settings)))
    (workspace,) = report.workspaces
    stages_s = _stage_seconds(workspace)
    result = WorkspaceResult(key_ref, True, "", workspace, stages_s, report.events_loaded)
    build_report, dashboard = None, ""
    if build_models:
        run_clock = StageClock()
        build_report, dashboard = models_stages(settings, run_clock)
        result.stages = {**stages_s, **run_clock.seconds}
    markdown = render_run_markdown(
        title=f"outreach sync of {key_ref}",
        mode=mode,
        workspaces=[WorkspaceResult(key_ref, True, "", workspace, stages_s)],
        run_stages={k: v for k, v in result.stages.items() if k not in stages_s},
        sync_markdown=sync_markdown(mode, [result], destination, report.seconds),
        build_report=build_report,
        dashboard=dashboard,
    )
    publish_report_task(markdown, None, f"{mode} sync of {key_ref}")
    logger.info("workspace %s loaded in %.1f s", key_ref, report.seconds)
    return result


def _run_workspace(key_ref: str, **params: Any) -> WorkspaceResult:
    """Run one ``sync_workspace`` subflow; its failure becomes a failed result.

    The subflow's return value is taken in memory, not from its final state: results are not
    persisted, and a state the engine re-reads from the API (after a slow server) has no data.
    """
    try:
        result: WorkspaceResult = sync_workspace(key_ref=key_ref, build_models=False, **params)
        return result
    except Exception as exc:  # noqa: BLE001 - we report every failure, then fail the parent
        return WorkspaceResult(key_ref=key_ref, ok=False, error=str(exc) or type(exc).__name__)


@flow(name="sync-batch", flow_run_name="sync-batch-{mode}", persist_result=False, validate_parameters=True)
def sync_batch(
    mode: Mode = "quick",
    key_refs: list[str] | None = None,
    duckdb_path: str | None = None,
    base_url: str | None = None,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    pipelines_dir: str | None = None,
) -> int:
    """Sync one batch of workspaces that ``sync_all`` handed out (no models: the parent builds them once).

    Settings are this worker's (its parameters over its dlt config), so every worker must name the same
    warehouse: one PostgreSQL server, or a DuckDB file when all workers run on its machine. Returns how
    many workspaces loaded.
    """
    logger = get_run_logger()
    refs = list(key_refs or [])
    if not refs:
        raise ConfigError("sync_batch needs key_refs: the batch of workspaces sync_all hands out")
    for ref in refs:
        parse_key_ref(ref)
    logger.info("batch run in %s on %s", Path.cwd(), socket.gethostname())
    settings = settings_for(
        duckdb_path=duckdb_path,
        base_url=base_url,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        pipelines_dir=pipelines_dir,
    )
    destination = warehouse_target(settings).label
    report = cast("SyncReport", sync_task(refs, mode, _quoted(settings)))
    markdown = stages.sync_report_markdown(
        mode, list(report.workspaces), destination, report.seconds, report.events_loaded
    )
    publish_report_task(markdown, None, f"{mode} sync of a batch of {len(refs)} workspace(s)")
    logger.info("batch of %d workspace(s) loaded in %.1f s", len(refs), report.seconds)
    return len(report.workspaces)


def _in_process(refs: list[str], params: dict[str, Any], max_parallel: int) -> list[WorkspaceResult]:
    """One ``sync_workspace`` subflow per workspace, in threads of this process."""
    run.preload_libraries()  # concurrent first imports of pandas can fail
    with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(refs)))) as pool:
        futures = [
            pool.submit(contextvars.copy_context().run, functools.partial(_run_workspace, ref, **params))
            for ref in refs
        ]
        return [future.result() for future in futures]


def _handed_out(
    deployment_name: str, refs: list[str], params: dict[str, Any], batch_size: int | None, max_parallel: int
) -> list[WorkspaceResult]:
    """One run of the batch deployment per batch of workspaces, taken by the pool's workers; waits for all."""
    logger = get_run_logger()
    batches_of_refs = batches.split(refs, batches.batch_size_for(len(refs), batch_size, max_parallel))
    runs = batches.start_batches(deployment_name, batches_of_refs, params)
    logger.info("%d workspace(s) handed out as %d run(s) of %s", len(refs), len(runs), deployment_name)
    results: list[WorkspaceResult] = []
    for outcome in batches.wait_for(runs, batches_of_refs):
        error = "" if outcome.ok else f"{outcome.flow_run_name}: {outcome.message}"
        results.extend(WorkspaceResult(key_ref=ref, ok=outcome.ok, error=error) for ref in outcome.refs)
    return results


@flow(name="sync-all", flow_run_name="sync-all-{mode}", persist_result=False, validate_parameters=True)
def sync_all(
    mode: Mode = "quick",
    key_refs: list[str] | None = None,
    duckdb_path: str | None = None,
    base_url: str | None = None,
    rate_limit_per_minute: int | None = None,
    reply_body_cap: int | None = None,
    pipelines_dir: str | None = None,
    spool_dir: str | None = None,
    max_parallel: int = 4,
    batch_deployment: str | None = None,
    batch_size: int | None = None,
    build_models: bool = True,
) -> list[WorkspaceResult]:
    """Sync every workspace, then build the models once (unless ``build_models`` is off).

    In this process (one ``sync_workspace`` subflow each, ``max_parallel`` at a time), or, when this run is
    a deployment run on a work pool and ``batch_deployment`` (prefect.yaml: ``sync-batch/batch``) is
    registered, as runs of that deployment, ``batch_size`` workspaces each (default: the workspaces spread
    over ``max_parallel`` runs), which the pool's workers share; the models are built after all ended.

    ``key_refs`` defaults to one ``config:<n>`` per key in dlt config. ``spool_dir`` (default the
    warehouse's own spool, ``data/outreach_spool``, if it exists) holds webhook events, loaded by the sync
    before the API is read. A workspace that fails does not stop the others; their data stays loaded and the
    models are built from it, and then this flow fails naming each failed workspace and its reason.
    """
    logger = get_run_logger()
    refs = list(key_refs) if key_refs else configured_key_refs()
    if not refs:
        raise ConfigError(
            "no workspace configured: set SOURCES__OUTREACH__API_KEYS (or SOURCES__OUTREACH__API_KEY), "
            "or pass key_refs such as ['secret:<block name>']"
        )
    for ref in refs:
        parse_key_ref(ref)
    given = dict(
        duckdb_path=duckdb_path,
        base_url=base_url,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        pipelines_dir=pipelines_dir,
    )
    settings = settings_for(**given, spool_dir=spool_dir)
    target = warehouse_target(settings)
    clock = StageClock()
    deployment_name = batches.hand_out_to(batch_deployment)
    with exclusive_sync_run():
        if deployment_name is not None:
            # each worker resolves its own settings: pass only what this run was given, not this machine's paths
            with clock.stage("workspaces (batch runs)"):
                results = _handed_out(deployment_name, refs, {"mode": mode, **given}, batch_size, max_parallel)
        else:
            local = {**given, "duckdb_path": str(target.duckdb_path) if target.is_duckdb else None}
            with clock.stage("workspaces (concurrent)"):
                results = _in_process(refs, {"mode": mode, **local, "spool_dir": spool_dir}, max_parallel)
        build_report, build_error, dashboard = None, "", ""
        if build_models and any(r.ok for r in results):
            try:
                build_report, dashboard = models_stages(settings, clock)
            except Exception as exc:  # noqa: BLE001 - reported in the artifact, then re-raised below
                build_error = str(exc) or type(exc).__name__
    markdown = render_run_markdown(
        title="outreach sync",
        mode=mode,
        workspaces=results,
        run_stages=clock.seconds,
        sync_markdown=sync_markdown(mode, results, target.label, clock.seconds.get("workspaces (concurrent)", 0.0)),
        build_report=build_report,
        build_error=build_error,
        dashboard=dashboard,
    )
    publish_report_task(markdown, f"outreach-sync-{mode}", f"{mode} sync of {len(refs)} workspace(s)")
    failed = [r for r in results if not r.ok]
    if failed or build_error:
        reasons = [f"{r.key_ref}: {r.error}" for r in failed]
        if build_error:
            reasons.append(f"models: {build_error}")
        message = f"{len(failed)} of {len(results)} workspace(s) failed; " + "; ".join(reasons)
        raise SyncRunFailed(message)
    logger.info("%s sync of %d workspace(s) done", mode, len(results))
    return results


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    sync_all(mode="quick")
