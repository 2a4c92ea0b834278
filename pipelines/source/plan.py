"""Plan: decide, before dlt extracts anything, what each workspace of a batch reads this run.

`plan_batch`, for the workspaces of one batch: their committed state, the campaign list, mailboxes
   and (until loaded once) the event types, read on a few threads; the campaigns whose fingerprint
   changed; their stats; in a quick sync, which of their recipient pages to read; replies still
   waiting for a body. Warehouse reads are one query per batch, not one per workspace.

A workspace whose reads fail is marked failed in its plan; the others go on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from pipelines.api.accounts import Workspace, client_for
from pipelines.core import constants
from pipelines.core.config import OutreachSettings
from pipelines.core.errors import NotFoundError
from pipelines.core.fanout import Emit, fan_out
from pipelines.core.progress import WorkspaceProgress, expected_recipient_pages
from pipelines.core.timestamps import parse_instant
from pipelines.source.batch import Batch, Reads, WorkspacePlan, guarded
from pipelines.source.quarantine import TABLE_ENDPOINTS
from pipelines.source.recipient_pages import PageGuide
from pipelines.source.shaping import campaign_fingerprint
from pipelines.source.state import WorkspaceState

log = logging.getLogger(__name__)

#: webhook events that make a quick sync read their campaign again: the campaign list's running
#: totals have no unsubscribe count, so an unsubscribe leaves the fingerprint alone; a bounce changes it
#: too, but its event may be loaded before the list shows it
REREAD_EVENTS = ("lead.unsubscribed", "lead.bounced")


def plan_batch(
    batch: Batch,
    reader: Reads,
    progress_for: Callable[[Workspace], WorkspaceProgress],
    settings: OutreachSettings,
    workspaces: Sequence[Workspace],
) -> None:
    """Fill `batch.plans` for `workspaces`: state, campaigns, mailboxes, event types, stats, page guides."""
    states = reader.states([w.workspace_id for w in workspaces])
    deferred = reader.deferred_reply_ids([w.workspace_id for w in workspaces])
    for ws in workspaces:
        progress = progress_for(ws)
        progress.label = ws.name
        client = client_for(ws.api_key, settings, batch.deadline)
        progress.stats_source = client.stats.snapshot
        progress.paging_source = client.paging_progress  # pages read/known, for the ETA
        plan = WorkspacePlan(
            workspace=ws,
            mode=batch.mode,
            client=client,
            progress=progress,
            state=states.get(ws.workspace_id, WorkspaceState()),
            deferred_reply_ids=deferred.get(ws.workspace_id, []),
        )
        batch.plans.append(plan)
    _read_lists(batch)
    for plan in batch.ok_plans:
        plan.fingerprints = {str(c["id"]): campaign_fingerprint(c) for c in plan.campaigns}
        plan.changed_campaign_ids = [
            cid
            for cid, fp in plan.fingerprints.items()
            if batch.mode == "full" or plan.state.fingerprints.get(cid) != fp
        ]
    if batch.mode == "quick":
        _mark_campaigns_from_events(batch, reader)
    for plan in batch.ok_plans:
        # the ETA knows the recipient pages to come
        plan.progress.expect(
            expected_recipient_pages(
                plan.campaigns, plan.changed_campaign_ids, batch.mode, constants.PER_PAGE_RECIPIENTS
            )
        )
    _read_stats(batch)
    _guide_pages(batch, reader)
    for plan in batch.plans:
        plan.planned_rejections = len(plan.rejections)


def _mark_campaigns_from_events(batch: Batch, reader: Reads) -> None:
    """Quick: a campaign named by a lead.unsubscribed or lead.bounced event loaded (from the spool, this run
    or between runs) after the workspace's last committed sync is read again though its fingerprint did not
    change, so the recipient is right in the warehouse before the nightly full sync. A workspace without a
    committed state reads every campaign anyway."""
    plans = [p for p in batch.ok_plans if p.state.loaded_at is not None]
    if not plans:
        return
    since = min(parse_instant(p.state.loaded_at) for p in plans)
    found = reader.lead_event_campaigns(REREAD_EVENTS, since)
    for plan in plans:
        last = parse_instant(plan.state.loaded_at)
        changed = set(plan.changed_campaign_ids)
        for campaign_id, workspace_id, loaded_at in found:
            if (
                campaign_id in plan.fingerprints
                and campaign_id not in changed
                and workspace_id in (None, plan.workspace_id)
                and loaded_at is not None
                and parse_instant(loaded_at) > last
            ):
                plan.changed_campaign_ids.append(campaign_id)
                plan.campaigns_from_events.append(campaign_id)
                changed.add(campaign_id)
        if plan.campaigns_from_events:
            log.info(
                "workspace %s: %d campaign(s) read again for webhook events (%s)",
                plan.workspace_id, len(plan.campaigns_from_events), ", ".join(REREAD_EVENTS),
            )  # fmt: skip


def _read_lists(batch: Batch) -> None:
    """Campaign list, mailboxes and (when needed) event types of every workspace, on a few threads."""
    tasks: list[Callable[[Emit], None]] = []
    for plan in batch.plans:
        tasks.append(guarded(plan, _task(_read_campaigns, plan)))
        tasks.append(guarded(plan, _task(_read_mailboxes, plan)))
        if batch.mode == "full" or not plan.state.event_types_loaded:
            tasks.append(guarded(plan, _task(_read_event_types, plan)))
    for _ in fan_out(tasks, workers=batch.workers):
        pass


def _task(read: Callable[[WorkspacePlan], None], plan: WorkspacePlan) -> Callable[[Emit], None]:
    def work(emit: Emit) -> None:
        read(plan)

    return work


def _read_campaigns(plan: WorkspacePlan) -> None:
    plan.progress.set_stage("campaigns")
    endpoint = TABLE_ENDPOINTS["campaigns"]
    seen: set[str] = set()
    for page in plan.client.iter_pages("/campaigns", per_page=constants.PER_PAGE_CAMPAIGNS):
        plan.progress.page("campaigns")
        for item in page.items:
            if not isinstance(item, dict) or item.get("id") in (None, ""):
                plan.reject(endpoint, page.current_page, "no id (primary key)", item)
            elif str(item["id"]) not in seen:  # a campaign created while paging shifts pages: drop repeats
                seen.add(str(item["id"]))
                plan.campaigns.append(item)
                plan.campaign_pages[str(item["id"])] = page.current_page


def _read_mailboxes(plan: WorkspacePlan) -> None:
    data = plan.client.get_data("/email-accounts")
    plan.progress.page("email_accounts")
    for item in data if isinstance(data, list) else []:
        if isinstance(item, dict) and item.get("id") not in (None, ""):
            plan.mailboxes.append(item)
        else:
            plan.reject(TABLE_ENDPOINTS["email_accounts"], None, "no id (primary key)", item)


def _read_event_types(plan: WorkspacePlan) -> None:
    data = plan.client.get_data("/hooks/events")
    plan.progress.page("webhook_event_types")
    plan.event_types = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []


def _read_stats(batch: Batch) -> None:
    """GET /campaigns/{id}/stats of every changed campaign of the batch (a quick sync plans its page reads
    with them), interleaved across workspaces so no one key's budget holds every thread."""

    def task_for(plan: WorkspacePlan, campaign_id: str) -> Callable[[Emit], None]:
        def work(emit: Emit) -> None:
            try:
                data = plan.client.get_data(f"/campaigns/{constants.segment(campaign_id)}/stats")
            except NotFoundError:
                log.warning("campaign %s disappeared before its stats were read; skipped", campaign_id)
                return
            plan.progress.page("campaign_stats")
            if isinstance(data, dict):
                plan.stats[campaign_id] = data

        return guarded(plan, work)

    for plan in batch.ok_plans:
        plan.progress.set_stage("stats")
    tasks = interleave([[task_for(p, cid) for cid in p.changed_campaign_ids] for p in batch.ok_plans])
    for _ in fan_out(tasks, workers=batch.workers):
        pass


def reguide(batch: Batch, reader: Reads) -> None:
    """Fresh page guides (a guide remembers the pages it handed out) for an extraction done again."""
    _guide_pages(batch, reader)


def _guide_pages(batch: Batch, reader: Reads) -> None:
    """Which recipient pages to read per changed campaign: all of them in a full sync; in a quick sync,
    those that explain the change in its stats (pipelines.source.recipient_pages)."""
    per_page = constants.PER_PAGE_RECIPIENTS
    stored = {}
    if batch.mode == "quick":
        stored = reader.stored_pages([cid for p in batch.ok_plans for cid in p.changed_campaign_ids], per_page)
    for plan in batch.ok_plans:
        plan.page_guides = {
            cid: PageGuide(per_page, stored.get(cid), plan.stats.get(cid))
            if batch.mode == "quick"
            else PageGuide(per_page)
            for cid in plan.changed_campaign_ids
        }


def interleave(groups: Sequence[Sequence[Any]]) -> list[Any]:
    """Round-robin over groups: [a1, b1, c1, a2, b2, ...] (work of many keys shares the threads fairly)."""
    out: list[Any] = []
    longest = max((len(g) for g in groups), default=0)
    for i in range(longest):
        out.extend(g[i] for g in groups if i < len(g))
    return out
