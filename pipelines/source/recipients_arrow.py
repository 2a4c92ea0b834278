"""Recipients, the one big table, as pyarrow tables with explicit types, so dlt writes parquet straight
through (see README, "Memory"); unknown fields become extra columns."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa

from pipelines.core.timestamps import TimestampError, parse_optional
from pipelines.source.shaping import warn_unknown_enums
from pipelines.source.typing_rules import (
    DRIFT_METADATA,
    NOTHING,
    coerce_scalar,
    inferred_array,
    is_natural,
    json_scalar,
)

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


Reject = Callable[[int | None, str, Any], None]
"""Called with (list position, reason, raw record) for a record that cannot be loaded (pipelines.source.quarantine)."""


def recipients_table(
    rows: Sequence[tuple[str, int | None, Mapping[str, Any]]],
    workspace_id: str,
    synced_at: datetime,
    reject: Reject | None = None,
) -> pa.Table:
    """(campaign_id, list_position, recipient) triples -> one arrow table with explicit types.

    `list_position` is the recipient's 0-based place in the campaign's unfiltered list, as read
    (what pipelines.source.recipient_pages needs to find a stored recipient's page again).

    Unknown fields become extra columns (schema drift). A value of another JSON type is coerced when
    nothing is lost ("3" -> 3, an RFC 2822 or epoch timestamp -> its UTC instant); a record without an
    id, or with a value that cannot be typed, is handed to `reject` and left out (never a NULL in its
    place). What was coerced is in the table's schema metadata under ``DRIFT_METADATA`` (`DriftGuard`
    counts and removes it).
    """
    columns: dict[str, list[Any]] = {name: [] for name in RECIPIENT_SCHEMA.names}
    extras: dict[str, list[Any]] = {}
    coerced: Counter[str] = Counter()
    kept = 0
    for campaign_id, position, rec in rows:
        typed, reason = _typed_recipient(rec, coerced)
        if reason is not None:
            if reject is not None:
                reject(position, reason, rec)
            continue
        warn_unknown_enums("campaign_recipients", rec)
        typed.update(
            campaign_id=campaign_id,
            list_position=position,
            workspace_id=workspace_id,
            synced_at=synced_at,
            deleted_at=None,
        )
        for name in RECIPIENT_SCHEMA.names:
            columns[name].append(typed.get(name))
        for key, value in rec.items():
            if key not in _KNOWN:
                extras.setdefault(key, [None] * kept).append(json_scalar(value))
        kept += 1
        for values in extras.values():
            if len(values) < kept:
                values.append(None)
    arrays: list[pa.Array] = [pa.array(columns[f.name], f.type) for f in RECIPIENT_SCHEMA]
    fields: list[pa.Field] = list(RECIPIENT_SCHEMA)
    for key, values in extras.items():
        fields.append(pa.field(key, (arr := inferred_array(values)).type))
        arrays.append(arr)
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    if coerced:
        drift = json.dumps({"coerced": dict(coerced)}).encode()
        table = table.replace_schema_metadata({DRIFT_METADATA: drift})
    return table


_OURS = frozenset({"campaign_id", "list_position", "workspace_id", "synced_at", "deleted_at"})


def _typed_recipient(rec: Any, coerced: Counter[str]) -> tuple[dict[str, Any], str | None]:
    """The record's known fields typed for `RECIPIENT_SCHEMA`, or why it cannot be loaded."""
    if not isinstance(rec, Mapping):
        return {}, "not a JSON object"
    if rec.get("id") in (None, ""):
        return {}, "no id (primary key)"
    typed: dict[str, Any] = {}
    bad: list[str] = []
    changed: list[str] = []
    for f in RECIPIENT_SCHEMA:
        value = rec.get(f.name)
        if f.name in _OURS or value is None:
            continue
        if pa.types.is_timestamp(f.type):
            try:
                converted = parse_optional(value)
            except TimestampError:
                converted = NOTHING
        else:
            converted = coerce_scalar(value, f.type)
        if converted is NOTHING:
            bad.append(f"{f.name} as {f.type}")
            continue
        if not is_natural(value, f.type):
            changed.append(f.name)
        typed[f.name] = converted
    if bad:
        return {}, "cannot be typed: " + ", ".join(bad)
    coerced.update(changed)
    return typed, None
