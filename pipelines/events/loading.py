"""Webhook events: the spool -> table ``events`` in dataset ``outreach``, exactly once.

Use it like this (the sync does, before it reads the API)::

    resource = events_resource(spool_dir)          # snapshots the spool now
    pipeline.run(resource)                           # the load commits ...
    mark_spool_loaded(spool_dir, resource.spool_snapshot)   # ... then files move to done/

Exactly once: the table merges on a stable ``event_id`` (a hash of the payload,
see `pipelines.events.spool.event_id_for`) with dlt's insert-only merge, so a retried
or replayed delivery, or a file loaded twice (a crash between the commit and
`mark_spool_loaded`), adds no row. A sealed file is marked done only after its
load commits, so a crash before that reloads it. The first receipt of an event wins.

`event_bodies_for` matches ``lead.replied`` events to replies, so the sync can
take reply bodies from events instead of calling ``GET /replies/{id}``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import dlt
from dlt.common.schema.typing import TTableSchemaColumns
from dlt.extract.resource import DltResource

from pipelines.core.dlt_private import untraced_config
from pipelines.core.timestamps import TimestampError, parse_optional
from pipelines.events import spool, spool_reader

log = logging.getLogger(__name__)

EVENTS_TABLE = "events"
DEFAULT_MAX_SKEW = timedelta(hours=1)
DONE_RETENTION_S = 7 * 24 * 3600  # loaded spool files are kept this long, for audit and replays

EVENTS_COLUMNS: TTableSchemaColumns = {
    "event_id": {
        "data_type": "text",
        "nullable": False,
        "description": "SHA-256 (first 32 hex) of the canonical payload: the same for every delivery of one event",
    },
    "event": {"data_type": "text", "description": "event key, e.g. lead.replied"},
    "created_at": {"data_type": "timestamp", "description": "when the event happened (service time, from the payload)"},
    "received_at": {
        "data_type": "timestamp",
        "description": "when the receiver first spooled it (receiver wall clock, UTC)",
    },
    "workspace_id": {
        "data_type": "text",
        "description": "workspace whose signing secret verified it; null when the receiver has one unnamed secret",
    },
    "campaign_id": {"data_type": "text", "description": "data.campaign_id when present"},
    "lead_id": {"data_type": "text", "description": "data.lead_id when present"},
    "email": {"data_type": "text", "description": "data.email when present"},
    "reply_type": {"data_type": "text", "description": "data.reply_type (lead.replied)"},
    "data": {"data_type": "json", "description": "the payload's data object as delivered"},
}


def _event_row(record: Mapping[str, Any]) -> dict[str, Any]:
    """One `events` row from one spool record."""
    payload = record.get("payload") or {}
    data = found if isinstance(found := payload.get("data"), dict) else {}
    return {
        "event_id": record["event_id"],
        "event": payload.get("event") or record.get("event"),
        "created_at": payload.get("created_at"),
        "received_at": record.get("received_at"),
        "workspace_id": record.get("workspace_id"),
        "campaign_id": data.get("campaign_id"),
        "lead_id": data.get("lead_id"),
        "email": data.get("email"),
        "reply_type": data.get("reply_type"),
        "data": data,
    }


def _rows(snap: spool_reader.SpoolSnapshot) -> Iterator[list[dict[str, Any]]]:
    """One page per spool file; an event seen earlier in this run is skipped."""
    seen: set[str] = set()
    for path in (*snap.sealed, *snap.live):
        page: list[dict[str, Any]] = []
        for record in spool_reader.read_records(path):
            if record["event_id"] in seen:
                continue
            seen.add(record["event_id"])
            page.append(_event_row(record))
        if page:
            yield page


def events_resource(
    spool_dir: Path | str | None = None, snapshot: spool_reader.SpoolSnapshot | None = None
) -> DltResource:
    """A dlt resource for table ``events`` from the spool (default ``data/spool/``).

    The spool is snapshotted when this is called (sealing files of dead
    writers); the snapshot is on ``resource.spool_snapshot`` for
    `mark_spool_loaded`. A missing spool directory gives an empty resource.
    """
    snap = snapshot or spool_reader.snapshot(spool_dir or spool.DEFAULT_SPOOL_DIR)

    @dlt.resource(
        name=EVENTS_TABLE,
        write_disposition={"disposition": "merge", "strategy": "insert-only"},
        primary_key="event_id",
        columns=EVENTS_COLUMNS,
    )
    def events() -> Iterator[list[dict[str, Any]]]:
        yield from _rows(snap)

    resource = events()
    resource.spool_snapshot = snap  # type: ignore[attr-defined]
    return resource


def mark_spool_loaded(
    spool_dir: Path | str | None, files: spool_reader.SpoolSnapshot | Iterable[Path | str] | None
) -> int:
    """Move the snapshot's sealed files to ``done/``. Call only after the load committed.

    Live files (a running receiver's) stay, and are read again next time.
    Returns the number of files moved; idempotent.
    """
    if files is None:
        return 0
    paths = tuple(files.sealed if isinstance(files, spool_reader.SpoolSnapshot) else files)
    moved = spool_reader.mark_loaded(spool_dir or spool.DEFAULT_SPOOL_DIR, paths)
    log.info("spool: %d file(s) marked loaded", len(moved))
    return len(moved)


def load_spool(pipeline: dlt.Pipeline, spool_dir: Path | str | None = None) -> int:
    """Load the spool with `pipeline`, then mark its sealed files done; returns events read.

    For callers that load events on their own (a quick flow between syncs).
    The pipeline must write to the dataset ``outreach``.
    """
    resource = events_resource(spool_dir)
    snap: spool_reader.SpoolSnapshot = resource.spool_snapshot  # type: ignore[attr-defined]
    if not snap.sealed and not snap.live:
        return 0
    info = pipeline.run(resource)
    info.raise_on_failed_jobs()
    mark_spool_loaded(spool_dir, snap)
    spool_reader.prune_done(spool_dir or spool.DEFAULT_SPOOL_DIR, older_than_s=DONE_RETENTION_S)
    normalized = pipeline.last_trace.last_normalize_info if pipeline.last_trace else None
    counts = normalized.row_counts if normalized else {}
    return int(counts.get(EVENTS_TABLE, 0))


# -- reply bodies from lead.replied events --------------------------------------
def _as_datetime(value: Any) -> datetime | None:
    """An event's timestamp, or None when it has none that reads (`pipelines.core.timestamps`)."""
    try:
        return parse_optional(value)
    except TimestampError:
        return None


def replied_events_from_spool(
    spool_dir: Path | str | None = None, *, include_done: bool = True
) -> list[dict[str, Any]]:
    """``lead.replied`` payload data (with created_at) from the spool files, done ones included."""
    root = Path(spool_dir or spool.DEFAULT_SPOOL_DIR)
    snap = spool_reader.snapshot(root)
    paths = [*snap.sealed, *snap.live]
    if include_done and (root / spool.DONE_DIR).is_dir():
        paths += sorted((root / spool.DONE_DIR).glob("events-*.jsonl"))
    out: list[dict[str, Any]] = []
    for path in paths:
        for record in spool_reader.read_records(path):
            payload = record.get("payload") or {}
            if payload.get("event") == "lead.replied" and isinstance(payload.get("data"), dict):
                out.append({**payload["data"], "created_at": payload.get("created_at")})
    return out


def replied_events_from_pipeline(
    pipeline: dlt.Pipeline, *, since: datetime | None = None, until: datetime | None = None
) -> list[dict[str, Any]]:
    """``lead.replied`` payload data (with created_at) from the warehouse's ``events`` table,
    optionally only those created in [since, until]."""
    import json

    query = "select created_at, data from {table} where event = 'lead.replied'"
    args: list[Any] = []
    if since is not None and until is not None:
        query += " and created_at between %s and %s"
        args = [since, until]
    try:
        with untraced_config(), pipeline.sql_client() as client:  # see pipelines/core/dlt_private.py
            rows = client.execute_sql(query.format(table=client.make_qualified_table_name(EVENTS_TABLE)), *args)
    except Exception as exc:  # noqa: BLE001 - no events table yet, or no destination: bodies come from the API
        log.debug("no lead.replied events in the warehouse: %s", type(exc).__name__)
        return []
    out: list[dict[str, Any]] = []
    for created_at, data in rows or []:
        payload = json.loads(data) if isinstance(data, str) else data
        if isinstance(payload, dict):
            out.append({**payload, "created_at": created_at})
    return out


def event_bodies_for(
    replies: Iterable[Mapping[str, Any]],
    events: Iterable[Mapping[str, Any]],
    *,
    max_skew: timedelta = DEFAULT_MAX_SKEW,
) -> dict[str, str]:
    """Reply bodies taken from ``lead.replied`` events: ``{reply_id: body}``.

    The payload has no reply id, so a reply (id, campaign_id, from, received_at)
    matches an event (campaign_id, email, created_at, body) when the campaign
    is the same, ``lower(email) == lower(from)``, and ``created_at`` is within
    `max_skew` of ``received_at``; the nearest pairs win, and each event and
    each reply is used at most once. Replies with no match are absent (the sync
    fetches those bodies from the API).
    """
    by_key: dict[tuple[str, str], list[tuple[datetime, str]]] = {}
    for ev in events:
        body, at = ev.get("body"), _as_datetime(ev.get("created_at"))
        campaign, email = ev.get("campaign_id"), ev.get("email")
        if isinstance(body, str) and at and campaign and isinstance(email, str):
            by_key.setdefault((str(campaign), email.lower()), []).append((at, body))
    candidates: list[tuple[float, str, int, tuple[str, str], str]] = []
    for reply in replies:
        reply_id, sender, at = reply.get("id"), reply.get("from"), _as_datetime(reply.get("received_at"))
        if not reply_id or not isinstance(sender, str) or at is None:
            continue
        key = (str(reply.get("campaign_id")), sender.lower())
        for index, (ev_at, body) in enumerate(by_key.get(key, ())):
            skew = abs((ev_at - at).total_seconds())
            if skew <= max_skew.total_seconds():
                candidates.append((skew, str(reply_id), index, key, body))
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    bodies: dict[str, str] = {}
    used: set[tuple[tuple[str, str], int]] = set()
    for _skew, reply_id, index, key, body in candidates:
        if reply_id in bodies or (key, index) in used:
            continue
        bodies[reply_id] = body
        used.add((key, index))
    return bodies


def bodies_from_events(
    replies: Sequence[Mapping[str, Any]],
    *,
    pipeline: dlt.Pipeline | None = None,
    spool_dir: Path | str | None = None,
    max_skew: timedelta = DEFAULT_MAX_SKEW,
) -> dict[str, str]:
    """`event_bodies_for` over the ``lead.replied`` events in the warehouse (via `pipeline`,
    which the sync has just loaded the spool into), or in the spool when there is no pipeline."""
    if not replies:
        return {}
    if pipeline is not None:
        times = [t for t in (_as_datetime(r.get("received_at")) for r in replies) if t is not None]
        if not times:
            return {}
        events = replied_events_from_pipeline(pipeline, since=min(times) - max_skew, until=max(times) + max_skew)
    elif spool_dir is not None:
        events = replied_events_from_spool(spool_dir)
    else:
        return {}
    return event_bodies_for(replies, events, max_skew=max_skew)
