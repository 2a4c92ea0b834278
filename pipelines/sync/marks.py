"""The sync's updates of the warehouse after a load, through a dlt sql_client, in SQL that DuckDB and
PostgreSQL both run: `mark_deleted` (a full sync: rows the API no longer returns) and
`drop_duplicate_history_rows` (a repair after a resumed load).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from pipelines.core import constants

log = logging.getLogger(__name__)


def mark_deleted(
    client: Any,
    workspace_ids: Sequence[str],
    synced_at: datetime,
    protected: Mapping[str, Collection[str]] | None = None,
) -> dict[str, dict[str, int]]:
    """Set deleted_at on rows of these workspaces that the full sync at `synced_at` did not re-emit.

    `client`: an open dlt sql_client. `protected`: workspace -> tables not to mark, because the run
    rejected records of the endpoint they come from (pipelines.source.quarantine: a record that could not be
    loaded may be any stored row). Returns {workspace_id: {table: rows marked}}.

    Only rows older than this run's `synced_at` are marked: a concurrent run's rows never are (runs of one
    workspace take turns, pipelines.warehouse.turns, so no run loads between this run's load and its marks)."""
    marked: dict[str, dict[str, int]] = {ws: {} for ws in workspace_ids}
    for name in constants.SOFT_DELETE_TABLES:
        markable = [ws for ws in workspace_ids if name not in (protected or {}).get(ws, ())]
        if not markable:
            continue
        marks = ", ".join(["%s"] * len(markable))
        table = client.make_qualified_table_name(name)
        condition = f"workspace_id in ({marks}) and deleted_at is null and (synced_at is null or synced_at < %s)"
        args = (*markable, synced_at)
        rows = client.execute_sql(
            f"select workspace_id, count(*) from {table} where {condition} group by workspace_id", *args
        )
        counts = {str(ws): int(n) for ws, n in rows or []}
        if counts:
            client.execute_sql(f"update {table} set deleted_at = %s where {condition}", synced_at, *args)
            log.info("%s: %d row(s) no longer returned by the API marked deleted", name, sum(counts.values()))
        for ws in markable:
            marked[ws][name] = counts.get(ws, 0)
    return marked


def drop_duplicate_history_rows(client: Any, workspace_ids: Sequence[str], row_id: str) -> int:
    """Remove exact duplicate scd2 rows (same row hash and validity) of these workspaces.

    Why: when a load is killed after a staging copy job committed but before dlt recorded it, the
    resumed load copies that file into staging again; dlt's scd2 insert does not de-duplicate staging
    (its delete-insert merge does), so the same version could be inserted twice. `row_id` is the
    database's physical row id (DuckDB ``rowid``, PostgreSQL ``ctid``).
    """
    removed = 0
    if not workspace_ids:
        return removed
    marks = ", ".join(["%s"] * len(workspace_ids))
    for name in constants.HISTORY_TABLES:
        table = client.make_qualified_table_name(name)
        # exact copies only: the same version with the same validity (a version that came back later has
        # another `_dlt_valid_to`, and is history, not a duplicate)
        dup = (
            f"select rid from (select {row_id} as rid, row_number() over (partition by _dlt_id, _dlt_valid_from, "
            f"_dlt_valid_to order by {row_id}) as rn from {table} where workspace_id in ({marks})) as numbered "
            "where rn > 1"
        )
        rows = client.execute_sql(f"select count(*) from ({dup}) as dups", *workspace_ids)
        count = int(rows[0][0]) if rows else 0
        if count:
            client.execute_sql(f"delete from {table} where {row_id} in ({dup})", *workspace_ids)
            log.warning("%s: removed %d duplicate history row(s) left by a resumed load", name, count)
            removed += count
    return removed
