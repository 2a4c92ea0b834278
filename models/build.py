"""Build `reporting` with dbt, all or nothing, and publish the BI file (what `outreach models` runs).

`dbt build` runs with the var `atomic_build`: models are built as `<name>__next` and the on-run-end hook
swaps them in only when every model and test passed (macros/atomic_build.sql), so a failure leaves the
published tables (and the BI file, published only after a good build) exactly as they were.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from models import PROJECT_DIR, change_share
from models.ab_store import write_variant_tests
from models.dbt_invoke import Invocation, invoke
from models.errors import BuildInterrupted, DataTestFailure, ModelBuildError
from models.freshness import check_freshness
from models.preflight import check_warehouse
from models.progress import BuildProgress
from models.publish import publish_bi
from models.report import BuildReport, NodeResult
from models.settings import dbt_state_dir, resolve_target
from pipelines.core.deadline import interrupted, stop_on_signals
from pipelines.warehouse.destination import Warehouse

log = logging.getLogger(__name__)

ATOMIC_VARS = {"atomic_build": True}
#: the dbt var that carries project_fingerprint() to the incremental snapshot (macros/incremental.sql)
FINGERPRINT_VAR = "build_fingerprint"


def build(
    warehouse: Warehouse | str | Path | None = None,
    *,
    destination: str | None = None,
    publish: bool = True,
    project_dir: Path = PROJECT_DIR,
    dbt_vars: dict[str, Any] | None = None,
    before_publish: Callable[[], None] | None = None,
    full_refresh: bool = False,
    progress: BuildProgress | None = None,
) -> BuildReport:
    """Run `dbt source freshness` and `dbt build` on the warehouse; on DuckDB then publish the BI file (unless
    `publish` is False). A stale source is reported (`report.freshness`), never a reason to fail.

    `warehouse`: the one the caller resolved, or a DuckDB path (None: the configured warehouse, or
    `destination`).

    `before_publish` runs after a passing build, before the BI file is published (the caller's step that
    writes to `reporting` too, such as the alert incidents, so the BI file has them).

    `full_refresh` rebuilds the incremental models from every row (dbt's `--full-refresh`) instead of only the
    keys the syncs changed since the last good build (models/macros/incremental.sql).

    `dbt_vars` are passed to dbt as `--vars` (e.g. `{"extra_reply_classes": {"out_of_office_v2": "auto_reply"}}`);
    they override the project's vars of the same name (dbt_project.yml).

    `progress` follows the build's stages and dbt's nodes (`outreach models` shows it).

    Raises WarehouseError before dbt runs (missing, unsynced or unreadable warehouse), ModelBuildError
    (a model or the run failed) or DataTestFailure (only data tests failed): in every case the published
    reporting tables and the BI file are unchanged. PublishError: the build passed, the BI file is the old one.
    BuildInterrupted (a KeyboardInterrupt) on Ctrl-C: its message says what the build left, and what to run.
    """
    target = warehouse if isinstance(warehouse, Warehouse) else resolve_target(warehouse, destination)
    progress = progress or BuildProgress()
    stage = "start"  # where a Ctrl-C finds the build (BuildInterrupted)
    with _ctrl_c_says_what_it_left(lambda: stage):
        progress.set_stage("checking the warehouse")
        check_warehouse(target)
        variables = {**(dbt_vars or {}), **ATOMIC_VARS}  # the build's vars: freshness and the build share one parse
        variables[FINGERPRINT_VAR] = project_fingerprint(project_dir, variables)
        # where an incremental build would rebuild every lead anyway, building from every row costs less
        why_every_row = "" if full_refresh else change_share.why_every_row(target, variables[FINGERPRINT_VAR])
        if why_every_row:
            log.info("%s: every mart is rebuilt from every row, as with --full-refresh", why_every_row)
        every_row = full_refresh or bool(why_every_row)
        progress.set_stage("A/B statistics")
        # dbt-postgres runs no Python: the A/B statistics are computed before dbt (kept when their inputs are unchanged)
        write_variant_tests(target, recompute=full_refresh)
        # One parse for both commands. A project that does not parse leaves None: each command then reports it.
        progress.set_stage("parsing the project")
        manifest = invoke(["parse"], target, dbt_vars=variables, project_dir=project_dir).manifest
        progress.set_stage("source freshness")
        freshness = check_freshness(target, dbt_vars=variables, project_dir=project_dir, manifest=manifest)
        _check_interrupted(stage)  # a Ctrl-C that DuckDB turned into a failed freshness query
        # DuckDB renames the published incremental tables aside for the build; PostgreSQL builds copies beside them
        stage = ("aside" if not every_row else "start") if target.is_duckdb else "copies"
        progress.set_stage("building")
        report = run_build(
            target, project_dir, variables, full_refresh=every_row, manifest=manifest, watch=progress.on_dbt_event
        )
        report.freshness, report.every_row = freshness, why_every_row
        if not report.passed:
            # a model or a hook (the swap) that failed is a failed build; only tests failing is a data test failure
            failed_nodes = [
                r for r in report.results if r.failed and r.status != "skipped" and r.resource_type != "test"
            ]
            raise (ModelBuildError if report.error or failed_nodes else DataTestFailure)(report)
        stage = "built"
        _check_interrupted(stage)
        if before_publish is not None:
            before_publish()
            _check_interrupted(stage)
        if publish and target.duckdb_path is not None:
            progress.set_stage("publishing the BI file")
            started = time.perf_counter()
            report.bi_path, rows = publish_bi(target.duckdb_path)
            report.publish_seconds = time.perf_counter() - started
            for model in report.models:
                model.rows = rows.get(model.name, model.rows)
    log.info(
        "models built in %.2fs (%d models, %d tests) on %s",
        report.seconds,
        len(report.models),
        len(report.tests),
        target.label,
    )
    return report


@contextlib.contextmanager
def _ctrl_c_says_what_it_left(stage: Callable[[], str]) -> Iterator[None]:
    """A Ctrl-C (or SIGTERM), whatever became of it on its way up, leaves the build as BuildInterrupted, which says
    what the build left at `stage()`. On its way up, dbt's runner catches the KeyboardInterrupt (`invoke` raises it
    again), DuckDB turns one during a query into its own RuntimeError('Query interrupted'), with nothing in its
    chain, and one raised in a weakref callback is lost: so the signal itself is noted (`stop_on_signals`), and
    `_check_interrupted` stops the build at its next stage after a lost one."""
    with stop_on_signals(raise_in_main=True, again="the next build puts right what this one left"):
        try:
            yield
        except KeyboardInterrupt:
            raise BuildInterrupted(stage(), interrupted() or signal.SIGINT) from None
        except Exception:
            if interrupted():
                raise BuildInterrupted(stage(), interrupted()) from None
            raise


def _check_interrupted(stage: str) -> None:
    """Stop at a stage's end after a signal whose KeyboardInterrupt was lost on its way up."""
    if interrupted():
        raise BuildInterrupted(stage, interrupted())


def project_fingerprint(project_dir: Path, variables: dict[str, Any]) -> str:
    """SHA-256 of the dbt project's files (SQL and YAML, outside dbt's target and log folders) and the build's
    vars. The incremental snapshot keeps it: a build whose project or vars differ from the last good build's
    cannot trust what that build computed or tested, and recomputes and tests every key."""
    digest = hashlib.sha256(json.dumps(variables, sort_keys=True, default=str).encode())
    tops = [top for top in project_dir.iterdir() if top.name not in ("target", "logs")]
    files = [path for top in tops for path in ([top] if top.is_file() else top.rglob("*"))]
    for path in sorted(files):
        if path.suffix in (".sql", ".yml") and path.is_file():
            digest.update(str(path.relative_to(project_dir)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run_build(
    target: Warehouse,
    project_dir: Path,
    variables: dict[str, Any],
    *,
    full_refresh: bool,
    manifest: Any,
    watch: Callable[[Any], None] | None = None,
) -> BuildReport:
    """`dbt build` with the build's vars (ATOMIC_VARS among them: the atomic swap); the report says what passed
    (it never raises for a failing node). `manifest`: a `dbt parse` outcome made with the same vars
    (models.dbt_invoke.invoke); `watch` sees dbt's events."""
    command = ["build", "--full-refresh"] if full_refresh else ["build"]
    outcome = invoke(command, target, dbt_vars=variables, project_dir=project_dir, manifest=manifest, watch=watch)
    return report_from(outcome, target)


def report_from(outcome: Invocation, target: Warehouse) -> BuildReport:
    samples = _samples(outcome.notes)
    report = BuildReport(target=target.label, warnings=list(outcome.warnings), seconds=outcome.seconds)
    for result in outcome.results:
        node = result.node
        resource_type = str(node.resource_type)
        if resource_type not in ("model", "test", "operation"):
            continue
        report.results.append(
            NodeResult(
                name=node.name,
                resource_type=resource_type,
                status=str(result.status),
                seconds=float(result.execution_time or 0.0),
                message=str(result.message or ""),
                failures=result.failures,
                kind=str(getattr(node.config, "materialized", "")) if resource_type == "model" else "",
                sample=samples.get(node.name, ""),
            )
        )
    if outcome.exception is not None:
        report.error = f"dbt stopped: {outcome.error_line(500)}"
    elif not outcome.success and not any(r.failed for r in report.results):
        report.error = (
            "dbt reported a failure without a failing node (see the dbt log under "
            + str(dbt_state_dir(target) / "logs")
            + ")"
        )
    return report


def _samples(notes: list[str]) -> dict[str, str]:
    """`<status> <test name>: <rows>` lines of our on-run-end hook -> test name -> rows."""
    out: dict[str, str] = {}
    for note in notes:
        head, _, rows = note.partition(": ")
        parts = head.split(" ", 1)
        if len(parts) == 2 and parts[0] in ("fail", "warn"):
            out[parts[1]] = rows
    return out
