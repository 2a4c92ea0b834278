"""Load: commit a batch's package (and any package an earlier run left pending) to the warehouse, then
the repairs that need the loaded rows: after a full sync, mark rows the API stopped returning.

The caller holds the warehouse lock (`pipelines.warehouse.lock`); on DuckDB it also holds `lock.access`, so the
loads of one process run one at a time (DuckDB takes one writer). On PostgreSQL batches load at once.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pipelines.core.deadline import interrupted, interruption
from pipelines.core.errors import OutreachError
from pipelines.core.report import WorkspaceReport
from pipelines.core.root_cause import one_line, root_cause
from pipelines.source.batch import WorkspacePlan
from pipelines.source.quarantine import counts
from pipelines.sync.marks import drop_duplicate_history_rows, mark_deleted
from pipelines.sync.outcome import Extracted, run_record
from pipelines.warehouse.failure import explain, outreach_error
from pipelines.warehouse.runs import record_failed_runs

if TYPE_CHECKING:
    from dlt.destinations.sql_client import SqlClientBase

log = logging.getLogger(__name__)

#: The warehouse lock is re-entrant across a process's threads (one process holds the warehouse), so on its
#: own it lets two batches of one process change the schema at once; this keeps them apart too
_SCHEMA_UPDATE = threading.Lock()


class LoadFailed(OutreachError):
    """The warehouse did not take a batch's package; it stays pending and the next run resumes it."""


def load_batch(extracted: Extracted) -> list[WorkspaceReport]:
    """Load the batch; return one report per workspace (failed ones carry their error in the plan)."""
    pipeline = extracted.pipeline
    batch = extracted.batch
    for plan in batch.ok_plans:
        plan.progress.set_stage("load")
    clock = time.monotonic()
    load_ids: list[str] = []
    failure: BaseException | None = None
    if interrupted():
        return stop_batch(extracted)
    try:
        _update_schema(extracted)
        # one load job at a time on DuckDB: each open COPY holds its own buffers, so parallel jobs made a
        # load's memory grow with the files in the package, and one file takes one writer anyway
        info = pipeline.load(workers=1 if extracted.warehouse.is_duckdb else 4)
        if info is not None:
            info.raise_on_failed_jobs()
            load_ids = list(info.loads_ids)
        _after_load(extracted)
    except Exception as exc:  # noqa: BLE001 - reported per workspace; the package stays pending
        failure = exc
    if extracted.warehouse.is_duckdb:
        _tidy_duckdb(extracted, drop_staging=failure is None)
    seconds = round(time.monotonic() - clock, 3)
    if failure is not None:
        _record_load_failure(extracted, failure)
    elif not extracted.records_in_package:  # every workspace failed before its data was extracted
        rows = [run_record(extracted, plan, []) for plan in batch.plans]
        record_failed_runs(extracted.warehouse, extracted.pipeline.pipelines_dir, [*extracted.key_failures, *rows])
    reports = [_report(extracted, plan, load_ids, seconds) for plan in batch.plans]
    for report in reports:
        guard = extracted.drift.get(report.workspace_id)
        if guard is not None:
            guard.fill(report)  # drift counts into the summary
    for plan in batch.plans:
        plan.progress.set_stage("done" if plan.ok else "failed")
    return reports


def stop_batch(extracted: Extracted) -> list[WorkspaceReport]:
    """After a signal no load starts (the one running when it came finishes: a load is what commits), so a
    stop waits for one load at most. The batch's package is dropped, its state never committed, and the next
    run reads its workspaces again; no warehouse access is needed for that."""
    batch = extracted.batch
    stop = interruption(interrupted() or signal.SIGINT)
    for plan in batch.plans:
        if plan.ok:
            plan.fail(stop)
        plan.progress.set_stage("interrupted")
    extracted.pipeline.abort_packages()
    return [_report(extracted, plan, [], 0.0) for plan in batch.plans]


def _update_schema(extracted: Extracted) -> None:
    """On a server where batches load at once, create and alter the dataset's tables first, one pipeline at
    a time, across processes and threads alike (dlt's load would do it too, but two doing it at the same moment
    fail on CREATE SCHEMA/TABLE: seen at 1,000 workspaces on a work pool, where two batches of one process
    collided on `workspaces`)."""
    target = extracted.warehouse.schema_lock_target()
    if target is None or not extracted.pipeline.default_schema_name:
        return
    from pipelines.warehouse.lock import hold

    with _SCHEMA_UPDATE, hold(target, "schema update", notify=log.debug):  # brief: not worth a line to the user
        extracted.pipeline.sync_schema()


def _after_load(extracted: Extracted) -> None:
    """Repairs on the committed rows of this batch's workspaces."""
    batch = extracted.batch
    ok = [plan.workspace_id for plan in batch.ok_plans]
    if not ok:
        return
    warehouse = extracted.warehouse
    row_id = "rowid" if warehouse.is_duckdb else "ctid" if warehouse.is_postgres else None
    with extracted.pipeline.sql_client() as client:
        if row_id is not None:
            drop_duplicate_history_rows(client, ok, row_id)
        if batch.mode == "full":
            protected = {plan.workspace_id: plan.protected_tables for plan in batch.ok_plans}
            extracted.marked_deleted = mark_deleted(client, ok, batch.synced_at, protected)


def _tidy_duckdb(extracted: Extracted, *, drop_staging: bool) -> None:
    """After a load into DuckDB, in one session: drop the batch's staging schema if the load was good, then
    fold the write-ahead log into the file."""
    with _unless_duckdb_refuses("tidying after the load"), extracted.pipeline.sql_client() as client:
        if drop_staging:
            with _unless_duckdb_refuses("dropping the staging schema"):
                _drop_staging(client)
        _checkpoint(client)


def _drop_staging(client: SqlClientBase[Any]) -> None:
    """Drop the batch's staging dataset (`outreach_staging_<first workspace>`) after a good load: its rows are
    merged, and the next load of that pipeline makes it again. A failed load keeps it, for the resumed load's
    merge.

    Kept, every batch of a run left a schema of a dozen tables holding a copy of the rows it staged: the
    warehouse listed one such schema per batch of every run, its file held the staged rows twice, and an open
    DuckDB keeps the catalog and row-group metadata of every table in memory, so a sync's memory grew with each
    batch (bench/scale_out_1000.md)."""
    with client.with_staging_dataset():
        # unqualified, in the file's own catalog: DuckDB finds `"outreach"."<schema>"` ambiguous in DROP
        # SCHEMA when the catalog (data/outreach.duckdb) and the dataset share the name (dlt's drop_dataset
        # qualifies it)
        staging = client.capabilities.escape_identifier(client.dataset_name)
        client.execute_sql(f"DROP SCHEMA IF EXISTS {staging} CASCADE")


def _checkpoint(client: SqlClientBase[Any]) -> None:
    """Fold DuckDB's write-ahead log into the file after each batch's load.

    The warehouse stays open for the whole run (`kept_open`), and DuckDB did not checkpoint on
    its own while batches overlapped: over a run of many batches its WAL, and the memory DuckDB holds for
    what the WAL has not folded in yet, grew with every batch until loads failed on `memory_limit` (at
    1,000 tiny workspaces: a 196 MB WAL after a full sync, and an idle quick sync whose loads ran out of
    memory from its 25th batch on). A checkpoint that fails costs nothing but the next batch's retry."""
    client.execute_sql("CHECKPOINT")


@contextlib.contextmanager
def _unless_duckdb_refuses(what: str) -> Iterator[None]:
    """Tidying after a load: a DuckDB refusal is skipped (the data is committed either way), anything else raised."""
    import duckdb

    try:
        yield
    except Exception as exc:
        if not isinstance(root_cause(exc), duckdb.Error):
            raise
        log.debug("%s skipped: %s", what, one_line(root_cause(exc)))


def _record_load_failure(extracted: Extracted, failure: BaseException) -> None:
    """Every workspace of the batch failed to load: say why in one line, and record it if the warehouse can."""
    line = explain(failure, extracted.warehouse.duckdb_path)
    ours = outreach_error(failure)
    error: OutreachError = (
        ours
        if ours is not None
        else LoadFailed(f"loading into the warehouse failed: {line}; the pending load resumes on the next run")
    )
    rows = [run_record(extracted, plan, [], error) for plan in extracted.batch.plans]
    for plan in extracted.batch.plans:
        plan.fail(error)
    record_failed_runs(extracted.warehouse, extracted.pipeline.pipelines_dir, [*extracted.key_failures, *rows])


def _report(extracted: Extracted, plan: WorkspacePlan, load_ids: list[str], load_seconds: float) -> WorkspaceReport:
    stats = plan.client.stats.snapshot()
    guides = plan.page_guides.values()
    marked = extracted.marked_deleted.get(plan.workspace_id, {}) if plan.ok else {}
    return WorkspaceReport(
        workspace_id=plan.workspace_id,
        workspace_name=plan.workspace.name,
        pipeline_name=extracted.pipeline.pipeline_name,
        mode=extracted.batch.mode,
        rows=dict(plan.rows),
        requests=stats["requests"] + plan.workspace.requests,
        rate_limited=stats["rate_limited"],
        retries=stats["retries"],
        rate_wait_s=stats["rate_wait_s"],
        bodies_fetched=plan.counters.get("bodies_fetched", 0),
        bodies_from_events=plan.counters.get("bodies_from_events", 0),
        bodies_deferred=plan.counters.get("bodies_deferred", 0),
        campaigns_changed=len(plan.changed_campaign_ids),
        campaigns_from_events=len(plan.campaigns_from_events),
        campaigns_total=len(plan.campaigns),
        recipient_pages_read=sum(g.pages_read for g in guides),
        recipient_pages_listed=sum(g.last_page or 0 for g in guides),
        campaigns_read_whole=sum(1 for g in guides if g.reason),
        marked_deleted=marked,
        rejected=counts(plan.rejections) if plan.ok else {},
        stage_seconds={**extracted.stage_seconds, "load": load_seconds},
        load_ids=list(load_ids),
    )
