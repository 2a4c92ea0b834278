"""Extract: plan a batch of workspaces, then extract and normalize it into one dlt load package.

Nothing is written to the warehouse here; it is only read (state, stored bodies and pages) under the
caller's read lock. The batch's pipeline is named after its first workspace (``outreach_<workspace
id>``; a batch of one keeps the name a per-workspace pipeline always had) and has its own staging
dataset, so batches that load at once (PostgreSQL, several workers) never share staged rows.

The package holds the batch's data, then (a second source into the same package, extracted after
the data, `pipelines.sync.outcome`) one `sync_state` row per workspace that extracted everything and the
run records.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from pipelines.api.accounts import Workspace
from pipelines.core import constants
from pipelines.core.config import OutreachSettings
from pipelines.core.deadline import Deadline, interrupted
from pipelines.core.progress import WorkspaceProgress
from pipelines.source.batch import Batch, BodyLookup
from pipelines.source.drift import DriftGuard
from pipelines.source.plan import plan_batch, reguide
from pipelines.source.stored import WarehouseReader
from pipelines.sync.outcome import ExtractAgain, Extracted, outcome_source
from pipelines.warehouse.destination import Warehouse, make_pipeline
from pipelines.warehouse.diagnose import chain
from pipelines.warehouse.failure import explain

log = logging.getLogger(__name__)


def pipeline_name_for(workspace_id: str) -> str:
    """dlt pipeline name of a batch whose first workspace is `workspace_id`: ``outreach_<id, - as _>``."""
    return constants.PIPELINE_PREFIX + "".join(c if c.isalnum() else "_" for c in workspace_id)


def extract_batch(
    workspaces: Sequence[Workspace],
    *,
    mode: str,
    settings: OutreachSettings,
    warehouse: Warehouse,
    run_id: str,
    read_lock: Any = None,
    progress_for: Callable[[Workspace], WorkspaceProgress] | None = None,
    body_lookup: BodyLookup | str | None = "auto",
    synced_at: datetime | None = None,
    key_failures: Sequence[dict[str, Any]] = (),
    deadline: Deadline | None = None,
) -> Extracted:
    """Plan, extract and normalize `workspaces` (sorted by workspace id) as one batch.

    Per-workspace failures are recorded in each plan (the batch goes on); a failure of dlt itself marks
    every workspace failed (`Extracted.error`). `read_lock` is held around each warehouse read.
    `body_lookup`: "auto" (bodies from webhook events when pipelines.events.loading exists), None (API only) or
    a `BodyLookup`.
    """
    started = datetime.now(UTC)
    ordered = sorted(workspaces, key=lambda w: w.workspace_id)
    pipeline = make_pipeline(pipeline_name_for(ordered[0].workspace_id), warehouse, settings.pipelines_dir)
    finish_pending(pipeline, read_lock)
    reader = WarehouseReader(pipeline, read_lock)
    batch = Batch(
        mode=mode,
        plans=[],
        synced_at=synced_at or started,
        run_id=run_id,
        reply_lookback_s=settings.reply_lookback_s,
        reply_body_cap=settings.reply_body_cap,
        workers=settings.workers,
        deadline=deadline or Deadline(settings.sync_timeout_s),
    )
    extracted = Extracted(
        pipeline=pipeline, batch=batch, warehouse=warehouse, started_at=started, key_failures=list(key_failures)
    )
    progress_for = progress_for or (lambda ws: WorkspaceProgress(label=ws.name))
    clock = time.monotonic()
    try:
        plan_batch(batch, reader, progress_for, settings, ordered)
        if isinstance(body_lookup, str):  # "auto"
            batch.body_lookup = _default_body_lookup(pipeline, settings, read_lock)
        else:
            batch.body_lookup = body_lookup
        extracted.stage_seconds["plan"] = round(time.monotonic() - clock, 3)
        clock = time.monotonic()
        _extract_ok_workspaces(extracted, reader)
        extracted.stage_seconds["extract"] = round(time.monotonic() - clock, 3)
    except Exception as exc:  # noqa: BLE001 - the batch fails; the run reports it and goes on
        extracted.error = exc
        for plan in batch.plans:
            plan.fail(exc)
    finally:
        reader.close()
        for plan in batch.plans:
            plan.client.close()
            plan.progress.settle()
    clock = time.monotonic()
    for plan in batch.ok_plans:
        plan.progress.set_stage("normalize")
    try:
        if not interrupted():  # after a signal the package is not loaded (`load_batch`): stop sooner
            pipeline.normalize()
    except Exception as exc:  # noqa: BLE001 - as above
        extracted.error = extracted.error or exc
        for plan in batch.plans:
            plan.fail(exc)
    extracted.stage_seconds["normalize"] = round(time.monotonic() - clock, 3)
    for plan in batch.ok_plans:
        plan.progress.set_stage("extracted")
    return extracted


def finish_pending(pipeline: Any, lock: Any = None) -> None:
    """Load what a killed or failed run of this pipeline left pending, before planning (the plan then reads
    the state it committed), and say so; a package the warehouse refuses is aborted, and said so: its
    state never committed, so this run reads that data from the API again. The caller holds the
    pipeline's turn (`pipelines.warehouse.turns`), so no other run is loading it."""
    pending = list(pipeline.list_extracted_load_packages()) + list(pipeline.list_normalized_load_packages())
    if not pending:
        return
    log.warning(
        "pipeline %s: finishing %d load(s) an earlier run left pending (%s)",
        pipeline.pipeline_name, len(pending), ", ".join(sorted(pending)),
    )  # fmt: skip
    try:
        with lock if lock is not None else contextlib.nullcontext():
            pipeline.normalize()
            info = pipeline.load(workers=1)
            if info is not None:
                info.raise_on_failed_jobs()
    except Exception as exc:  # noqa: BLE001 - rolled back instead: nothing of it committed its state
        pipeline.abort_packages()
        log.warning(
            "pipeline %s: rolled back the pending load(s) (%s); their data is read from the API again",
            pipeline.pipeline_name, explain(exc, None),
        )  # fmt: skip
        return
    log.warning("pipeline %s: the pending load(s) committed", pipeline.pipeline_name)


def _extract_ok_workspaces(extracted: Extracted, reader: WarehouseReader) -> None:
    """Extract the workspaces still OK into one package. A workspace that fails half way (its request
    failed, or the API's paging did not hold) must load nothing: its rows are in the same files as the
    others', so that package is dropped and the others are extracted again without it (each round drops
    at least one workspace; failures half way are rare, and only then are the others read twice)."""
    from pipelines.source.batch_source import outreach_source

    batch, pipeline = extracted.batch, extracted.pipeline
    while batch.ok_plans:
        ok = batch.ok_plans
        for plan in ok:
            plan.progress.set_stage("extract")
        source = watch_drift(outreach_source(batch, reader), extracted.drift, DriftGuard.from_pipeline(pipeline), batch)
        try:
            # parquet where the destination loads it natively (DuckDB); elsewhere dlt's default format
            pipeline.extract(
                [source, outcome_source(batch, extracted, ok)],
                loader_file_format="parquet" if extracted.warehouse.is_duckdb else None,
            )
        except Exception as exc:
            if not isinstance(chain(exc)[-1], ExtractAgain):
                raise
            # dlt extracts into a fresh folder and commits the package only when the extract ends well:
            # the failed one, with the rows of the workspace that failed, is gone
        else:
            extracted.records_in_package = True
            return
        failed = [plan.workspace_id for plan in ok if not plan.ok]
        if batch.ok_plans:
            log.warning("workspace(s) %s failed while extracting: extracting the others again", ", ".join(failed))
        for plan in batch.ok_plans:
            plan.restart()
        reguide(batch, reader)


def watch_drift(source: Any, guards: dict[str, DriftGuard], base: DriftGuard, batch: Batch) -> Any:
    """Type drift coerced and counted, and enum values counted, per workspace, before dlt sees the rows
    (`pipelines.source.drift.DriftGuard`, one per workspace: every row and arrow table carries its workspace_id)."""
    for plan in batch.ok_plans:
        guards[plan.workspace_id] = plan.guard = DriftGuard(base.types)

    def for_resource(resource_name: str) -> Callable[..., Any]:
        def watch(item: Any, meta: Any = None) -> Any:
            hints = getattr(meta, "hints", None)
            named = hints.get("table_name") if isinstance(hints, Mapping) else None
            table = str(named) if named else resource_name
            if isinstance(item, pa.Table):
                workspace = item.column("workspace_id")[0].as_py() if item.num_rows else None
                guard = guards.get(str(workspace))
                return guard.arrow(table, item) if guard is not None else item
            return item  # rows were typed and counted as they were made (WorkspacePlan.admit)

        return watch

    for resource in source.resources.values():
        resource.add_map(for_resource(resource.name))
    return source


def _default_body_lookup(pipeline: Any, settings: OutreachSettings, lock: Any) -> BodyLookup:
    """Reply bodies from lead.replied webhook events (pipelines.events.loading)."""
    from pipelines.events.loading import bodies_from_events

    spool_dir: Path | None = settings.spool_path()

    def lookup(replies: Any) -> Any:
        with lock if lock is not None else contextlib.nullcontext():
            return bodies_from_events(replies, pipeline=pipeline, spool_dir=spool_dir)

    return lookup
