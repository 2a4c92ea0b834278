"""Recipients, the one big table, as pyarrow tables with explicit types, so dlt writes parquet straight
through (see README, "Memory"); unknown fields become extra columns."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.core.constants import KNOWN_ENUMS
from pipelines.source.shaping import warn_unknown_enums
from pipelines.source.typing_rules import (
    DRIFT_METADATA,
    NOTHING,
    inferred_array,
    json_scalar,
    typed_value,
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
    kept: Sequence[tuple[str, int | None, Mapping[str, Any]]] = rows
    coerced: Counter[str] = Counter()
    columns = _columns_as_sent([rec for _, _, rec in rows]) if len(rows) >= _COLUMNS_FROM else None
    if columns is None:
        kept, columns = _typed_row_by_row(rows, coerced, reject)
    _warn_unknown_enums(columns)
    ours: dict[str, pa.Array] = {
        "campaign_id": pa.array([campaign_id for campaign_id, _, _ in kept], pa.string()),
        "list_position": pa.array([position for _, position, _ in kept], pa.int64()),
        "workspace_id": pa.array([workspace_id] * len(kept), pa.string()),
        "synced_at": pa.array([synced_at] * len(kept), _TS_TYPE),
        "deleted_at": pa.nulls(len(kept), _TS_TYPE),
    }
    arrays: list[pa.Array] = [ours[f.name] if f.name in ours else columns[f.name] for f in RECIPIENT_SCHEMA]
    fields: list[pa.Field] = list(RECIPIENT_SCHEMA)
    extra_keys: dict[str, None] = {}  # the unknown fields, in the order first seen
    for _, _, rec in kept:
        if not rec.keys() <= _KNOWN:
            extra_keys.update((key, None) for key in rec if key not in _KNOWN)
    for key in extra_keys:
        fields.append(pa.field(key, (arr := inferred_array([json_scalar(rec.get(key)) for _, _, rec in kept])).type))
        arrays.append(arr)
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    if coerced:
        drift = json.dumps({"coerced": dict(coerced)}).encode()
        table = table.replace_schema_metadata({DRIFT_METADATA: drift})
    return table


_OURS = frozenset({"campaign_id", "list_position", "workspace_id", "synced_at", "deleted_at"})
# (name, arrow type, the Python type of a natural value) of each field the API sends, worked out once: reading a
# pyarrow field's name and type and testing the type, for every value of every row, cost more than the typing
_SENT = tuple(
    (f.name, f.type, datetime if pa.types.is_timestamp(f.type) else int if pa.types.is_integer(f.type) else str)
    for f in RECIPIENT_SCHEMA
    if f.name not in _OURS
)


# The API's own timestamp form (sandbox/timeutil.py writes it), with each field in its range. Within it Arrow's
# parse and `parse_instant` accept the same strings and read the same instant; Arrow refuses an impossible date
# such as 30 February, which sends the batch to the row-by-row rules (they reject that record alone).
_API_INSTANT = (
    r"^(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[T ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,6})?"
    r"(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)
_NONE = type(None)
# Below this many records the fixed cost of Arrow's calls (about 0.3 ms a batch) is more than typing them one by
# one (`python -m bench.shaping_speed --batch 5`: 0.71x before this bound)
_COLUMNS_FROM = 20


def _columns_as_sent(records: list[Any]) -> dict[str, pa.Array] | None:
    """The API fields typed column by column by Arrow, when every record holds them in the forms the API sends
    (text, an integer, an ISO timestamp with its offset) and has an id; else None, and the caller types row by
    row. Arrow types a batch several times faster than the rules do value by value (bench/shaping_speed.py)."""
    if not all(type(rec) is dict for rec in records):
        return None
    columns: dict[str, pa.Array] = {}
    instants: list[str] = []  # the timestamp fields, typed together below
    stamps: list[Any] = []
    try:
        for name, typ, natural in _SENT:
            values = [rec.get(name) for rec in records]
            if natural is datetime:
                instants.append(name)
                stamps.extend(values)
            elif natural is int:
                if not {type(value) for value in values} <= {int, _NONE}:  # Arrow would take 3.0 as 3
                    return None
                columns[name] = pa.array(values, typ)
            else:
                columns[name] = pa.array(values, pa.string())  # refuses any value that is not text
        # every timestamp field in one array: a regex and a parse per batch, not per field (each has a fixed cost)
        text = pa.array(stamps, pa.string())
        if pc.all(pc.match_substring_regex(text, _API_INSTANT)).as_py() is False:
            return None
        typed = text.cast(_TS_TYPE)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return None
    columns.update((name, typed.slice(i * len(records), len(records))) for i, name in enumerate(instants))
    ids = columns["id"]
    if ids.null_count or pc.any(pc.equal(ids, "")).as_py():
        return None
    return columns


def _typed_row_by_row(
    rows: Sequence[tuple[str, int | None, Mapping[str, Any]]], coerced: Counter[str], reject: Reject | None
) -> tuple[list[tuple[str, int | None, Mapping[str, Any]]], dict[str, pa.Array]]:
    """The general rules, record by record: the records kept, and their API fields as typed columns."""
    kept: list[tuple[str, int | None, Mapping[str, Any]]] = []
    typed_rows: list[dict[str, Any]] = []
    for campaign_id, position, rec in rows:
        typed, reason = _typed_recipient(rec, coerced)
        if reason is not None:
            if reject is not None:
                reject(position, reason, rec)
            continue
        kept.append((campaign_id, position, rec))
        typed_rows.append(typed)
    return kept, {name: pa.array([typed.get(name) for typed in typed_rows], typ) for name, typ, _ in _SENT}


def _warn_unknown_enums(columns: Mapping[str, pa.Array]) -> None:
    """`warn_unknown_enums` for each distinct value of the typed enum columns, not for each record."""
    for column in KNOWN_ENUMS["campaign_recipients"]:
        for value in pc.unique(columns[column]).to_pylist():
            warn_unknown_enums("campaign_recipients", {column: value})


def _typed_recipient(rec: Any, coerced: Counter[str]) -> tuple[dict[str, Any], str | None]:
    """The record's known fields typed for `RECIPIENT_SCHEMA`, or why it cannot be loaded."""
    if not isinstance(rec, Mapping):
        return {}, "not a JSON object"
    if rec.get("id") in (None, ""):
        return {}, "no id (primary key)"
    typed: dict[str, Any] = {}
    bad: list[str] = []
    changed: list[str] = []
    for name, typ, natural in _SENT:
        value = rec.get(name)
        if value is None:
            continue
        if type(value) is natural and natural is not datetime:  # text or an integer as the API sends it
            typed[name] = value
            continue
        converted, was_coerced = typed_value(value, typ)
        if converted is NOTHING:
            bad.append(f"{name} as {typ}")
            continue
        if was_coerced:
            changed.append(name)
        typed[name] = converted
    if bad:
        return {}, "cannot be typed: " + ", ".join(bad)
    if changed:
        coerced.update(changed)
    return typed, None
