"""What a batch's extraction came to: `Extracted` (the batch's package, waiting to load) and the rows that
travel in the same package after its data: each workspace's new `sync_state`, one `sync_runs` record per
workspace, and the records the run rejected. `pipelines.sync.extract` makes them; `pipelines.sync.load` loads
them, or writes the run records itself when the package cannot load.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import dlt

from pipelines.core import constants
from pipelines.source.batch import Batch, WorkspacePlan
from pipelines.source.drift import DriftGuard
from pipelines.source.quarantine import counts, rejected_resource, rejected_row, summary_line
from pipelines.source.state import state_resource, state_row
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.failure import explain
from pipelines.warehouse.runs import current_load_id, outcome_of, run_row, runs_resource


@dataclass
class Extracted:
    """A batch extracted and normalized: its pipeline holds the package, waiting to load."""

    pipeline: Any  # dlt.Pipeline
    batch: Batch
    warehouse: Warehouse
    started_at: datetime
    stage_seconds: dict[str, float] = field(default_factory=dict)
    error: BaseException | None = None  # the whole batch failed (dlt itself), besides per-workspace errors
    key_failures: list[dict[str, Any]] = field(default_factory=list)  # run records of keys that named no workspace
    marked_deleted: dict[str, dict[str, int]] = field(default_factory=dict)  # full sync: workspace -> table -> rows
    drift: dict[str, DriftGuard] = field(default_factory=dict)  # workspace -> its type drift and enum counts
    records_in_package: bool = False  # the run records travel in the package (else load_batch writes them)


class ExtractAgain(Exception):
    """Raised after the data of a round when a workspace failed half way: the round's package must go."""


@dlt.source(name=constants.SOURCE_NAME)
def outcome_source(batch: Batch, extracted: Extracted, round_plans: Sequence[WorkspacePlan]) -> Any:
    """What the batch's extraction came to, in the same package as its data and extracted after it: the new
    `sync_state` of each workspace that extracted everything, and one `sync_runs` record per workspace. If a
    workspace that started this round failed, it raises instead, so dlt drops the whole round's package."""

    def state_rows() -> list[dict[str, Any]]:
        if any(not plan.ok for plan in round_plans):
            raise ExtractAgain()
        return _state_rows(batch)

    def rejected_rows() -> list[dict[str, Any]]:
        return [rejected_row(batch.run_id, p.workspace_id, item) for p in batch.ok_plans for item in p.rejections]

    return [
        state_resource(state_rows),
        runs_resource(lambda: _run_rows(batch, extracted)),
        rejected_resource(rejected_rows),
    ]


def _run_rows(batch: Batch, extracted: Extracted) -> list[dict[str, Any]]:
    load_id = current_load_id()
    return [
        *extracted.key_failures,
        *(run_record(extracted, plan, [load_id] if load_id else []) for plan in batch.plans),
    ]


def run_record(
    extracted: Extracted, plan: WorkspacePlan, load_ids: list[str], error: BaseException | None = None
) -> dict[str, Any]:
    """The run record of one workspace of the batch (`error` overrides the plan's own)."""
    failure = error or plan.error
    duckdb_path = extracted.warehouse.duckdb_path
    rejected = counts(plan.rejections) if failure is None else {}
    return run_row(
        run_id=extracted.batch.run_id,
        workspace_id=plan.workspace_id,
        workspace_name=plan.workspace.name,
        mode=extracted.batch.mode,
        started_at=extracted.started_at,
        outcome=outcome_of(failure) if failure is not None else "rejected" if rejected else "ok",
        rows_loaded=plan.rows,
        requests=plan.workspace.requests + plan.client.stats.requests,
        error=explain(failure, duckdb_path) if failure is not None else summary_line(rejected) if rejected else "",
        load_ids=load_ids,
        rejected=rejected,
    )


def _state_rows(batch: Batch) -> list[dict[str, Any]]:
    """The new state of each workspace that extracted everything (called after the data was extracted)."""
    return [
        state_row(
            plan.workspace_id,
            plan.workspace.name,
            mode=batch.mode,
            fingerprints=plan.fingerprints,
            reply_cursor=plan.reply_cursor,
            event_types_loaded=plan.state.event_types_loaded or plan.event_types is not None,
            previous=plan.state,
            synced_at=batch.synced_at,
        )
        for plan in batch.ok_plans
    ]
