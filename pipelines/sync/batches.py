"""The batches of a sync: workspaces sorted into batches of `batch_size`, run two at a time (one batch
extracts while the previous one loads), each one dlt load; the run records of workspaces a signal stopped."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from pipelines.api.accounts import Workspace
from pipelines.core.config import OutreachSettings
from pipelines.core.deadline import Deadline, interrupted, interruption
from pipelines.core.fanout import map_in_threads
from pipelines.core.progress import WorkspaceProgress
from pipelines.core.report import WorkspaceReport
from pipelines.warehouse import lock
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.runs import outcome_of, record_failed_runs, run_row
from pipelines.warehouse.turns import taking_turns, workspace_turn

log = logging.getLogger(__name__)

BATCHES_IN_FLIGHT = 2  # one batch extracts while the previous one loads


def run_batches(
    workspaces: Sequence[Workspace],
    *,
    mode: str,
    settings: OutreachSettings,
    warehouse: Warehouse,
    run_id: str,
    progress_for: Callable[[Workspace], WorkspaceProgress],
    key_failures: Sequence[dict[str, Any]] = (),
    deadline: Deadline | None = None,
) -> list[tuple[WorkspaceReport, tuple[Workspace, BaseException | None]]]:
    """Extract and load `workspaces` in batches (`batch_size_for(mode)`), `BATCHES_IN_FLIGHT` at a time; the caller
    holds the warehouse lock. Returns each workspace's report with its error (None when it synced)."""
    from pipelines.sync.extract import extract_batch, pipeline_name_for
    from pipelines.sync.load import load_batch, stop_batch

    ordered = sorted(workspaces, key=lambda w: w.workspace_id)
    size = settings.batch_size_for(mode)
    batches = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    synced_at = datetime.now(UTC)

    def one(index: int) -> list[tuple[WorkspaceReport, tuple[Workspace, BaseException | None]]]:
        if interrupted():  # a batch not started when the signal came is not started at all
            stop = interruption(interrupted())
            name = pipeline_name_for(batches[index][0].workspace_id)
            return [(WorkspaceReport(ws.workspace_id, ws.name, name, mode), (ws, stop)) for ws in batches[index]]
        turns = [workspace_turn(ws.workspace_id) for ws in batches[index]]
        with taking_turns(warehouse, turns, "sync", timeout_s=settings.lock_timeout_s):
            extracted = extract_batch(
                batches[index],
                mode=mode,
                settings=settings,
                warehouse=warehouse,
                run_id=run_id,
                read_lock=lock.Access(warehouse),
                progress_for=progress_for,
                synced_at=synced_at,
                key_failures=key_failures if index == 0 else (),
                deadline=deadline,
            )
            if interrupted():  # no load starts after a signal, and dropping a package needs no warehouse
                reports = stop_batch(extracted)
            else:
                with lock.access(warehouse):
                    reports = load_batch(extracted)
        by_id = {r.workspace_id: r for r in reports}
        return [(by_id[p.workspace_id], (p.workspace, p.error)) for p in extracted.batch.plans]

    out: list[tuple[WorkspaceReport, tuple[Workspace, BaseException | None]]] = []
    for result in map_in_threads(one, range(len(batches)), workers=BATCHES_IN_FLIGHT, name="outreach-batch"):
        out.extend(result)
    stopped = [(r, ws, e) for r, (ws, e) in out if e is not None and not r.load_ids and outcome_of(e) == "interrupted"]
    if stopped:  # one load records them all (each is a dlt run: one per batch would hold the stop up)
        rows = [_interrupted_record(run_id, mode, synced_at, ws, r.requests, e) for r, ws, e in stopped]
        record_failed_runs(warehouse, settings.pipelines_dir, rows)
    for report, (ws, error) in out:
        if error is None:
            log.info("workspace %s synced: %d requests, %d 429s", ws.workspace_id, report.requests, report.rate_limited)
    return out


def _interrupted_record(
    run_id: str, mode: str, started: datetime, ws: Workspace, requests: int, exc: BaseException
) -> dict[str, Any]:
    """The run record of a workspace a signal stopped before anything of it was committed."""
    from pipelines.warehouse.failure import explain

    return run_row(
        run_id=run_id,
        workspace_id=ws.workspace_id,
        workspace_name=ws.name,
        mode=mode,
        started_at=started,
        outcome="interrupted",
        rows_loaded={},
        requests=requests,
        error=explain(exc),
    )
