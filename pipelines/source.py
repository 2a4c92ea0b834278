"""The dlt source of one batch of workspaces of the Outreach Campaign Service API.

What it reads (docs/CATALOG.md): GET /account, /campaigns, /campaigns/{id}/leads, /campaigns/{id}/stats,
/replies, /replies/{id}, /email-accounts, /hooks/events.

What each workspace reads is decided before extraction (`pipelines.plan`); the resources here fetch
what streams (recipient pages, replies, reply bodies) and shape every row. Each resource carries the
rows of every workspace of the batch, so dlt writes, normalizes and loads each table once per batch.
Streaming work is spread over the batch's threads, interleaved across workspaces (each key has its own
rate budget). A workspace whose request fails is marked failed and read no further; the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import dlt
import pyarrow as pa
from dlt.common.schema.typing import TScd2StrategyDict
from dlt.extract.resource import DltResource

from pipelines import settings as S
from pipelines.batch import Batch, KnownBody, WorkspacePlan, guarded
from pipelines.errors import NotFoundError
from pipelines.fanout import Emit, fan_out
from pipelines.plan import interleave
from pipelines.recipient_pages import PageGuide
from pipelines.shaping import recipients_table, reply_row, stats_rows, with_workspace, workspace_row
from pipelines.warehouse import WarehouseReader

log = logging.getLogger(__name__)

__all__ = ["outreach_source"]


@dlt.source(name=S.SOURCE_NAME)
def outreach_source(batch: Batch, reader: WarehouseReader) -> Sequence[DltResource]:
    """All tables of the batch's workspaces.

    Args:
        batch: the workspaces' plans (each with its client, which holds the key; never stored by dlt).
        reader: the warehouse reads extraction needs (stored reply bodies).

    Returns:
        The resources workspaces, campaigns, email_accounts, webhook_event_types, campaign_recipients,
        campaign_stats (+ variants, daily sends) and replies.
    """
    boundary = history_boundary(batch, reader)
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
    @dlt.resource(name="workspaces", write_disposition="merge", primary_key="id", columns=S.columns_for("workspaces"))
    def _workspaces() -> Iterator[list[dict[str, Any]]]:
        rows = []
        for plan in batch.ok_plans:
            row = workspace_row(plan.workspace.account, batch.synced_at)
            row["observed_at"] = plan.service_time()
            rows.append(row)
            plan.add_rows("workspaces", 1)
        if rows:
            yield rows

    return _workspaces()


def workspace_history(batch: Batch, boundary: datetime) -> DltResource:
    """GET /account's versions (issue 15: credits history): scd2 partitioned by workspace_id, a new version
    whenever the balance, plan, name or counts change. `workspaces` keeps the current row with the run's
    synced_at and observed_at, which would make every run a new version here."""

    @dlt.resource(
        name="workspace_history", write_disposition=_scd2(boundary), columns=S.columns_for("workspace_history")
    )
    def _history() -> Iterator[list[dict[str, Any]]]:
        rows = []
        for plan in batch.ok_plans:
            row = workspace_row(plan.workspace.account, batch.synced_at)
            del row["synced_at"]
            rows.append(row)
            plan.add_rows("workspace_history", 1)
        if rows:
            yield rows

    return _history()


def campaigns(batch: Batch, boundary: datetime) -> DltResource:
    """The campaign lists (read in the plan); scd2 partitioned by workspace_id."""

    @dlt.resource(name="campaigns", write_disposition=_scd2(boundary), columns=S.columns_for("campaigns"))
    def _campaigns() -> Iterator[list[dict[str, Any]]]:
        for plan in batch.ok_plans:
            rows = with_workspace(plan.campaigns, plan.workspace_id, "campaigns")
            plan.add_rows("campaigns", len(rows))
            if rows:
                yield rows

    return _campaigns()


def email_accounts(batch: Batch, boundary: datetime) -> DltResource:
    @dlt.resource(name="email_accounts", write_disposition=_scd2(boundary), columns=S.columns_for("email_accounts"))
    def _email_accounts() -> Iterator[list[dict[str, Any]]]:
        for plan in batch.ok_plans:
            rows = with_workspace(plan.mailboxes, plan.workspace_id, "email_accounts")
            plan.add_rows("email_accounts", len(rows))
            if rows:
                yield rows

    return _email_accounts()


def webhook_event_types(batch: Batch) -> DltResource:
    @dlt.resource(
        name="webhook_event_types",
        write_disposition="merge",
        primary_key=list(S.PRIMARY_KEYS["webhook_event_types"]),
        columns=S.columns_for("webhook_event_types"),
    )
    def _event_types() -> Iterator[list[dict[str, Any]]]:
        for plan in batch.ok_plans:
            if plan.event_types is None:
                continue
            rows = [{**item, "workspace_id": plan.workspace_id} for item in plan.event_types]
            plan.add_rows("webhook_event_types", len(rows))
            if rows:
                yield rows

    return _event_types()


def campaign_stats(batch: Batch) -> DltResource:
    """Stats of changed campaigns (read in the plan), split into campaign_stats, campaign_variants and
    campaign_daily_sends."""

    def table_hints(table: str) -> Any:
        return dlt.mark.make_hints(
            table_name=table,
            write_disposition="merge",
            primary_key=list(S.PRIMARY_KEYS[table]),
            columns=S.columns_for(table),
        )

    @dlt.resource(
        name="campaign_stats",
        write_disposition="merge",
        primary_key="campaign_id",
        columns=S.columns_for("campaign_stats"),
    )
    def _stats() -> Iterator[Any]:
        for plan in batch.ok_plans:
            for campaign_id, data in plan.stats.items():
                head, variants, daily = stats_rows(data, campaign_id, plan.workspace_id, batch.synced_at)
                plan.add_rows("campaign_stats", 1)
                yield head
                if variants:
                    plan.add_rows("campaign_variants", len(variants))
                    yield dlt.mark.with_hints(variants, table_hints("campaign_variants"), create_table_variant=True)
                if daily:
                    plan.add_rows("campaign_daily_sends", len(daily))
                    yield dlt.mark.with_hints(daily, table_hints("campaign_daily_sends"), create_table_variant=True)

    return _stats()


def campaign_recipients(batch: Batch) -> DltResource:
    """Recipients of changed campaigns (the pages `page_guides` hand out), as arrow tables per workspace."""

    @dlt.resource(
        name="campaign_recipients",
        write_disposition="merge",
        primary_key="id",
        columns=S.columns_for("campaign_recipients"),
    )
    def _recipients() -> Iterator[Any]:
        def task_for(plan: WorkspacePlan, campaign_id: str) -> Callable[[Emit], None]:
            def work(emit: Emit) -> None:
                plan.progress.set_stage("extract")
                path = f"/campaigns/{campaign_id}/leads"
                guide = plan.page_guides.setdefault(campaign_id, PageGuide(S.PER_PAGE_RECIPIENTS))
                try:
                    while (number := guide.next_page()) is not None:
                        if not plan.ok:
                            return
                        page = plan.client.page(path, number, S.PER_PAGE_RECIPIENTS)
                        guide.observe(number, page.items, page.last_page)
                        plan.progress.page("campaign_recipients")
                        emit((plan, campaign_id, (number - 1) * S.PER_PAGE_RECIPIENTS, page.items))
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
            if buffered >= S.RECIPIENT_BATCH_ROWS:
                yield from _flush(pending, owners)
                buffered = 0
        yield from _flush(pending, owners)

    def _flush(pending: dict[str, list[Any]], owners: dict[str, WorkspacePlan]) -> Iterator[Any]:
        for workspace_id, rows in pending.items():
            if rows:
                table = _id_required(recipients_table(rows, workspace_id, batch.synced_at))
                owners[workspace_id].add_rows("campaign_recipients", table.num_rows)
                yield table
        pending.clear()

    return _recipients()


def _id_required(table: pa.Table) -> pa.Table:
    """Mark `id` not nullable, as the primary key is in dlt's schema (rows without an id never reach the
    table), so dlt finds the arrow schema and its own hints agree."""
    index = table.schema.get_field_index("id")
    return table.cast(table.schema.set(index, table.schema.field(index).with_nullable(False)))


def _parse_ts(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


class _ReplyRun:
    """One workspace's reply reading in this run: ids seen, bodies to fetch (under the cap), the new cursor."""

    def __init__(self, plan: WorkspacePlan) -> None:
        self.plan = plan
        self.seen: set[str] = set()
        self.to_fetch: list[str] = []


def replies(batch: Batch, reader: WarehouseReader) -> DltResource:
    """Replies newest first, down to the cursor minus the lookback (quick) or all (full), with bodies.

    A reply row always carries the body already stored, so re-reading a list item never wipes a fetched
    body (stored bodies are looked up per chunk of re-read replies). Bodies are fetched for replies
    without one, new first then deferred ones, up to ``reply_body_cap`` per workspace.
    """

    @dlt.resource(name="replies", write_disposition="merge", primary_key="id", columns=S.columns_for("replies"))
    def _replies() -> Iterator[list[dict[str, Any]]]:
        runs = [_ReplyRun(plan) for plan in batch.ok_plans]
        tasks = [guarded(run.plan, _reply_task(batch, reader, run)) for run in runs]
        for plan, rows in fan_out(tasks, workers=batch.workers):
            plan.add_rows("replies", len(rows))
            yield rows
        yield from _fetch_bodies(batch, [run for run in runs if run.plan.ok])

    return _replies()


def _reply_task(batch: Batch, reader: WarehouseReader, run: _ReplyRun) -> Callable[[Emit], None]:
    def work(emit: Emit) -> None:
        _list_replies(batch, reader, run, emit)

    return work


def _list_replies(batch: Batch, reader: WarehouseReader, run: _ReplyRun, emit: Emit) -> None:
    """Page one workspace's replies; emit (plan, rows) per chunk, bodies settled."""
    plan = run.plan
    cursor = _parse_ts(plan.state.reply_cursor) if batch.mode == "quick" else None
    stop_at = cursor - timedelta(seconds=batch.reply_lookback_s) if cursor else None
    newest: datetime | None = cursor
    chunk: list[dict[str, Any]] = []
    for page in plan.client.iter_pages("/replies", per_page=S.PER_PAGE_REPLIES):
        plan.progress.page("replies")
        reached = False
        for item in page.items:
            if not isinstance(item, Mapping) or not item.get("id"):
                log.warning("replies: skipped a record without id")
                continue
            received = _parse_ts(item.get("received_at"))
            if stop_at is not None and received is not None and received < stop_at:
                reached = True
                continue
            if received is not None and (newest is None or received > newest):
                newest = received
            rid = str(item["id"])
            if rid in run.seen:
                continue
            run.seen.add(rid)
            chunk.append(reply_row(item, plan.workspace_id, batch.synced_at))
        # settle rows chunk by chunk: holding them all until the list ends kept every reply of a full
        # sync in memory (hundreds of thousands on a large workspace)
        if len(chunk) >= S.REPLY_BODY_CHUNK_ROWS:
            _settle(batch, reader, run, chunk, emit)
            chunk = []
        if reached:
            break
    _settle(batch, reader, run, chunk, emit)
    if newest is not None:
        plan.reply_cursor = newest.isoformat()
    elif plan.state.reply_cursor:
        plan.reply_cursor = plan.state.reply_cursor


def _settle(batch: Batch, reader: WarehouseReader, run: _ReplyRun, chunk: list[dict[str, Any]], emit: Emit) -> None:
    """Bodies for a chunk of re-read replies: the stored body when there is one; else the hook (no request);
    rows still without a body join `to_fetch` while it holds fewer than the cap, the others land now
    without body (deferred)."""
    if not chunk:
        return
    plan = run.plan
    known: dict[str, KnownBody] = reader.stored_bodies(plan.workspace_id, [str(r["id"]) for r in chunk])
    need_body: list[dict[str, Any]] = []
    settled: list[dict[str, Any]] = []
    for row in chunk:
        stored = known.get(str(row["id"]))
        if stored is not None:
            row["body"], row["body_fetched_at"] = stored.body, stored.fetched_at
            settled.append(row)
        else:
            need_body.append(row)
    if batch.body_lookup is not None and need_body:
        try:
            supplied = batch.body_lookup(need_body)
        except Exception as exc:  # noqa: BLE001 - the hook must never break the sync
            log.warning("reply body lookup failed (%s); fetching bodies from the API instead", type(exc).__name__)
            supplied = {}
        for row in need_body:
            body = supplied.get(str(row["id"]))
            if body is not None:
                row["body"], row["body_fetched_at"] = body, batch.synced_at
                plan.count("bodies_from_events")
    missing = [row for row in need_body if row.get("body") is None]
    room = max(0, batch.reply_body_cap - len(run.to_fetch))
    run.to_fetch.extend(str(row["id"]) for row in missing[:room])
    plan.count("bodies_deferred", max(0, len(missing) - room))
    settled += [row for row in need_body if row.get("body") is not None] + missing[room:]
    if settled:
        emit((plan, settled))


def _fetch_bodies(batch: Batch, runs: list[_ReplyRun]) -> Iterator[list[dict[str, Any]]]:
    """GET /replies/{id} for each workspace's `to_fetch` (new replies first), then for its deferred ones in
    the room left under the cap; interleaved across workspaces."""
    groups: list[list[Callable[[Emit], None]]] = []
    for run in runs:
        plan = run.plan
        deferred = [rid for rid in plan.deferred_reply_ids if rid not in run.seen]
        room = max(0, batch.reply_body_cap - len(run.to_fetch))
        plan.count("bodies_deferred", max(0, len(deferred) - room))
        groups.append([_body_task(batch, plan, rid) for rid in run.to_fetch + deferred[:room]])
    batch_rows: dict[str, list[dict[str, Any]]] = {}
    owners: dict[str, WorkspacePlan] = {}
    for plan, row in fan_out(interleave(groups), workers=batch.workers):
        plan.count("bodies_fetched")
        plan.progress.page("reply_bodies")
        owners[plan.workspace_id] = plan
        rows = batch_rows.setdefault(plan.workspace_id, [])
        rows.append(row)
        if len(rows) >= 500:
            plan.add_rows("replies", len(rows))
            yield rows
            batch_rows[plan.workspace_id] = []
    for workspace_id, rows in batch_rows.items():
        if rows:
            owners[workspace_id].add_rows("replies", len(rows))
            yield rows


def _body_task(batch: Batch, plan: WorkspacePlan, rid: str) -> Callable[[Emit], None]:
    def work(emit: Emit) -> None:
        try:
            full = plan.client.get_data(f"/replies/{rid}")
        except NotFoundError:
            log.warning("reply %s disappeared before its body was read; skipped", rid)
            return
        if not isinstance(full, Mapping):
            return
        out = reply_row(full, plan.workspace_id, batch.synced_at)
        out["body"] = full.get("body")
        out["body_fetched_at"] = batch.synced_at
        emit((plan, out))

    return guarded(plan, work)
