"""Prefect flows: ``sync_workspace`` (one API key) and ``sync_all`` (every workspace, then models).

Stages are tasks running the same engine as `outreach sync` (``flows.stages``). Extract+normalize and
load retry with backoff on errors a retry can fix (network, 5xx/429 after the client's own retries);
errors a retry cannot fix (bad key, no permission, bad config) fail the task at once. Loads, the model
build and the BI publish hold the warehouse lock every writer takes (``pipelines.lock``: shared for
loads and exclusive for the build on PostgreSQL; one writer on DuckDB). Settings are resolved once per
flow run from the parameters and dlt config. Keys travel as references (``flows.keys``) and are resolved
inside the extract task, so they never appear in a parameter, a log line, a state or an artifact.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from prefect import flow, get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, TaskRun
from prefect.tasks import Task
from prefect.utilities.annotations import quote

from flows import batches, handoff, stages
from flows.keys import configured_key_refs, parse_key_ref, resolve_api_key, where_the_key_lives
from flows.logs import route_library_logs_to_prefect
from flows.run_lock import WRITER_TAG, exclusive_sync_run
from flows.run_report import StageClock, WorkspaceResult, render_run_markdown
from pipelines.config import OutreachSettings
from pipelines.diagnose import chain
from pipelines.errors import (
    AuthError,
    ConfigError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    OutreachError,
)
from pipelines.lock import warehouse_writer

if TYPE_CHECKING:
    from pipelines.report import SyncReport

Mode = Literal["quick", "full"]

#: Errors that a retry cannot fix: the task fails on the first attempt.
PERMANENT_ERRORS: tuple[type[BaseException], ...] = (
    AuthError,
    ForbiddenError,
    ConfigError,
    NotFoundError,
    InvalidRequestError,
)

EXTRACT_RETRY_DELAYS: list[float] = [2, 10, 30]
LOAD_RETRY_DELAYS: list[float] = [5, 20]

route_library_logs_to_prefect()


class SyncRunFailed(OutreachError):
    """Raised by ``sync_all`` when at least one workspace or the model build failed."""


def is_permanent(exc: BaseException) -> bool:
    """A bad key, no permission, bad config, or a dlt terminal error anywhere in the cause chain."""
    from dlt.common.exceptions import TerminalException

    return any(isinstance(e, (*PERMANENT_ERRORS, TerminalException)) for e in chain(exc))


def retry_unless_permanent(task: Task[..., Any], task_run: TaskRun, state: State[Any]) -> bool:
    """``retry_condition_fn``: retry network and server trouble, never a bad key or bad config."""
    try:
        state.result(raise_on_failure=True)
    except BaseException as exc:  # noqa: BLE001 - classify whatever the task raised
        return not is_permanent(exc)
    return True


def _with_ref(exc: OutreachError, key_ref: str) -> OutreachError:
    """The same error type, its message naming the workspace's key reference (and where the key lives)."""
    ref = parse_key_ref(key_ref)
    message = f"workspace {ref}: {exc}"
    if isinstance(exc, (AuthError, ForbiddenError)):
        message += f" ({where_the_key_lives(ref)})"
    return _retitled(exc, message)


def _retitled(exc: OutreachError, message: str) -> OutreachError:
    """An error of the same type (so retry rules still see it) with ``message``; ours if the type can't take one."""
    try:
        return type(exc)(message)
    except TypeError:
        return OutreachError(message)


# Stages move data and return live objects: never cache or persist their results.
_NO_RESULTS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False}
# A writer task holds the warehouse lock; the tag lets a Prefect tag limit serialise writers across machines.
_WRITER: dict[str, Any] = {**_NO_RESULTS, "tags": [WRITER_TAG]}
# Loads retry what a retry can fix (network, a busy file), never a permanent error.
_LOAD_RETRIES: dict[str, Any] = {
    "retries": len(LOAD_RETRY_DELAYS),
    "retry_delay_seconds": LOAD_RETRY_DELAYS,
    "retry_condition_fn": retry_unless_permanent,
}


@task(
    name="extract-normalize",
    retries=len(EXTRACT_RETRY_DELAYS),
    retry_delay_seconds=EXTRACT_RETRY_DELAYS,
    retry_condition_fn=retry_unless_permanent,
    **_NO_RESULTS,
)
def extract_task(key_ref: str, mode: Mode, settings: OutreachSettings) -> Any:
    """Resolve the key from its reference, then extract and normalize (no warehouse writes)."""
    try:
        api_key = resolve_api_key(key_ref)
        return stages.extract(api_key, mode=mode, settings=settings)
    except OutreachError as exc:
        raise _with_ref(exc, key_ref) from exc


def _quoted(settings: OutreachSettings) -> OutreachSettings:
    """The settings in Prefect's `quote` (not walked for futures); the task receives them unwrapped, hence the type."""
    return cast(OutreachSettings, quote(settings))


def _writer(settings: OutreachSettings, what: str, *, shared: bool = False) -> Any:
    """The warehouse lock of a writing task (shared: a load, which may run beside other loads on a server)."""
    return warehouse_writer(stages.warehouse(settings), what=what, shared=shared, timeout_s=settings.lock_timeout_s)


@task(name="load", **_LOAD_RETRIES, **_WRITER)
def load_task(extracted: str, settings: OutreachSettings, key_ref: str) -> Any:
    """Load one workspace's normalized package (``extracted``: a ``flows.handoff`` token), holding the
    warehouse lock."""
    try:
        with _writer(settings, f"load of {key_ref}", shared=True):
            return stages.load(handoff.receive(extracted))
    except OutreachError as exc:
        raise _with_ref(exc, key_ref) from exc


@task(name="build-models-and-data-tests", **_WRITER)
def build_models_task(settings: OutreachSettings) -> Any:
    """Build ``reporting`` and run the data tests in one transaction (a failing test rolls back)."""
    with _writer(settings, "model build"):
        return stages.build_models(stages.warehouse(settings))


@task(name="alerts", **_WRITER)
def alerts_task(settings: OutreachSettings) -> str:
    """Evaluate the alert rules on the new build: incidents, their notifications and events, the opt-in guard.
    Never fails the run (its one line says why it did not evaluate)."""
    with _writer(settings, "alerts"):
        return stages.evaluate_alerts(stages.warehouse(settings))


@task(name="publish-bi", **_WRITER)
def publish_bi_task(settings: OutreachSettings) -> str:
    """Publish the reporting tables to ``<stem>_bi.duckdb`` by atomic rename (a DuckDB warehouse only: BI tools
    read a server warehouse directly)."""
    target = stages.warehouse(settings)
    if target.duckdb_path is None:
        return ""
    with _writer(settings, "BI publish"):
        return str(stages.publish_bi(str(target.duckdb_path)))


@task(name="write-dashboard", **_NO_RESULTS)
def write_dashboard_task(bi_path: str) -> str:
    """Write the HTML dashboard from the BI file just published; returns the artifact's line about it."""
    return stages.write_dashboard(bi_path)


@task(name="load-spool", **_LOAD_RETRIES, **_WRITER)
def load_spool_task(spool_dir: str, settings: OutreachSettings) -> int:
    """Load the webhook events waiting in the spool before the API is read."""
    with _writer(settings, "spool load", shared=True):
        return stages.load_spool(spool_dir, settings)


@task(name="publish-report", **_NO_RESULTS)
def publish_report_task(markdown: str, key: str | None, description: str) -> None:
    """Publish the run's markdown artifact."""
    create_markdown_artifact(markdown=markdown, key=key, description=description)


def sync_markdown(
    mode: str, results: list[WorkspaceResult], destination: str, seconds: float, events_loaded: int = 0
) -> str:
    """The pipeline's own report of the loaded workspaces (rows, requests, 429s, bodies deferred)."""
    reports = [r.sync_report for r in results if r.ok and r.sync_report is not None]
    if not reports:
        return ""
    return stages.sync_report_markdown(mode, reports, destination, seconds, events_loaded)


def _models_stages(settings: OutreachSettings, clock: StageClock) -> tuple[Any, str]:
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


def _extract_and_load(key_ref: str, mode: Mode, settings: OutreachSettings, clock: StageClock) -> Any:
    with clock.stage("extract+normalize"):
        extracted = extract_task(key_ref, mode, _quoted(settings))
    with clock.stage("load"), handoff.handed_over(extracted) as token:
        return load_task(token, _quoted(settings), key_ref)


def _settings(
    duckdb_path: str | None,
    base_url: str | None,
    rate_limit_per_minute: int | None,
    reply_body_cap: int | None,
    pipelines_dir: str | None,
) -> OutreachSettings:
    """The flow run's settings, resolved once: its parameters over dlt config over defaults."""
    return stages.settings(
        duckdb_path=duckdb_path,
        base_url=base_url,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        pipelines_dir=pipelines_dir,
    )


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
) -> WorkspaceResult:
    """Sync one workspace, named by a key reference (``secret:<block>``, ``config:<n>``, ``env:<VAR>``).

    With ``build_models`` it then builds the models, runs the data tests and publishes the BI
    file; ``sync_all`` turns that off and builds once after every workspace has loaded.
    """
    logger = get_run_logger()
    parse_key_ref(key_ref)  # fail fast on a malformed reference
    settings = _settings(duckdb_path, base_url, rate_limit_per_minute, reply_body_cap, pipelines_dir)
    destination = stages.warehouse(settings).label
    clock = StageClock()
    report = _extract_and_load(key_ref, mode, settings, clock)
    result = WorkspaceResult(key_ref=key_ref, ok=True, sync_report=report, stages=clock.seconds)
    build_report, dashboard = None, ""
    if build_models:
        run_clock = StageClock()
        build_report, dashboard = _models_stages(settings, run_clock)
        result.stages = {**clock.seconds, **run_clock.seconds}
    markdown = render_run_markdown(
        title=f"outreach sync of {key_ref}",
        mode=mode,
        workspaces=[WorkspaceResult(key_ref, True, "", report, clock.seconds)],
        run_stages={k: v for k, v in result.stages.items() if k not in clock.seconds},
        sync_markdown=sync_markdown(mode, [result], destination, sum(clock.seconds.values())),
        build_report=build_report,
        dashboard=dashboard,
    )
    publish_report_task(markdown, None, f"{mode} sync of {key_ref}")
    logger.info("workspace %s loaded in %.1f s", key_ref, sum(clock.seconds.values()))
    return result


def _warm_imports() -> None:
    """Import what extraction uses before threads start: concurrent first imports of pandas can fail."""
    import dlt  # noqa: F401
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401

    import pipelines.extract
    import pipelines.load  # noqa: F401


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


@task(name="sync-workspaces", **_LOAD_RETRIES, **_NO_RESULTS)
def sync_workspaces_task(key_refs: list[str], mode: Mode, settings: OutreachSettings) -> Any:
    """Resolve the batch's keys from their references, then run `outreach sync`'s engine over them: one dlt
    load per ``batch_size`` workspaces, a run record per workspace, the warehouse lock for the run (shared on
    PostgreSQL; on DuckDB the batches of one machine take turns)."""
    from pipelines.run import run_sync

    keys = []
    for ref in key_refs:
        try:
            keys.append(resolve_api_key(ref))
        except OutreachError as exc:
            raise _with_ref(exc, ref) from exc
    try:
        return run_sync(mode=mode, settings=settings, api_keys=keys, progress=False)
    except OutreachError as exc:
        raise _retitled(exc, f"batch [{', '.join(key_refs)}]: {exc}") from exc


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
    settings = _settings(duckdb_path, base_url, rate_limit_per_minute, reply_body_cap, pipelines_dir)
    destination = stages.warehouse(settings).label
    started = time.monotonic()
    report = cast("SyncReport", sync_workspaces_task(refs, mode, _quoted(settings)))
    seconds = time.monotonic() - started
    markdown = stages.sync_report_markdown(mode, list(report.workspaces), destination, seconds, report.events_loaded)
    publish_report_task(markdown, None, f"{mode} sync of a batch of {len(refs)} workspace(s)")
    logger.info("batch of %d workspace(s) loaded in %.1f s", len(refs), seconds)
    return len(report.workspaces)


def _in_process(refs: list[str], params: dict[str, Any], max_parallel: int) -> list[WorkspaceResult]:
    """One ``sync_workspace`` subflow per workspace, in threads of this process."""
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
) -> list[WorkspaceResult]:
    """Sync every workspace, then build the models once.

    In this process (one ``sync_workspace`` subflow each, ``max_parallel`` at a time), or, when this run is
    a deployment run on a work pool and ``batch_deployment`` (prefect.yaml: ``sync-batch/batch``) is
    registered, as runs of that deployment, ``batch_size`` workspaces each (default: the workspaces spread
    over ``max_parallel`` runs), which the pool's workers share; the models are built after all ended.

    ``key_refs`` defaults to one ``config:<n>`` per key in dlt config. ``spool_dir`` (default the
    warehouse's own spool, ``data/outreach_spool``, if it exists) holds webhook events, loaded first.
    A workspace that fails does not stop the others; their data stays loaded and the models are built from it, and
    then this flow fails naming each failed workspace and its reason.
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
    settings = _settings(duckdb_path, base_url, rate_limit_per_minute, reply_body_cap, pipelines_dir)
    target = stages.warehouse(settings)
    destination = target.label
    params: dict[str, Any] = dict(
        mode=mode,
        duckdb_path=str(target.duckdb_path) if target.is_duckdb else None,
        base_url=base_url,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        pipelines_dir=pipelines_dir,
    )
    clock = StageClock()
    spool = stages.spool_path(spool_dir)
    events_loaded = 0
    deployment_name = batches.hand_out_to(batch_deployment)
    if deployment_name is None:
        _warm_imports()
    with exclusive_sync_run():
        if spool:
            with clock.stage("load spool"):
                events_loaded = load_spool_task(spool, _quoted(settings))
        if deployment_name is not None:
            # each worker resolves its own settings: pass only what this run was given, not this machine's paths
            handed = {**params, "duckdb_path": duckdb_path}
            with clock.stage("workspaces (batch runs)"):
                results = _handed_out(deployment_name, refs, handed, batch_size, max_parallel)
        else:
            with clock.stage("workspaces (concurrent)"):
                results = _in_process(refs, params, max_parallel)
        build_report, build_error, dashboard = None, "", ""
        if any(r.ok for r in results):
            try:
                build_report, dashboard = _models_stages(settings, clock)
            except Exception as exc:  # noqa: BLE001 - reported in the artifact, then re-raised below
                build_error = str(exc) or type(exc).__name__
    markdown = render_run_markdown(
        title="outreach sync",
        mode=mode,
        workspaces=results,
        run_stages=clock.seconds,
        sync_markdown=sync_markdown(
            mode, results, destination, clock.seconds.get("workspaces (concurrent)", 0.0), events_loaded
        ),
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
