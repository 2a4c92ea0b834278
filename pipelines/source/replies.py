"""The `replies` resource of the batch source (pipelines.source.batch_source): replies newest first, down to the cursor
minus the lookback (quick) or all (full), each with its body: the stored one, one from a webhook event
(the `body_lookup` hook), or `GET /replies/{id}` under the per-run cap (the rest deferred).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime, timedelta
from typing import Any

import dlt
from dlt.extract.resource import DltResource

from pipelines.core import constants
from pipelines.core.errors import NotFoundError
from pipelines.core.fanout import Emit, fan_out
from pipelines.core.timestamps import parse_optional
from pipelines.source.batch import Batch, KnownBody, Reads, WorkspacePlan, guarded
from pipelines.source.plan import interleave
from pipelines.source.quarantine import REPLY_BODY_ENDPOINT
from pipelines.source.shaping import reply_row

log = logging.getLogger(__name__)


class _ReplyRun:
    """One workspace's reply reading in this run: ids seen, bodies to fetch (under the cap), the new cursor."""

    def __init__(self, plan: WorkspacePlan) -> None:
        self.plan = plan
        self.seen: set[str] = set()
        self.to_fetch: list[str] = []


def replies(batch: Batch, reader: Reads) -> DltResource:
    """Replies newest first, down to the cursor minus the lookback (quick) or all (full), with bodies.

    A reply row always carries the body already stored, so re-reading a list item never wipes a fetched
    body (stored bodies are looked up per chunk of re-read replies). Bodies are fetched for replies
    without one, new first then deferred ones, up to ``reply_body_cap`` per workspace.
    """

    @dlt.resource(name="replies", write_disposition="merge", primary_key="id", columns=constants.columns_for("replies"))
    def _replies() -> Iterator[list[dict[str, Any]]]:
        runs = [_ReplyRun(plan) for plan in batch.ok_plans]
        tasks = [guarded(run.plan, _reply_task(batch, reader, run)) for run in runs]
        for plan, rows in fan_out(tasks, workers=batch.workers):
            plan.add_rows("replies", len(rows))
            yield rows
        yield from _fetch_bodies(batch, [run for run in runs if run.plan.ok])
        batch.finished("replies")

    return _replies()


def _reply_task(batch: Batch, reader: Reads, run: _ReplyRun) -> Callable[[Emit], None]:
    def work(emit: Emit) -> None:
        _list_replies(batch, reader, run, emit)

    return work


def _list_replies(batch: Batch, reader: Reads, run: _ReplyRun, emit: Emit) -> None:
    """Page one workspace's replies; emit (plan, rows) per chunk, bodies settled."""
    plan = run.plan
    cursor = parse_optional(plan.state.reply_cursor) if batch.mode == "quick" else None
    stop_at = cursor - timedelta(seconds=batch.reply_lookback_s) if cursor else None
    newest: datetime | None = cursor
    chunk: list[dict[str, Any]] = []
    for page in plan.client.iter_pages("/replies", per_page=constants.PER_PAGE_REPLIES):
        plan.progress.page("replies")
        reached = False
        for item in page.items:
            shaped = reply_row(item, plan.workspace_id, batch.synced_at) if isinstance(item, Mapping) else {}
            admitted = plan.admit("replies", [(item, shaped)], page.current_page)
            if not admitted:
                continue
            row = admitted[0]
            received = row.get("received_at") if isinstance(row.get("received_at"), datetime) else None
            if stop_at is not None and received is not None and received < stop_at:
                reached = True
                continue
            if received is not None and (newest is None or received > newest):
                newest = received
            rid = str(item["id"])
            if rid in run.seen:
                continue
            run.seen.add(rid)
            chunk.append(row)
        # settle rows chunk by chunk: holding them all until the list ends kept every reply of a full
        # sync in memory (hundreds of thousands on a large workspace)
        if len(chunk) >= constants.REPLY_BODY_CHUNK_ROWS:
            _settle(batch, reader, run, chunk, emit)
            chunk = []
        if reached:
            break
    _settle(batch, reader, run, chunk, emit)
    if newest is not None:
        plan.reply_cursor = newest.isoformat()
    elif plan.state.reply_cursor:
        plan.reply_cursor = plan.state.reply_cursor


def _settle(batch: Batch, reader: Reads, run: _ReplyRun, chunk: list[dict[str, Any]], emit: Emit) -> None:
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
            full = plan.client.get_data(f"/replies/{constants.segment(rid)}")
        except NotFoundError:
            log.warning("reply %s disappeared before its body was read; skipped", rid)
            return
        if not isinstance(full, Mapping):
            return
        out = reply_row(full, plan.workspace_id, batch.synced_at)
        out["body"] = full.get("body")
        out["body_fetched_at"] = batch.synced_at
        # its list item was counted already: a reply is one record, read twice
        for row in plan.admit("replies", [(full, out)], endpoint=REPLY_BODY_ENDPOINT, count=False):
            emit((plan, row))

    return guarded(plan, work)
