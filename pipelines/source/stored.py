"""The few reads the sync makes on the warehouse itself, through dlt's clients, in SQL that
DuckDB and PostgreSQL both run.

* `WarehouseReader` (one per batch, before and during extraction): which tables exist (asked of the
  catalog, never guessed from an error's text), the committed `sync_state` of the batch, replies still
  waiting for a body (deferred), stored bodies of re-read replies, and per-page summaries of the stored
  recipients of changed campaigns (which pages a quick sync reads, pipelines.source.recipient_pages).
The updates after a load (deletion marks, history repairs) are in `pipelines.sync.marks`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from pipelines.core import constants
from pipelines.core.root_cause import one_line
from pipelines.source.batch import KnownBody
from pipelines.source.recipient_pages import COUNTERS, StoredCampaign, StoredPage
from pipelines.source.state import STATE_TABLE, WorkspaceState, read_states

EVENTS_TABLE = "events"  # pipelines.events.loading.EVENTS_TABLE (not imported: it pulls in the spool)

log = logging.getLogger(__name__)

ID_CHUNK = 1000  # ids per `in (...)` list


class WarehouseReader:
    """Reads the warehouse for one batch through one dlt job client, opened on first use.

    `lock` (a context manager) is held around every read: the DuckDB access mutex, so a thread's read
    never runs inside another thread's load. Close it before the batch loads.
    """

    def __init__(self, pipeline: Any, lock: Any = None) -> None:
        self.pipeline = pipeline
        self.lock = lock if lock is not None else contextlib.nullcontext()
        self._client: Any = None
        self._tables: set[str] | None = None
        self._mutex = threading.Lock()

    def close(self) -> None:
        with self._mutex:
            if self._client is not None:
                with contextlib.suppress(Exception):
                    self._client.__exit__(None, None, None)
                self._client = None

    @contextlib.contextmanager
    def _sql(self) -> Iterator[Any]:
        with self._mutex, self.lock:
            if self._client is None:
                client = self.pipeline.destination_client()
                client.__enter__()
                self._client = client
            yield self._client.sql_client

    def tables(self) -> set[str]:
        """The dataset's tables, from the catalog (an empty set on a first run)."""
        if self._tables is None:
            with self._mutex, self.lock:
                if self._client is None:
                    client = self.pipeline.destination_client()
                    client.__enter__()
                    self._client = client
                wanted = [*constants.TABLES, STATE_TABLE, EVENTS_TABLE, "_dlt_loads"]
                self._tables = {name for name, columns in self._client.get_storage_tables(wanted) if columns}
        return self._tables

    def has(self, *tables: str) -> bool:
        return all(t in self.tables() for t in tables)

    # -- reads ------------------------------------------------------------------------------------
    def states(self, workspace_ids: Sequence[str]) -> dict[str, WorkspaceState]:
        if not self.has(STATE_TABLE, "_dlt_loads"):
            return {}
        with self._sql() as client:
            return read_states(client, workspace_ids)

    def lead_event_campaigns(
        self, events: Sequence[str], since: datetime | None
    ) -> list[tuple[str, str | None, datetime | None]]:
        """Campaigns named by webhook `events` (e.g. lead.unsubscribed) whose load committed after `since`:
        (campaign id, the event's workspace id or None, when its newest such load completed)."""
        if not events or not self.has(EVENTS_TABLE, "_dlt_loads"):
            return []
        with self._sql() as client:
            table = client.make_qualified_table_name(EVENTS_TABLE)
            loads = client.make_qualified_table_name("_dlt_loads")
            marks = ", ".join(["%s"] * len(events))
            after = " and l.inserted_at > %s" if since is not None else ""
            rows = client.execute_sql(
                f"select e.campaign_id, e.workspace_id, max(l.inserted_at) from {table} e join {loads} l "
                f"on l.load_id = e._dlt_load_id and l.status = 0 where e.event in ({marks}) "
                f"and e.campaign_id is not null{after} group by e.campaign_id, e.workspace_id",
                *events,
                *([since] if since is not None else []),
            )
        return [(str(c), None if w is None else str(w), t) for c, w, t in rows or []]

    def history_floor(self, workspace_ids: Sequence[str]) -> datetime | None:
        """The newest `_dlt_valid_from` of these workspaces' history tables (None: no history yet)."""
        tables = [t for t in constants.HISTORY_TABLES if self.has(t)]
        if not workspace_ids or not tables:
            return None
        marks = ", ".join(["%s"] * len(workspace_ids))
        newest: list[datetime] = []
        with self._sql() as client:
            for name in tables:
                rows = client.execute_sql(
                    f"select max(_dlt_valid_from) from {client.make_qualified_table_name(name)} "
                    f"where workspace_id in ({marks})",
                    *workspace_ids,
                )
                value = rows[0][0] if rows else None
                if isinstance(value, datetime):
                    newest.append(value if value.tzinfo else value.replace(tzinfo=UTC))
        return max(newest) if newest else None

    def deferred_reply_ids(self, workspace_ids: Sequence[str]) -> dict[str, list[str]]:
        """Ids of current replies still without a body, per workspace."""
        if not workspace_ids or not self.has("replies"):
            return {}
        out: dict[str, list[str]] = {}
        with self._sql() as client:
            table = client.make_qualified_table_name("replies")
            marks = ", ".join(["%s"] * len(workspace_ids))
            rows = client.execute_sql(
                f"select workspace_id, id from {table} where body is null and deleted_at is null "
                f"and workspace_id in ({marks}) order by workspace_id, received_at desc",
                *workspace_ids,
            )
        for ws, rid in rows or []:
            out.setdefault(str(ws), []).append(str(rid))
        return out

    def stored_bodies(self, workspace_id: str, reply_ids: Sequence[str]) -> dict[str, KnownBody]:
        """Stored bodies of these replies (those that have one)."""
        if not reply_ids or not self.has("replies"):
            return {}
        out: dict[str, KnownBody] = {}
        with self._sql() as client:
            table = client.make_qualified_table_name("replies")
            for start in range(0, len(reply_ids), ID_CHUNK):
                chunk = list(reply_ids[start : start + ID_CHUNK])
                marks = ", ".join(["%s"] * len(chunk))
                rows = client.execute_sql(
                    f"select id, body, body_fetched_at from {table} where workspace_id = %s and body is not null "
                    f"and id in ({marks})",
                    workspace_id,
                    *chunk,
                )
                for rid, body, fetched_at in rows or []:
                    out[str(rid)] = KnownBody(body, fetched_at)
        return out

    def stored_pages(self, campaign_ids: Sequence[str], per_page: int) -> dict[str, StoredCampaign]:
        """Per-page summaries of the stored recipients of `campaign_ids` (see pipelines.source.recipient_pages).

        Any failure returns nothing: every changed campaign is then read whole (an optimisation lost,
        never data).
        """
        if not campaign_ids or not self.has("campaign_recipients", "campaign_stats"):
            return {}
        try:
            with self._sql() as client:
                recipients = client.make_qualified_table_name("campaign_recipients")
                stats = client.make_qualified_table_name("campaign_stats")
                marks = ", ".join(["%s"] * len(campaign_ids))
                sql = _STORED_PAGES_SQL.format(per_page=int(per_page), table=recipients, ids=marks)
                with client.execute_query(sql, *campaign_ids) as cursor:
                    columns = [c[0] for c in cursor.description]
                    rows = [dict(zip(columns, r, strict=True)) for r in cursor.fetchall()]
                statuses = dict(
                    client.execute_sql(
                        f"select campaign_id, campaign_status from {stats} where deleted_at is null "
                        f"and campaign_id in ({marks})",
                        *campaign_ids,
                    )
                    or []
                )
        except Exception as exc:  # noqa: BLE001 - guidance is an optimisation; without it campaigns are read whole
            log.info(
                "stored recipient pages not available (%s); changed campaigns are read whole",
                f"{type(exc).__name__}: {one_line(exc, 160)}",
            )
            return {}
        by_campaign: dict[str, list[dict[str, Any]]] = {}
        for row in rows:
            by_campaign.setdefault(str(row["campaign_id"]), []).append(row)
        return {cid: stored_campaign(pages, statuses.get(cid)) for cid, pages in by_campaign.items()}


# Per counter: the key that orders a stored page among the likeliest to hold that counter's changes
# (pipelines.source.recipient_pages), and whether larger keys go first. Pending pages follow the opens,
# clicks, sends and bounces of recipients emailed for the first time since the last sync.
_CANDIDATE_KEYS: dict[str, tuple[tuple[str, bool], ...]] = {
    "pending": (("pending_key", False),),
    "sent": (("due_key", False), ("pending_key", False)),
    "bounced": (("pending_key", False), ("live_key", True)),
    "opened": (("open_key", True), ("pending_key", False)),
    "clicked": (("click_key", True), ("pending_key", False)),
    "replied": (("live_key", True),),
    "unsubscribed": (("reachable_key", True),),
}

# Portable SQL (DuckDB and PostgreSQL): aggregate FILTER clauses, extract(epoch ...), explicit group by;
# the first and last id of each page come from a join on the page's first and last position.
_STORED_PAGES_SQL = """
with r as (
    select campaign_id, id, status, current_step, opened_at, clicked_at, list_position,
           extract(epoch from last_sent_at) as sent_epoch,
           cast(floor(list_position / {per_page}) as bigint) + 1 as page
    from {table}
    where deleted_at is null and campaign_id in ({ids})
),
pages as (
    select campaign_id, page,
           count(*) as rows_, sum(coalesce(current_step, 0)) as sent, count(opened_at) as opened,
           count(clicked_at) as clicked,
           count(*) filter (where status = 'replied') as replied,
           count(*) filter (where status = 'bounced') as bounced,
           count(*) filter (where status = 'unsubscribed') as unsubscribed,
           count(*) filter (where status = 'pending') as pending,
           min(list_position) as first_position, max(list_position) as last_position,
           min(list_position) filter (where status = 'pending') as pending_key,
           min(sent_epoch) filter (where status = 'active') as due_key,
           max(sent_epoch) filter (where current_step > 0 and opened_at is null) as open_key,
           max(sent_epoch) filter (where current_step > 0 and clicked_at is null) as click_key,
           max(sent_epoch) filter (where current_step > 0
                                   and status not in ('replied', 'bounced', 'unsubscribed')) as live_key,
           max(sent_epoch) filter (where current_step > 0 and status not in ('bounced', 'unsubscribed'))
               as reachable_key,
           count(list_position) = count(*) as positioned
    from r
    group by campaign_id, page
)
select p.*, f.id as first_id, l.id as last_id
from pages p
left join r f on f.campaign_id = p.campaign_id and f.list_position = p.first_position
left join r l on l.campaign_id = p.campaign_id and l.list_position = p.last_position
"""


def stored_campaign(rows: list[dict[str, Any]], status: Any) -> StoredCampaign:
    positioned = all(r["positioned"] for r in rows)
    rows = [r for r in rows if r["page"] is not None]
    pages = {
        int(r["page"]): StoredPage(
            rows=int(r["rows_"]),
            vector=(int(r["rows_"]), *(int(r[name] or 0) for name in COUNTERS[1:])),
            first_id=str(r["first_id"]),
            last_id=str(r["last_id"]),
        )
        for r in rows
    }
    candidates: dict[str, list[int]] = {}
    for counter, keys in _CANDIDATE_KEYS.items():
        order: list[int] = []
        for key, descending in keys:
            keyed = [r for r in rows if r[key] is not None]
            keyed.sort(key=lambda r: (-float(r[key]) if descending else float(r[key]), r["page"]))
            order.extend(int(r["page"]) for r in keyed)
        candidates[counter] = list(dict.fromkeys(order))
    return StoredCampaign(
        status=None if status is None else str(status), pages=pages, candidates=candidates, positioned=positioned
    )
