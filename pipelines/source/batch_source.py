"""The dlt source of one batch of workspaces of the Outreach Campaign Service API.

What it reads (docs/CATALOG.md): GET /account, /campaigns, /campaigns/{id}/leads, /campaigns/{id}/stats,
/replies, /replies/{id}, /email-accounts, /hooks/events.

What each workspace reads is decided before extraction (`pipelines.source.plan`); the resources fetch what
streams (recipient pages: `pipelines.source.recipients_resource`; replies, reply bodies) and shape every row.
Each resource carries the rows of every workspace of the batch, so dlt writes, normalizes and loads each table
once per batch.
Streaming work is spread over the batch's threads, interleaved across workspaces (each key has its own
rate budget). A workspace whose request fails is marked failed and read no further; the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from typing import Any

import dlt
from dlt.common.schema.typing import TScd2StrategyDict
from dlt.extract.resource import DltResource

from pipelines.core import constants
from pipelines.source.batch import Batch, Reads, WorkspacePlan
from pipelines.source.recipients_resource import campaign_recipients
from pipelines.source.replies import replies
from pipelines.source.shaping import stats_rows, with_workspace, workspace_row
from pipelines.source.stored import WarehouseReader

log = logging.getLogger(__name__)

__all__ = ["outreach_source", "resources"]


# Values are typed before dlt sees them (`WorkspacePlan.admit`); a value dlt would still have to put in a
# variant column is an error, never a silent NULL in the typed column.
@dlt.source(name=constants.SOURCE_NAME, schema_contract={"data_type": "freeze"})
def outreach_source(batch: Batch, reader: WarehouseReader) -> Sequence[DltResource]:
    """All tables of the batch's workspaces.

    Args:
        batch: the workspaces' plans (each with its client, which holds the key; never stored by dlt).
        reader: the warehouse reads extraction needs (stored reply bodies).

    Returns:
        The resources workspaces, campaigns, email_accounts, webhook_event_types, campaign_recipients,
        campaign_stats (+ variants, daily sends) and replies.
    """
    return resources(batch, reader, history_boundary(batch, reader))


def resources(batch: Batch, reader: Reads, boundary: datetime) -> list[DltResource]:
    """The resources of `batch`, shared by our sync's source (above) and a dlt user's
    (`pipelines.source.dlt_source.outreach`); `boundary` is the scd2 boundary of the versions they load."""
    return [
        workspaces(batch),
        workspace_history(batch, boundary),
        campaigns(batch, boundary),
        email_accounts(batch, boundary),
        webhook_event_types(batch),
        campaign_stats(batch),
        campaign_recipients(batch),
        replies(batch, reader),
    ]


def history_boundary(batch: Batch, reader: WarehouseReader) -> datetime:
    """The batch's scd2 boundary: the service's time, but always after every version already stored. A service
    whose clock is behind the warehouse (a fresh sandbox synced into a demo's warehouse, a restored service)
    would otherwise start versions before the current ones: duplicate (id, valid_from) pairs, churned again
    on every sync."""
    boundary = batch.service_time()
    floor = reader.history_floor([plan.workspace_id for plan in batch.ok_plans])
    if floor is not None and boundary <= floor:
        log.info("the service's clock (%s) is behind the newest stored history version (%s)", boundary, floor)
        return floor + timedelta(seconds=1)
    return boundary


def _scd2(boundary: datetime) -> TScd2StrategyDict:
    """scd2 on the service's clock: a new version is valid from the service time it was seen at."""
    return {"disposition": "merge", "strategy": "scd2", "boundary_timestamp": boundary}


def workspaces(batch: Batch) -> DltResource:
    @dlt.resource(
        name="workspaces", write_disposition="merge", primary_key="id", columns=constants.columns_for("workspaces")
    )
    def _workspaces() -> Iterator[list[dict[str, Any]]]:
        rows = []
        for plan in batch.ok_plans:
            row = workspace_row(plan.workspace.account, batch.synced_at)
            row["observed_at"] = plan.service_time()
            kept = plan.admit("workspaces", [(plan.workspace.account, row)])
            rows += kept
            plan.add_rows("workspaces", len(kept))
        if rows:
            yield rows
        batch.finished("workspaces")

    return _workspaces()


def workspace_history(batch: Batch, boundary: datetime) -> DltResource:
    """GET /account's versions (the credits history): scd2 partitioned by workspace_id, a new version
    whenever the balance, plan, name or counts change. `workspaces` keeps the current row with the run's
    synced_at and observed_at, which would make every run a new version here."""

    @dlt.resource(
        name="workspace_history", write_disposition=_scd2(boundary), columns=constants.columns_for("workspace_history")
    )
    def _history() -> Iterator[list[dict[str, Any]]]:
        rows = []
        for plan in batch.ok_plans:
            row = workspace_row(plan.workspace.account, batch.synced_at)
            del row["synced_at"]
            kept = plan.admit("workspace_history", [(plan.workspace.account, row)])
            if _keeps_history(plan, "workspace_history", kept):
                rows += kept
                plan.add_rows("workspace_history", len(kept))
        if rows:
            yield rows
        batch.finished("workspace_history")

    return _history()


def campaigns(batch: Batch, boundary: datetime) -> DltResource:
    """The campaign lists (read in the plan); scd2 partitioned by workspace_id."""

    @dlt.resource(name="campaigns", write_disposition=_scd2(boundary), columns=constants.columns_for("campaigns"))
    def _campaigns() -> Iterator[list[dict[str, Any]]]:
        for plan in batch.ok_plans:
            rows = [
                row
                for c in plan.campaigns
                for row in plan.admit(
                    "campaigns", [(c, with_workspace(c, plan.workspace_id))], plan.campaign_pages.get(str(c["id"]))
                )
            ]
            if _keeps_history(plan, "campaigns", rows):
                plan.add_rows("campaigns", len(rows))
                yield rows
        batch.finished("campaigns")

    return _campaigns()


def email_accounts(batch: Batch, boundary: datetime) -> DltResource:
    @dlt.resource(
        name="email_accounts", write_disposition=_scd2(boundary), columns=constants.columns_for("email_accounts")
    )
    def _email_accounts() -> Iterator[list[dict[str, Any]]]:
        for plan in batch.ok_plans:
            rows = plan.admit("email_accounts", [(m, with_workspace(m, plan.workspace_id)) for m in plan.mailboxes])
            if _keeps_history(plan, "email_accounts", rows):
                plan.add_rows("email_accounts", len(rows))
                yield rows
        batch.finished("email_accounts")

    return _email_accounts()


def webhook_event_types(batch: Batch) -> DltResource:
    @dlt.resource(
        name="webhook_event_types",
        write_disposition="merge",
        primary_key=list(constants.PRIMARY_KEYS["webhook_event_types"]),
        columns=constants.columns_for("webhook_event_types"),
    )
    def _event_types() -> Iterator[list[dict[str, Any]]]:
        for plan in batch.ok_plans:
            if plan.event_types is None:
                continue
            rows = plan.admit(
                "webhook_event_types", [(item, with_workspace(item, plan.workspace_id)) for item in plan.event_types]
            )
            plan.add_rows("webhook_event_types", len(rows))
            if rows:
                yield rows
        batch.finished("webhook_event_types")

    return _event_types()


def campaign_stats(batch: Batch) -> DltResource:
    """Stats of changed campaigns (read in the plan), split into campaign_stats, campaign_variants and
    campaign_daily_sends."""

    def table_hints(table: str) -> Any:
        return dlt.mark.make_hints(
            table_name=table,
            write_disposition="merge",
            primary_key=list(constants.PRIMARY_KEYS[table]),
            columns=constants.columns_for(table),
        )

    @dlt.resource(
        name="campaign_stats",
        write_disposition="merge",
        primary_key="campaign_id",
        columns=constants.columns_for("campaign_stats"),
    )
    def _stats() -> Iterator[Any]:
        for plan in batch.ok_plans:
            for campaign_id, data in plan.stats.items():
                head, variants, daily = stats_rows(data, campaign_id, plan.workspace_id, batch.synced_at)
                admitted = plan.admit("campaign_stats", [(data, head)])
                if not admitted:
                    continue
                head = admitted[0]
                variants = plan.admit("campaign_variants", [(dict(v), v) for v in variants])
                daily = plan.admit("campaign_daily_sends", [(dict(d), d) for d in daily])
                plan.add_rows("campaign_stats", 1)
                yield head
                if variants:
                    plan.add_rows("campaign_variants", len(variants))
                    yield dlt.mark.with_hints(variants, table_hints("campaign_variants"), create_table_variant=True)
                if daily:
                    plan.add_rows("campaign_daily_sends", len(daily))
                    yield dlt.mark.with_hints(daily, table_hints("campaign_daily_sends"), create_table_variant=True)
        batch.finished("campaign_stats")

    return _stats()


def _keeps_history(plan: WorkspacePlan, table: str, rows: list[dict[str, Any]]) -> bool:
    """Whether this workspace's rows of an scd2 table load this run. Not when a record of its list was
    rejected: scd2 retires every stored version the load does not carry, and a record without an id
    might be any of them, so the stored versions stay current until a run reads the list cleanly."""
    if table in plan.protected_tables:
        log.warning(
            "workspace %s: %s not updated this run: the API sent a record that could not be loaded",
            plan.workspace_id, table,
        )  # fmt: skip
        return False
    return bool(rows)
