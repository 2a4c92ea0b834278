"""Prefect flows: ``sync_workspace`` (one API key) and ``sync_all`` (every workspace, then models).

The sync itself is one task (``flows.tasks``, with the build, alerts, BI publish and dashboard tasks) that
calls the function `outreach sync` calls (``pipelines.sync.run.sync``), with its guards (preflight, warehouse
lock, key check, demo-warehouse guard); the flows add only scheduling, retries, concurrency limits and
artifacts. The sync task retries with backoff on errors a retry can fix (network, 5xx/429 after the client's
own retries); errors a retry cannot fix (bad key, no permission, bad config) fail it at once. The model build
and the BI publish hold the warehouse lock every writer takes (``pipelines.warehouse.lock``). Settings are
resolved once per flow run from the parameters and dlt config. Keys travel as references (``flows.keys``) and
are resolved inside the sync task, so they never appear in a parameter, a log line, a state or an artifact.
"""

from __future__ import annotations

import functools
import logging
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from prefect import flow, get_run_logger

from flows import batches, stages
from flows.keys import configured_key_refs, one_ref_per_key, parse_key_ref
from flows.logs import route_library_logs_to_prefect
from flows.run_lock import exclusive_sync_run
from flows.run_report import StageClock, WorkspaceResult, render_run_markdown
from flows.tasks import Mode, models_stages, publish_report_task, quoted, sync_markdown, sync_task
from pipelines.core.config import OutreachSettings, resolve_settings
from pipelines.core.errors import ConfigError, OutreachError
from pipelines.core.fanout import map_in_threads
from pipelines.sync import run
from pipelines.sync.claims import one_sync_per_workspace
from pipelines.warehouse.destination import warehouse_target

if TYPE_CHECKING:
    from pipelines.core.report import SyncReport, WorkspaceReport

route_library_logs_to_prefect()


class SyncRunFailed(OutreachError):
    """Raised by ``sync_all`` when at least one workspace or the model build failed."""


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
    report = cast("SyncReport", sync_task([key_ref], mode, quoted(settings)))
    if not report.workspaces:  # another subflow of the run syncs this key's workspace (its line is logged)
        return WorkspaceResult(key_ref, True)
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
    report = cast("SyncReport", sync_task(refs, mode, quoted(settings)))
    markdown = stages.sync_report_markdown(
        mode, list(report.workspaces), destination, report.seconds, report.events_loaded
    )
    publish_report_task(markdown, None, f"{mode} sync of a batch of {len(refs)} workspace(s)")
    logger.info("batch of %d workspace(s) loaded in %.1f s", len(refs), report.seconds)
    return len(report.workspaces)


def _in_process(refs: list[str], params: dict[str, Any], max_parallel: int) -> list[WorkspaceResult]:
    """One ``sync_workspace`` subflow per workspace, in threads of this process."""
    run.preload_libraries()  # concurrent first imports of pandas can fail
    with one_sync_per_workspace():  # a workspace two of the keys open is synced by the first subflow to ask
        return map_in_threads(
            functools.partial(_run_workspace, **params), refs, workers=max_parallel, name="outreach-workspace"
        )


def _handed_out(
    deployment_name: str, refs: list[str], params: dict[str, Any], batch_size: int | None, max_parallel: int
) -> list[WorkspaceResult]:
    """The first batch of workspaces synced by this run itself, every other one as a run of the batch deployment,
    taken by the pool's workers; waits for all. This run holds a slot of its worker anyway: waiting idle there, it
    would leave the pool a batch short, run later in a process started for it."""
    logger = get_run_logger()
    own, *others = batches.split(refs, batches.batch_size_for(len(refs), batch_size, max_parallel))
    runs = batches.start_batches(deployment_name, others, params)
    logger.info(
        "%d workspace(s): %d synced by this run, the others handed out as %d run(s) of %s",
        len(refs),
        len(own),
        len(runs),
        deployment_name,
    )
    try:
        sync_batch(key_refs=own, **params)
        results = [WorkspaceResult(key_ref=ref, ok=True, error="") for ref in own]
    except Exception as exc:  # noqa: BLE001 - its workspaces are reported failed; the handed-out ones go on
        results = [WorkspaceResult(key_ref=ref, ok=False, error=f"this run's batch: {exc}") for ref in own]
    for outcome in batches.wait_for(runs, others):
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
    registered, in batches of ``batch_size`` workspaces (default: the workspaces spread over ``max_parallel``
    batches): this run syncs the first, the pool's workers the others as runs of that deployment; the models
    are built after all ended.

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
    refs, left_out = one_ref_per_key(refs, settings)
    for line in left_out:
        logger.warning("%s", line)
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
