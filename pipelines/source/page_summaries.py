"""Per-page summaries of a campaign's recipients computed from the pages as read, for a source that keeps
them in its dlt state instead of summing stored rows in a warehouse (`pipelines.source.dlt_source`).

A summary holds what `pipelines.source.stored`'s stored-pages query computes per page (counts, the ids at
the page's two ends, the keys that order likely pages); `pipelines.source.stored.stored_campaign` turns
either into the `StoredCampaign` that `pipelines.source.recipient_pages` guides a quick sync with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import pyarrow as pa

_COLUMNS = ("campaign_id", "id", "status", "current_step", "opened_at", "clicked_at", "last_sent_at", "list_position")
_STOPPED = ("replied", "bounced", "unsubscribed")


def summaries(table: pa.Table, per_page: int) -> dict[str, dict[int, dict[str, Any]]]:
    """campaign id -> page -> summary, for the recipients in an arrow table of `campaign_recipients`
    (a page's recipients always travel in one table)."""
    if not table.num_rows or any(name not in table.column_names for name in _COLUMNS):
        return {}
    grouped: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for row in table.select(list(_COLUMNS)).to_pylist():
        position = row["list_position"]
        if position is None:
            continue
        grouped.setdefault(str(row["campaign_id"]), {}).setdefault(position // per_page + 1, []).append(row)
    return {cid: {page: _summary(rows) for page, rows in pages.items()} for cid, pages in grouped.items()}


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The columns of the stored-pages query (pipelines.source.stored) for one page's recipients."""
    first = min(rows, key=lambda r: r["list_position"])
    last = max(rows, key=lambda r: r["list_position"])
    emailed = [r for r in rows if (r["current_step"] or 0) > 0]
    return {
        "rows_": len(rows),
        "sent": sum(r["current_step"] or 0 for r in rows),
        "opened": sum(1 for r in rows if r["opened_at"] is not None),
        "clicked": sum(1 for r in rows if r["clicked_at"] is not None),
        **{status: sum(1 for r in rows if r["status"] == status) for status in (*_STOPPED, "pending")},
        "pending_key": min((r["list_position"] for r in rows if r["status"] == "pending"), default=None),
        "due_key": _extreme(min, (r for r in rows if r["status"] == "active")),
        "open_key": _extreme(max, (r for r in emailed if r["opened_at"] is None)),
        "click_key": _extreme(max, (r for r in emailed if r["clicked_at"] is None)),
        "live_key": _extreme(max, (r for r in emailed if r["status"] not in _STOPPED)),
        "reachable_key": _extreme(max, (r for r in emailed if r["status"] not in ("bounced", "unsubscribed"))),
        "positioned": True,
        "first_id": str(first["id"]),
        "last_id": str(last["id"]),
    }


def _extreme(pick: Any, rows: Iterable[Mapping[str, Any]]) -> float | None:
    """min or max of the rows' `last_sent_at` in epoch seconds, ignoring rows without one (as SQL does)."""
    epochs = [r["last_sent_at"].timestamp() for r in rows if isinstance(r["last_sent_at"], datetime)]
    return float(pick(epochs)) if epochs else None
