"""The dlt source for one workspace of the Outreach Campaign Service API.

API: see shared/api-spec.md (GET /account, /campaigns, /campaigns/{id}/leads,
/campaigns/{id}/stats, /replies, /replies/{id}, /email-accounts, /hooks/events).

What each mode reads is decided before extraction (`WorkspacePlan`, built by
`pipelines.sync`); the resources here only fetch and shape. Source state
(committed with the load) holds ``fingerprints`` (campaign id -> fingerprint),
``reply_cursor`` (newest received_at loaded) and ``event_types_loaded``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import dlt
from dlt.extract.resource import DltResource

from pipelines import settings as S
from pipelines.client import OutreachClient
from pipelines.errors import NotFoundError
from pipelines.fanout import Emit, fan_out
from pipelines.progress import WorkspaceProgress
from pipelines.recipient_pages import PageGuide
from pipelines.shaping import (
    recipients_table,
    reply_row,
    stats_rows,
    with_workspace,
    workspace_row,
)

log = logging.getLogger(__name__)

BodyLookup = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, str]]
"""Hook point for reply bodies: given reply rows that need a body, return {reply_id: body} for those
it can supply without calling GET /replies/{id} (e.g. from lead.replied webhook events)."""


@dataclass
class KnownBody:
    body: str
    fetched_at: Any


@dataclass
class WorkspacePlan:
    """Everything decided before extraction for one workspace and run."""

    mode: str
    workspace_id: str
    account: dict[str, Any]
    campaigns: list[dict[str, Any]]
    changed_campaign_ids: list[str]
    fingerprints: dict[str, str]
    reply_cursor: str | None
    reply_lookback_s: int
    reply_body_cap: int
    known_bodies: dict[str, KnownBody]
    deferred_reply_ids: list[str]
    read_event_types: bool
    synced_at: datetime
    workers: int
    body_lookup: BodyLookup | None = None
    stats: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # campaign id -> GET stats payload
    page_guides: dict[str, PageGuide] = field(default_factory=dict)  # campaign id -> which recipient pages
    counters: dict[str, int] = field(default_factory=dict)


def _count(plan: WorkspacePlan, name: str, n: int = 1) -> None:
    plan.counters[name] = plan.counters.get(name, 0) + n


@dlt.source(name=S.SOURCE_NAME)
def outreach_source(client: OutreachClient, plan: WorkspacePlan, progress: WorkspaceProgress) -> Sequence[DltResource]:
    """All read endpoints of one workspace.

    Args:
        client: the workspace's API client (holds the key; never stored by dlt).
        plan: what this run reads (mode, changed campaigns, reply cursor, body cap...).
        progress: counters for the live display and the report.

    Returns:
        The resources workspaces, campaigns, email_accounts, webhook_event_types,
        campaign_recipients, campaign_stats (+ variants, daily sends) and replies.
    """
    resources = [
        workspaces(plan),
        campaigns(plan),
        email_accounts(client, plan, progress),
        campaign_recipients(client, plan, progress),
        campaign_stats(plan, progress),
        replies(client, plan, progress),
    ]
    if plan.read_event_types:
        resources.append(webhook_event_types(client, plan, progress))
    return resources


def workspaces(plan: WorkspacePlan) -> DltResource:
    @dlt.resource(name="workspaces", write_disposition="merge", primary_key="id", columns=S.columns_for("workspaces"))
    def _workspaces() -> Iterator[dict[str, Any]]:
        yield workspace_row(plan.account, plan.synced_at)

    return _workspaces()


def campaigns(plan: WorkspacePlan) -> DltResource:
    """The campaign list (read in the plan); scd2 partitioned by workspace_id. Commits new fingerprints."""

    @dlt.resource(name="campaigns", write_disposition=S.SCD2, columns=S.columns_for("campaigns"))
    def _campaigns() -> Iterator[list[dict[str, Any]]]:
        rows = with_workspace(plan.campaigns, plan.workspace_id, "campaigns")
        state = dlt.current.source_state()
        state["fingerprints"] = dict(plan.fingerprints)
        if rows:
            yield rows

    return _campaigns()


def email_accounts(client: OutreachClient, plan: WorkspacePlan, progress: WorkspaceProgress) -> DltResource:
    @dlt.resource(name="email_accounts", write_disposition=S.SCD2, columns=S.columns_for("email_accounts"))
    def _email_accounts() -> Iterator[list[dict[str, Any]]]:
        data = client.get_data("/email-accounts")
        progress.page("email_accounts")
        rows = with_workspace(data if isinstance(data, list) else [], plan.workspace_id, "email_accounts")
        if rows:
            yield rows

    return _email_accounts()


def webhook_event_types(client: OutreachClient, plan: WorkspacePlan, progress: WorkspaceProgress) -> DltResource:
    @dlt.resource(
        name="webhook_event_types",
        write_disposition="merge",
        primary_key=list(S.PRIMARY_KEYS["webhook_event_types"]),
        columns=S.columns_for("webhook_event_types"),
    )
    def _event_types() -> Iterator[list[dict[str, Any]]]:
        data = client.get_data("/hooks/events")
        progress.page("webhook_event_types")
        rows = [
            {**item, "workspace_id": plan.workspace_id}
            for item in (data if isinstance(data, list) else [])
            if isinstance(item, Mapping) and item.get("key")
        ]
        dlt.current.source_state()["event_types_loaded"] = True
        if rows:
            yield rows

    return _event_types()


def campaign_recipients(client: OutreachClient, plan: WorkspacePlan, progress: WorkspaceProgress) -> DltResource:
    """Recipients of changed campaigns (the pages `plan.page_guides` hand out), as arrow tables."""

    @dlt.resource(
        name="campaign_recipients", write_disposition="merge", primary_key="id", columns=S.columns_for("campaign_recipients")
    )
    def _recipients() -> Iterator[Any]:
        def task_for(campaign_id: str) -> Callable[[Emit], None]:
            def run(emit: Emit) -> None:
                path = f"/campaigns/{campaign_id}/leads"
                guide = plan.page_guides.setdefault(campaign_id, PageGuide(S.PER_PAGE_RECIPIENTS))
                try:
                    while (number := guide.next_page()) is not None:
                        page = client.page(path, number, S.PER_PAGE_RECIPIENTS)
                        guide.observe(number, page.items, page.last_page)
                        progress.page("campaign_recipients")
                        emit((campaign_id, (number - 1) * S.PER_PAGE_RECIPIENTS, page.items))
                except NotFoundError:
                    log.warning("campaign %s disappeared while reading its recipients; skipped", campaign_id)
                if guide.reason:
                    log.info("campaign %s: read whole (%s), %d page(s)", campaign_id, guide.reason, guide.pages_read)

            return run

        tasks = [task_for(cid) for cid in plan.changed_campaign_ids]
        batch: list[tuple[str, int, Mapping[str, Any]]] = []
        for campaign_id, first, items in fan_out(tasks, workers=plan.workers):
            batch.extend((campaign_id, first + i, item) for i, item in enumerate(items))
            if len(batch) >= S.RECIPIENT_BATCH_ROWS:
                yield _flush(batch)
                batch = []
        if batch:
            yield _flush(batch)

    def _flush(batch: list[tuple[str, int, Mapping[str, Any]]]) -> Any:
        table = recipients_table(batch, plan.workspace_id, plan.synced_at)
        progress.rows("campaign_recipients", table.num_rows)
        return table

    return _recipients()


def campaign_stats(plan: WorkspacePlan, progress: WorkspaceProgress) -> DltResource:
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
        name="campaign_stats", write_disposition="merge", primary_key="campaign_id", columns=S.columns_for("campaign_stats")
    )
    def _stats() -> Iterator[Any]:
        for campaign_id, data in plan.stats.items():
            head, variants, daily = stats_rows(data, campaign_id, plan.workspace_id, plan.synced_at)
            progress.rows("campaign_stats", 1)
            yield head
            if variants:
                progress.rows("campaign_variants", len(variants))
                yield dlt.mark.with_hints(variants, table_hints("campaign_variants"), create_table_variant=True)
            if daily:
                progress.rows("campaign_daily_sends", len(daily))
                yield dlt.mark.with_hints(daily, table_hints("campaign_daily_sends"), create_table_variant=True)

    return _stats()


def _parse_ts(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, str) and value:
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)
    return None


def replies(client: OutreachClient, plan: WorkspacePlan, progress: WorkspaceProgress) -> DltResource:
    """Replies newest first, down to the cursor minus the lookback (quick) or all (full), with bodies.

    A reply row always carries the body already stored (``plan.known_bodies``), so
    re-reading a list item never wipes a fetched body. Bodies are fetched for
    replies without one, new first then deferred ones, up to ``reply_body_cap``.
    """

    @dlt.resource(name="replies", write_disposition="merge", primary_key="id", columns=S.columns_for("replies"))
    def _replies() -> Iterator[list[dict[str, Any]]]:
        state = dlt.current.source_state()
        cursor = _parse_ts(plan.reply_cursor) if plan.mode == "quick" else None
        stop_at = cursor - timedelta(seconds=plan.reply_lookback_s) if cursor else None
        newest: datetime | None = cursor
        need_body: list[dict[str, Any]] = []
        to_fetch: list[str] = []  # ids of new replies whose body is fetched (at most reply_body_cap)
        seen: set[str] = set()
        for page in client.iter_pages("/replies", per_page=S.PER_PAGE_REPLIES):
            progress.page("replies")
            rows: list[dict[str, Any]] = []
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
                if rid in seen:
                    continue
                seen.add(rid)
                row = reply_row(item, plan.workspace_id, plan.synced_at)
                known = plan.known_bodies.get(rid)
                if known is not None:
                    row["body"], row["body_fetched_at"] = known.body, known.fetched_at
                    rows.append(row)
                else:
                    need_body.append(row)
            if rows:
                progress.rows("replies", len(rows))
                yield rows
            # settle rows without a body chunk by chunk: holding them all until the list ends kept
            # every reply of a full sync in memory (hundreds of thousands on a large workspace)
            if len(need_body) >= S.REPLY_BODY_CHUNK_ROWS:
                yield from _settle_bodies(plan, progress, need_body, to_fetch)
                need_body = []
            if reached:
                break
        yield from _settle_bodies(plan, progress, need_body, to_fetch)
        deferred = [rid for rid in plan.deferred_reply_ids if rid not in seen]
        yield from _with_bodies(client, plan, progress, to_fetch, deferred)
        if newest is not None:
            state["reply_cursor"] = newest.isoformat()

    return _replies()


def _settle_bodies(
    plan: WorkspacePlan,
    progress: WorkspaceProgress,
    need_body: list[dict[str, Any]],
    to_fetch: list[str],
) -> Iterator[list[dict[str, Any]]]:
    """Bodies for a chunk of rows without one: the hook first (no request); rows still without a body
    join `to_fetch` while it holds fewer than `reply_body_cap`, the others land now without body (deferred)."""
    now = plan.synced_at
    if plan.body_lookup is not None and need_body:
        try:
            supplied = plan.body_lookup(need_body)
        except Exception as exc:  # the hook must never break the sync
            log.warning("reply body lookup failed (%s); fetching bodies from the API instead", type(exc).__name__)
            supplied = {}
        for row in need_body:
            body = supplied.get(str(row["id"]))
            if body is not None:
                row["body"], row["body_fetched_at"] = body, now
                _count(plan, "bodies_from_events")
    missing = [row for row in need_body if row.get("body") is None]
    room = max(0, plan.reply_body_cap - len(to_fetch))
    to_fetch.extend(str(row["id"]) for row in missing[:room])
    _count(plan, "bodies_deferred", max(0, len(missing) - room))
    settled = [row for row in need_body if row.get("body") is not None] + missing[room:]
    if settled:
        progress.rows("replies", len(settled))
        yield settled


def _with_bodies(
    client: OutreachClient,
    plan: WorkspacePlan,
    progress: WorkspaceProgress,
    to_fetch: list[str],
    deferred_ids: list[str],
) -> Iterator[list[dict[str, Any]]]:
    """GET /replies/{id} for `to_fetch` (new replies first), then for deferred ones in the room left under the cap."""
    now = plan.synced_at
    room = max(0, plan.reply_body_cap - len(to_fetch))
    ids = to_fetch + deferred_ids[:room]
    _count(plan, "bodies_deferred", max(0, len(deferred_ids) - room))

    def task_for(rid: str) -> Callable[[Emit], None]:
        def run(emit: Emit) -> None:
            try:
                full = client.get_data(f"/replies/{rid}")
            except NotFoundError:
                log.warning("reply %s disappeared before its body was read; skipped", rid)
                return
            if not isinstance(full, Mapping):
                return
            out = reply_row(full, plan.workspace_id, plan.synced_at)
            out["body"] = full.get("body")
            out["body_fetched_at"] = now
            emit(out)

        return run

    batch: list[dict[str, Any]] = []
    fetched = 0
    for out in fan_out([task_for(rid) for rid in ids], workers=plan.workers):
        batch.append(out)
        fetched += 1
        progress.page("reply_bodies")
        if len(batch) >= 500:
            progress.rows("replies", len(batch))
            yield batch
            batch = []
    _count(plan, "bodies_fetched", fetched)
    if batch:
        progress.rows("replies", len(batch))
        yield batch
