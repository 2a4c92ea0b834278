"""Turn API objects into warehouse rows (pure functions, no I/O).

Small tables stay dicts (dlt's JSON path flattens nested objects with ``__``).
Recipients, the one big table, become pyarrow tables with explicit types so
dlt writes parquet straight through (see README, "Memory").
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from pipelines.settings import KNOWN_ENUMS

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
    stats = campaign.get("stats") if isinstance(campaign.get("stats"), Mapping) else {}
    basis = json.dumps([campaign.get("status"), sorted(stats.items())], sort_keys=True, default=str)
    return hashlib.sha1(basis.encode()).hexdigest()[:16]


def with_workspace(rows: Iterable[Mapping[str, Any]], workspace_id: str, table: str) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if not isinstance(row, Mapping) or row.get("id") is None and table != "webhook_event_types":
            log.warning("%s: skipped a record without id: %r", table, _short(row))
            continue
        warn_unknown_enums(table, row)
        out.append({**row, "workspace_id": workspace_id})
    return out


def stats_rows(
    stats: Mapping[str, Any], campaign_id: str, workspace_id: str, synced_at: datetime
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """GET /campaigns/{id}/stats -> (campaign_stats row, campaign_variants rows, campaign_daily_sends rows)."""
    campaign = stats.get("campaign") if isinstance(stats.get("campaign"), Mapping) else {}
    head: dict[str, Any] = {
        k: v for k, v in stats.items() if k not in ("campaign", "variants", "daily")
    }
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
        if isinstance(item, Mapping) and item.get("index") is not None:
            variants.append(
                {**item, "campaign_id": campaign_id, "workspace_id": workspace_id, "synced_at": synced_at, "deleted_at": None}
            )
    daily = []
    for item in stats.get("daily") or []:
        if isinstance(item, Mapping) and item.get("date"):
            daily.append({**item, "campaign_id": campaign_id, "workspace_id": workspace_id, "synced_at": synced_at})
    return head, variants, daily


def reply_row(reply: Mapping[str, Any], workspace_id: str, synced_at: datetime) -> dict[str, Any]:
    """A reply list item (no body) -> `replies` row; the caller sets body/body_fetched_at."""
    row = {k: v for k, v in reply.items() if k != "body"}
    row.update(workspace_id=workspace_id, synced_at=synced_at, deleted_at=None)
    return row


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) < 120 else text[:117] + "..."


# -- recipients as arrow ---------------------------------------------------------------------
_TS_TYPE = pa.timestamp("us", tz="UTC")
RECIPIENT_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("workspace_id", pa.string()),
        ("campaign_id", pa.string()),
        ("email", pa.string()),
        ("first_name", pa.string()),
        ("last_name", pa.string()),
        ("company", pa.string()),
        ("status", pa.string()),
        ("current_step", pa.int64()),
        ("last_sent_at", _TS_TYPE),
        ("opened_at", _TS_TYPE),
        ("clicked_at", _TS_TYPE),
        ("replied_at", _TS_TYPE),
        ("bounced_at", _TS_TYPE),
        ("list_position", pa.int64()),
        ("synced_at", _TS_TYPE),
        ("deleted_at", _TS_TYPE),
    ]
)
_KNOWN = set(RECIPIENT_SCHEMA.names)


def recipients_table(
    rows: Sequence[tuple[str, int | None, Mapping[str, Any]]], workspace_id: str, synced_at: datetime
) -> pa.Table:
    """(campaign_id, list_position, recipient) triples -> one arrow table with explicit types.

    `list_position` is the recipient's 0-based place in the campaign's unfiltered list, as read
    (what pipelines.recipient_pages needs to find a stored recipient's page again).

    Unknown fields become extra columns (schema drift). A value that does not
    fit its column's type lands as null with a warning instead of failing the run.
    """
    columns: dict[str, list[Any]] = {name: [] for name in RECIPIENT_SCHEMA.names}
    extras: dict[str, list[Any]] = {}
    kept = 0
    for campaign_id, position, rec in rows:
        if not isinstance(rec, Mapping) or not rec.get("id"):
            log.warning("campaign_recipients: skipped a record without id: %s", _short(rec))
            continue
        warn_unknown_enums("campaign_recipients", rec)
        for name in RECIPIENT_SCHEMA.names:
            columns[name].append(rec.get(name))
        columns["campaign_id"][-1] = campaign_id
        columns["list_position"][-1] = position
        columns["workspace_id"][-1] = workspace_id
        columns["synced_at"][-1] = synced_at
        columns["deleted_at"][-1] = None
        for key, value in rec.items():
            if key not in _KNOWN:
                extras.setdefault(key, [None] * kept).append(_scalar(value))
        kept += 1
        for values in extras.values():
            if len(values) < kept:
                values.append(None)
    arrays = [_typed_array(columns[f.name], f.type, f.name) for f in RECIPIENT_SCHEMA]
    fields = list(RECIPIENT_SCHEMA)
    for key, values in extras.items():
        fields.append(pa.field(key, (arr := _inferred_array(values)).type))
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _scalar(value: Any) -> Any:
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else value


def _typed_array(values: list[Any], typ: pa.DataType, name: str) -> pa.Array:
    if pa.types.is_timestamp(typ):
        try:
            return pa.array(values, pa.string()).cast(typ) if not _has_datetimes(values) else pa.array(values, typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return _lenient(values, typ, name)
    try:
        return pa.array(values, typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return _lenient(values, typ, name)


def _has_datetimes(values: list[Any]) -> bool:
    return any(isinstance(v, datetime) for v in values[:1])


def _lenient(values: list[Any], typ: pa.DataType, name: str) -> pa.Array:
    """Element-wise conversion: values that do not fit become null (logged once per column)."""
    out: list[Any] = []
    bad = 0
    for value in values:
        try:
            if value is None:
                out.append(None)
            elif pa.types.is_timestamp(typ):
                out.append(pa.array([value], pa.string()).cast(typ)[0].as_py())
            else:
                out.append(pa.array([value], typ)[0].as_py())
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
            out.append(None)
            bad += 1
    log.warning("campaign_recipients.%s: %d value(s) did not fit type %s and landed as null", name, bad, typ)
    return pa.array(out, typ)


def _inferred_array(values: list[Any]) -> pa.Array:
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        arr = pa.array([None if v is None else str(v) for v in values], pa.string())
    if pa.types.is_null(arr.type):
        arr = pa.array(values, pa.string())
    return arr
