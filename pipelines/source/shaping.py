"""Turn API objects into warehouse rows (pure functions, no I/O).

Small tables stay dicts (dlt's JSON path flattens nested objects with ``__``).
Recipients, the one big table, become pyarrow tables (`pipelines.source.recipients_arrow`).

Type drift: a value whose JSON type differs from its column's is coerced when nothing is lost ("42"
into a bigint column, 7 into a text column, an RFC 2822 or epoch timestamp into its UTC instant); a
record with a value that cannot be is rejected (pipelines.source.quarantine), never loaded with a NULL or a
variant column. `pipelines.source.drift.DriftGuard` does that for every JSON row, `recipients_table` for the arrow path;
unknown enum values are counted too, and the counts go to the sync summary (`pipelines.core.report`).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pipelines.core.constants import KNOWN_ENUMS

log = logging.getLogger(__name__)
_warned: set[tuple[str, str, str]] = set()


def warn_unknown_enums(table: str, row: Mapping[str, Any]) -> None:
    """Log (once per value) an enum value the spec does not name; the value still lands."""
    for column, allowed in KNOWN_ENUMS.get(table, {}).items():
        value = row.get(column)
        if value is not None and value not in allowed and (table, column, str(value)) not in _warned:
            _warned.add((table, column, str(value)))
            log.warning("%s.%s: unknown value %r landed as is (schema drift)", table, column, value)


def workspace_row(account: Mapping[str, Any], synced_at: datetime) -> dict[str, Any]:
    """GET /account -> one `workspaces` row (nested objects flattened by dlt)."""
    ws = dict(account.get("workspace") or {})
    row: dict[str, Any] = {k: v for k, v in account.items() if k != "workspace"}
    row.update(ws)
    row["workspace_id"] = ws.get("id")
    row["synced_at"] = synced_at
    return row


def campaign_fingerprint(campaign: Mapping[str, Any]) -> str:
    """Status and running totals (including total_leads) from the campaign list, hashed."""
    raw_stats = campaign.get("stats")
    stats: Mapping[str, Any] = raw_stats if isinstance(raw_stats, Mapping) else {}
    basis = json.dumps([campaign.get("status"), sorted(stats.items())], sort_keys=True, default=str)
    return hashlib.sha1(basis.encode()).hexdigest()[:16]


def with_workspace(item: Mapping[str, Any], workspace_id: str) -> dict[str, Any]:
    """A list item as a row of its workspace (its primary key and types are checked by the caller)."""
    return {**item, "workspace_id": workspace_id}


def stats_rows(
    stats: Mapping[str, Any], campaign_id: str, workspace_id: str, synced_at: datetime
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """GET /campaigns/{id}/stats -> (campaign_stats row, campaign_variants rows, campaign_daily_sends rows)."""
    raw_campaign = stats.get("campaign")
    campaign: Mapping[str, Any] = raw_campaign if isinstance(raw_campaign, Mapping) else {}
    head: dict[str, Any] = {k: v for k, v in stats.items() if k not in ("campaign", "variants", "daily")}
    head.update(
        campaign_id=campaign_id,
        workspace_id=workspace_id,
        campaign_name=campaign.get("name"),
        campaign_status=campaign.get("status"),
        synced_at=synced_at,
        deleted_at=None,
    )
    variants = []
    for item in stats.get("variants") or []:
        if isinstance(item, Mapping):  # one without its index is rejected by the caller, not dropped here
            variants.append(
                {
                    **item,
                    "campaign_id": campaign_id,
                    "workspace_id": workspace_id,
                    "synced_at": synced_at,
                    "deleted_at": None,
                }
            )
    daily = []
    for item in stats.get("daily") or []:
        if isinstance(item, Mapping):
            daily.append({**item, "campaign_id": campaign_id, "workspace_id": workspace_id, "synced_at": synced_at})
    return head, variants, daily


def reply_row(reply: Mapping[str, Any], workspace_id: str, synced_at: datetime) -> dict[str, Any]:
    """A reply list item (no body) -> `replies` row; the caller sets body/body_fetched_at."""
    row = {k: v for k, v in reply.items() if k != "body"}
    row.update(workspace_id=workspace_id, synced_at=synced_at, deleted_at=None)
    return row
