"""The few reads and updates the sync makes on the destination itself, through dlt's sql_client.

* before extraction: bodies already stored (so a re-read list item keeps its body)
  and replies still waiting for a body (deferred);
* after a full load: mark rows the API no longer returns (``deleted_at``).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from pipelines import settings as S
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
