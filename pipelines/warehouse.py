"""The few reads and updates the sync makes on the destination itself, through dlt's sql_client.

* before extraction: bodies already stored (so a re-read list item keeps its body)
  and replies still waiting for a body (deferred);
* before a quick extraction: per-page summaries of the stored recipients of changed campaigns
  (which pages to read, pipelines.recipient_pages);
* after a full load: mark rows the API no longer returns (``deleted_at``).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pipelines import settings as S
from pipelines.recipient_pages import COUNTERS, StoredCampaign, StoredPage
from pipelines.source import KnownBody

log = logging.getLogger(__name__)


def _missing_relation(exc: Exception) -> bool:
    from dlt.destinations.exceptions import DatabaseUndefinedRelation

    text = str(exc).lower()
    return isinstance(exc, DatabaseUndefinedRelation) or "does not exist" in text or "not found" in text


def read_reply_bodies(pipeline: Any, workspace_id: str) -> tuple[dict[str, KnownBody], list[str]]:
    """(stored bodies by reply id, ids of current replies without a body yet) for one workspace."""
    try:
        with pipeline.sql_client() as client:
            table = client.make_qualified_table_name("replies")
            rows = client.execute_sql(
                f"select id, body, body_fetched_at, deleted_at from {table} where workspace_id = %s",
                workspace_id,
            )
    except Exception as exc:  # first run: no dataset/table yet
        if _missing_relation(exc) or "catalog" in str(exc).lower():
            return {}, []
        raise
    known: dict[str, KnownBody] = {}
    deferred: list[str] = []
    for rid, body, fetched_at, deleted_at in rows or []:
        if body is None:
            if deleted_at is None:
                deferred.append(str(rid))
        else:
            known[str(rid)] = KnownBody(body, fetched_at)
    return known, deferred


def mark_deleted(pipeline: Any, workspace_id: str, synced_at: datetime) -> dict[str, int]:
    """Set deleted_at on this workspace's rows that the full sync at `synced_at` did not re-emit."""
    marked: dict[str, int] = {}
    with pipeline.sql_client() as client:
        for name in S.SOFT_DELETE_TABLES:
            table = client.make_qualified_table_name(name)
            condition = (
                f"workspace_id = %s and deleted_at is null and (synced_at is null or synced_at < %s)"
            )
            try:
                rows = client.execute_sql(f"select count(*) from {table} where {condition}", workspace_id, synced_at)
            except Exception as exc:
                if _missing_relation(exc):
                    continue
                raise
            count = int(rows[0][0]) if rows else 0
            if count:
                client.execute_sql(f"update {table} set deleted_at = %s where {condition}", synced_at, workspace_id, synced_at)
                log.info("%s: %d row(s) no longer returned by the API marked deleted", name, count)
            marked[name] = count
    return marked


def drop_duplicate_history_rows(pipeline: Any, workspace_id: str) -> int:
    """Remove exact duplicate scd2 rows (same row hash and validity) of one workspace.

    Why: when a load is killed after a staging copy job committed but before dlt recorded it, the
    resumed load copies that file into staging again; dlt's scd2 insert does not de-duplicate staging
    (its delete-insert merge does), so the same version would be inserted twice. DuckDB only (rowid);
    elsewhere a no-op with a debug log.
    """
    removed = 0
    try:
        with pipeline.sql_client() as client:
            for name in ("campaigns", "email_accounts"):
                table = client.make_qualified_table_name(name)
                dup = (
                    f"select rowid from (select rowid, row_number() over (partition by _dlt_id, _dlt_valid_from "
                    f"order by rowid) as rn from {table} where workspace_id = %s) where rn > 1"
                )
                rows = client.execute_sql(f"select count(*) from ({dup})", workspace_id)
                count = int(rows[0][0]) if rows else 0
                if count:
                    client.execute_sql(f"delete from {table} where rowid in ({dup})", workspace_id)
                    log.warning("%s: removed %d duplicate history row(s) left by a resumed load", name, count)
                    removed += count
    except Exception as exc:  # noqa: BLE001 - a repair step must not fail the sync
        if not _missing_relation(exc):
            log.debug("duplicate history check skipped (%s)", type(exc).__name__)
    return removed


# Per counter: the key that orders a stored page among the likeliest to hold that counter's changes
# (pipelines.recipient_pages), and whether larger keys go first. Pending pages follow the opens,
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

_STORED_PAGES_SQL = """
select campaign_id,
       cast(floor(list_position / {per_page}) as bigint) + 1 as page,
       count(*) as rows_, sum(coalesce(current_step, 0)) as sent, count(opened_at) as opened,
       count(clicked_at) as clicked,
       count(*) filter (where status = 'replied') as replied,
       count(*) filter (where status = 'bounced') as bounced,
       count(*) filter (where status = 'unsubscribed') as unsubscribed,
       count(*) filter (where status = 'pending') as pending,
       arg_min(id, list_position) as first_id, arg_max(id, list_position) as last_id,
       min(list_position) filter (where status = 'pending') as pending_key,
       min(epoch(last_sent_at)) filter (where status = 'active') as due_key,
       max(epoch(last_sent_at)) filter (where current_step > 0 and opened_at is null) as open_key,
       max(epoch(last_sent_at)) filter (where current_step > 0 and clicked_at is null) as click_key,
       max(epoch(last_sent_at)) filter (where current_step > 0
                                        and status not in ('replied', 'bounced', 'unsubscribed')) as live_key,
       max(epoch(last_sent_at)) filter (where current_step > 0 and status not in ('bounced', 'unsubscribed'))
           as reachable_key,
       count(list_position) = count(*) as positioned
from {table}
where workspace_id = %s and deleted_at is null and campaign_id in ({ids})
group by all
"""


def read_stored_pages(
    pipeline: Any, workspace_id: str, campaign_ids: list[str], per_page: int
) -> dict[str, StoredCampaign]:
    """Per-page summaries of the stored recipients of `campaign_ids` (see pipelines.recipient_pages).

    Any failure (first run, a destination without these SQL functions) returns nothing: every
    changed campaign is then read whole.
    """
    if not campaign_ids:
        return {}
    try:
        with pipeline.sql_client() as client:
            recipients = client.make_qualified_table_name("campaign_recipients")
            stats = client.make_qualified_table_name("campaign_stats")
            ids = ", ".join(["%s"] * len(campaign_ids))
            sql = _STORED_PAGES_SQL.format(per_page=int(per_page), table=recipients, ids=ids)
            with client.execute_query(sql, workspace_id, *campaign_ids) as cursor:
                columns = [c[0] for c in cursor.description]
                rows = [dict(zip(columns, r)) for r in cursor.fetchall()]
            statuses = dict(
                client.execute_sql(
                    f"select campaign_id, campaign_status from {stats} where workspace_id = %s and deleted_at is null",
                    workspace_id,
                )
                or []
            )
    except Exception as exc:  # noqa: BLE001 - guidance is an optimisation; without it campaigns are read whole
        log.info("stored recipient pages not available (%s); changed campaigns are read whole", _brief(exc))
        return {}
    by_campaign: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_campaign.setdefault(str(row["campaign_id"]), []).append(row)
    return {cid: _stored_campaign(pages, statuses.get(cid)) for cid, pages in by_campaign.items()}


def _stored_campaign(rows: list[dict[str, Any]], status: Any) -> StoredCampaign:
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
            keyed.sort(key=lambda r: (-r[key] if descending else r[key], r["page"]))
            order.extend(int(r["page"]) for r in keyed)
        candidates[counter] = list(dict.fromkeys(order))
    return StoredCampaign(
        status=None if status is None else str(status), pages=pages, candidates=candidates, positioned=positioned
    )


def _brief(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text[:160]}"
