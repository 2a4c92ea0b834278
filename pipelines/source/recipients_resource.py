"""The recipients resource of a batch's dlt source (`pipelines.source.batch_source`): the pages of each changed
campaign's recipients (GET /campaigns/{id}/leads), read over the batch's threads, interleaved across workspaces,
as arrow tables per workspace."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import dlt
import pyarrow as pa
from dlt.extract.resource import DltResource

from pipelines.core import constants
from pipelines.core.errors import NotFoundError
from pipelines.core.fanout import Emit, fan_out
from pipelines.source.batch import Batch, WorkspacePlan, guarded
from pipelines.source.plan import interleave
from pipelines.source.quarantine import TABLE_ENDPOINTS
from pipelines.source.recipient_pages import PageGuide
from pipelines.source.recipients_arrow import recipients_table

log = logging.getLogger(__name__)


def campaign_recipients(batch: Batch) -> DltResource:
    """Recipients of changed campaigns (the pages `page_guides` hand out), as arrow tables per workspace."""

    @dlt.resource(
        name="campaign_recipients",
        write_disposition="merge",
        primary_key="id",
        columns=constants.columns_for("campaign_recipients"),
    )
    def _recipients() -> Iterator[Any]:
        def task_for(plan: WorkspacePlan, campaign_id: str) -> Callable[[Emit], None]:
            def work(emit: Emit) -> None:
                plan.progress.set_stage("extract")
                path = f"/campaigns/{constants.segment(campaign_id)}/leads"
                guide = plan.page_guides.setdefault(campaign_id, PageGuide(constants.PER_PAGE_RECIPIENTS))
                try:
                    while (number := guide.next_page()) is not None:
                        if not plan.ok:
                            return
                        page = plan.client.page(path, number, constants.PER_PAGE_RECIPIENTS)
                        guide.observe(number, page.items, page.last_page)
                        plan.progress.page("campaign_recipients")
                        emit((plan, campaign_id, (number - 1) * constants.PER_PAGE_RECIPIENTS, page.items))
                except NotFoundError:
                    log.warning("campaign %s disappeared while reading its recipients; skipped", campaign_id)
                if guide.reason:
                    log.info("campaign %s: read whole (%s), %d page(s)", campaign_id, guide.reason, guide.pages_read)

            return guarded(plan, work)

        tasks = interleave([[task_for(p, cid) for cid in p.changed_campaign_ids] for p in batch.ok_plans])
        pending: dict[str, list[tuple[str, int, Mapping[str, Any]]]] = {}
        owners: dict[str, WorkspacePlan] = {}
        buffered = 0
        for plan, campaign_id, first, items in fan_out(tasks, workers=batch.workers):
            rows = pending.setdefault(plan.workspace_id, [])
            owners[plan.workspace_id] = plan
            rows.extend((campaign_id, first + i, item) for i, item in enumerate(items))
            buffered += len(items)
            if buffered >= constants.RECIPIENT_BATCH_ROWS:
                yield from _flush(pending, owners)
                buffered = 0
        yield from _flush(pending, owners)
        batch.finished("campaign_recipients")

    def _flush(pending: dict[str, list[Any]], owners: dict[str, WorkspacePlan]) -> Iterator[Any]:
        for workspace_id, rows in pending.items():
            if rows:
                plan = owners[workspace_id]

                def reject(position: int | None, reason: str, raw: Any, plan: WorkspacePlan = plan) -> None:
                    page = None if position is None else position // constants.PER_PAGE_RECIPIENTS + 1
                    plan.reject(TABLE_ENDPOINTS["campaign_recipients"], page, reason, raw)

                table = _id_required(recipients_table(rows, workspace_id, batch.synced_at, reject))
                plan.add_rows("campaign_recipients", table.num_rows)
                if table.num_rows:
                    yield table
        pending.clear()

    return _recipients()


def _id_required(table: pa.Table) -> pa.Table:
    """Mark `id` not nullable, as the primary key is in dlt's schema (rows without an id never reach the
    table), so dlt finds the arrow schema and its own hints agree."""
    index = table.schema.get_field_index("id")
    return table.cast(table.schema.set(index, table.schema.field(index).with_nullable(False)))
