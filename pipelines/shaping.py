"""Turn API objects into warehouse rows (pure functions, no I/O), and watch them for drift.

Small tables stay dicts (dlt's JSON path flattens nested objects with ``__``).
Recipients, the one big table, become pyarrow tables with explicit types so
dlt writes parquet straight through (see README, "Memory").

Type drift: a value whose JSON type differs from its column's is coerced when nothing is lost ("42"
into a bigint column, 7 into a text column, an RFC 2822 or epoch timestamp into its UTC instant); a
record with a value that cannot be is rejected (pipelines.quarantine), never loaded with a NULL or a
variant column. `DriftGuard.check` does that for every JSON row, `recipients_table` for the arrow path;
unknown enum values are counted too, and the counts go to the sync summary (`pipelines.report`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.settings import KNOWN_ENUMS, OPEN_ENUMS
from pipelines.timestamps import TimestampError, parse_optional

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


Reject = Callable[[int | None, str, Any], None]
"""Called with (list position, reason, raw record) for a record that cannot be loaded (pipelines.quarantine)."""


def recipients_table(
    rows: Sequence[tuple[str, int | None, Mapping[str, Any]]],
    workspace_id: str,
    synced_at: datetime,
    reject: Reject | None = None,
) -> pa.Table:
    """(campaign_id, list_position, recipient) triples -> one arrow table with explicit types.

    `list_position` is the recipient's 0-based place in the campaign's unfiltered list, as read
    (what pipelines.recipient_pages needs to find a stored recipient's page again).

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
                extras.setdefault(key, [None] * kept).append(_scalar(value))
        kept += 1
        for values in extras.values():
            if len(values) < kept:
                values.append(None)
    arrays: list[pa.Array] = [pa.array(columns[f.name], f.type) for f in RECIPIENT_SCHEMA]
    fields: list[pa.Field] = list(RECIPIENT_SCHEMA)
    for key, values in extras.items():
        fields.append(pa.field(key, (arr := _inferred_array(values)).type))
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
                converted = _NOTHING
        else:
            converted = _coerce_scalar(value, f.type)
        if converted is _NOTHING:
            bad.append(f"{f.name} as {f.type}")
            continue
        if not _natural(value, f.type):
            changed.append(f.name)
        typed[f.name] = converted
    if bad:
        return {}, "cannot be typed: " + ", ".join(bad)
    coerced.update(changed)
    return typed, None


DRIFT_METADATA = b"outreach.drift"
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_ISO_LIKE = re.compile(r"\d{4}-\d\d-\d\d([T ]|$)")


def _scalar(value: Any) -> Any:
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else value


_NOTHING: Any = object()


def _natural(value: Any, typ: pa.DataType) -> bool:
    """Whether `value` has the JSON type the API sends for a column of `typ` (an ISO string for a timestamp)."""
    if pa.types.is_integer(typ):
        return isinstance(value, int) and not isinstance(value, bool)
    if pa.types.is_floating(typ):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if pa.types.is_timestamp(typ):
        return isinstance(value, datetime) or (isinstance(value, str) and _ISO_LIKE.match(value) is not None)
    if pa.types.is_string(typ):
        return isinstance(value, str)
    return True


def _coerce_scalar(value: Any, typ: pa.DataType) -> Any:
    """`value` as `typ` when no information is lost, else `_NOTHING`."""
    if pa.types.is_integer(typ):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return _NOTHING
    if pa.types.is_floating(typ):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()) and math.isfinite(float(value)):
            return float(value)
        return _NOTHING
    if pa.types.is_string(typ):
        return (
            value
            if isinstance(value, str)
            else json.dumps(value)
            if isinstance(value, (int, float, bool))
            else _NOTHING
        )
    try:
        return pa.array([value], typ)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError):
        return _NOTHING


def _inferred_array(values: list[Any]) -> pa.Array:
    try:
        arr = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        arr = pa.array([None if v is None else str(v) for v in values], pa.string())
    if pa.types.is_null(arr.type):
        arr = pa.array(values, pa.string())
    return arr


# -- drift watch over a whole source ------------------------------------------------------------------------
# the JSON types the API sends for a column of each dlt data type; anything else is type drift
_NATURAL: dict[str, tuple[type, ...]] = {
    "bigint": (int,),
    "double": (int, float),
    "decimal": (int, float),
    "bool": (bool,),
    "text": (str,),
    "timestamp": (str, datetime),
    "date": (str,),
}


def _spec_types() -> dict[str, dict[str, str]]:
    """The types the API spec gives its numbers and booleans, as dlt columns (nested objects joined by ``__``):
    known before the first load, so a drifting API cannot make a first sync infer text for a number."""
    counts = ("total_leads", "sent", "opened", "clicked", "replied", "bounced")
    totals = (
        "recipients",
        "sent",
        "delivered",
        "opened",
        "clicked",
        "replied",
        "bounced",
        "unsubscribed",
        "pending",
        "failed",
    )
    rates = ("open", "click", "reply", "bounce", "unsubscribe", "progress")
    return {
        "workspaces": {
            "credits__balance": "bigint",
            **{f"counts__{n}": "bigint" for n in ("campaigns", "email_accounts", "lists")},
        },
        "campaigns": {
            **{f"stats__{n}": "bigint" for n in counts},
            "follow_up__enabled": "bool",
            "follow_up__delay_days": "bigint",
            "follow_up__max": "bigint",
            "stop_on_reply": "bool",
        },
        "campaign_stats": {**{f"totals__{n}": "bigint" for n in totals}, **{f"rates__{n}": "double" for n in rates}},
        "campaign_variants": {"index": "bigint", "sent": "bigint", "replied": "bigint", "reply_rate": "double"},
        "campaign_daily_sends": {"sent": "bigint"},
        "replies": {"is_read": "bool"},
        "email_accounts": {
            "is_active": "bool",
            "daily_send_limit": "bigint",
            "sent_today": "bigint",
            "reputation_score": "double",
            "warmup__enabled": "bool",
            "warmup__health_score": "double",
        },
    }


@dataclass
class DriftCounts:
    """What one workspace's extract saw: keys are ``table.column`` (and ``=value`` for enums)."""

    coerced: Counter[str] = field(default_factory=Counter)  # values of another JSON type, converted
    uncoerced: Counter[str] = field(default_factory=Counter)  # values that could not be typed: records rejected
    unknown_values: Counter[str] = field(default_factory=Counter)  # enum values the spec does not name
    new_values: Counter[str] = field(default_factory=Counter)  # values of open enums outside the documented set


class DriftGuard:
    """Coerces values of another JSON type where nothing is lost and counts type drift and enum values,
    for every resource of a dlt source, before dlt normalizes them.

    `column_types` maps table -> column -> dlt data type: the columns the warehouse already has (the
    pipeline's schema, `from_pipeline`) and the column hints of `pipelines.settings`. A column seen for
    the first time has no type yet; dlt infers it from the value and nothing is drift.
    """

    def __init__(self, column_types: Mapping[str, Mapping[str, str]]) -> None:
        self.types = {table: dict(cols) for table, cols in column_types.items()}
        self.counts = DriftCounts()
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> DriftGuard:
        """Types from the spec and the settings' column hints (before anything was loaded)."""
        from pipelines import settings

        types = _spec_types()
        for table in settings.TABLES:
            hinted = {n: str(h["data_type"]) for n, h in settings.columns_for(table).items() if "data_type" in h}
            types.setdefault(table, {}).update(hinted)
        return cls(types)

    @classmethod
    def from_pipeline(cls, pipeline: Any) -> DriftGuard:
        """Types from the spec, the settings' column hints and the pipeline's stored schema (which wins)."""
        types = cls.default().types
        try:
            schema = pipeline.default_schema if pipeline.default_schema_name else None
        except Exception:  # noqa: BLE001 - no readable stored schema yet: the spec's and settings' types stand
            schema = None
        if schema is not None:
            for table in schema.data_table_names():
                for name, column in schema.get_table_columns(table).items():
                    if column.get("data_type") and not column.get("variant"):
                        types.setdefault(table, {})[name] = str(column["data_type"])
        return cls(types)

    def check(self, table: str, row: dict[str, Any], count: bool = True) -> str | None:
        """Type `row` in place (nested objects by their ``a__b`` column) and count what was coerced; returns
        why it cannot be typed (the columns and their types, never the values), or None when it can.

        Timestamps (a timestamp column, or a column named ``*_at``) become UTC datetimes through
        `pipelines.timestamps.parse_instant`; other values of another JSON type are coerced when nothing is
        lost. A row with a value that cannot be typed must be rejected (pipelines.quarantine): it never
        reaches dlt, so no value becomes a NULL or a variant column. `count=False`: a record counted
        already (a reply read again with its body)."""
        if count:
            self._count_enums(table, row.get)
        counts = self.counts if count else DriftCounts()
        bad = self._walk(table, self.types.get(table, {}), row, "", counts)
        if not bad:
            return None
        with self._lock:
            counts.uncoerced.update(f"{table}.{column}" for column, _ in bad)
        return "cannot be typed: " + ", ".join(f"{column} as {data_type}" for column, data_type in bad)

    def _walk(
        self, table: str, types: Mapping[str, str], node: dict[str, Any], prefix: str, counts: DriftCounts
    ) -> list[tuple[str, str]]:
        bad: list[tuple[str, str]] = []
        for key, value in list(node.items()):
            column = f"{prefix}{key}"
            if isinstance(value, dict):
                if types.get(column) != "json":
                    bad += self._walk(table, types, value, f"{column}__", counts)
                continue
            if value is None or isinstance(value, list):
                continue
            data_type = types.get(column) or ("timestamp" if column.endswith("_at") else None)
            if data_type == "timestamp":
                try:
                    node[key] = parse_optional(value)
                except TimestampError:
                    bad.append((column, data_type))
                    continue
                if not (isinstance(value, datetime) or (isinstance(value, str) and _ISO_LIKE.match(value))):
                    with self._lock:
                        counts.coerced[f"{table}.{column}"] += 1
                continue
            natural = _NATURAL.get(data_type or "")
            if natural is None or (
                isinstance(value, natural) and not (isinstance(value, bool) and bool not in natural)
            ):
                if data_type == "double" and type(value) is int:
                    node[key] = float(value)  # a whole-number rate must not make dlt infer bigint for the column
                continue
            converted = _coerce_json(value, data_type or "")
            if converted is _NOTHING:
                bad.append((column, data_type or "?"))
                continue
            node[key] = converted
            with self._lock:
                counts.coerced[f"{table}.{column}"] += 1
        return bad

    def arrow(self, table: str, data: pa.Table) -> pa.Table:
        """Count what `recipients_table` coerced (its schema metadata, then removed) and enum values."""
        meta = data.schema.metadata or {}
        if DRIFT_METADATA in meta:
            drift = json.loads(meta[DRIFT_METADATA])
            with self._lock:
                for column, n in drift.get("coerced", {}).items():
                    self.counts.coerced[f"{table}.{column}"] += n
            rest = {k: v for k, v in meta.items() if k != DRIFT_METADATA}
            data = data.replace_schema_metadata(rest or None)
        for column in (*KNOWN_ENUMS.get(table, {}), *OPEN_ENUMS.get(table, {})):
            if column in data.column_names:
                for entry in pc.value_counts(data.column(column)).to_pylist():
                    if entry["values"] is not None:
                        self._count_enum(table, column, entry["values"], int(entry["counts"]))
        return data

    def _count_enums(self, table: str, get: Callable[[str], Any]) -> None:
        for column in (*KNOWN_ENUMS.get(table, {}), *OPEN_ENUMS.get(table, {})):
            value = get(column)
            if value is not None:
                self._count_enum(table, column, value, 1)

    def _count_enum(self, table: str, column: str, value: Any, n: int) -> None:
        known = KNOWN_ENUMS.get(table, {}).get(column)
        documented = OPEN_ENUMS.get(table, {}).get(column)
        with self._lock:
            if known is not None and value not in known:
                self.counts.unknown_values[f"{table}.{column}={value}"] += n
            elif documented is not None and value not in documented:
                self.counts.new_values[f"{table}.{column}={value}"] += n

    def fill(self, report: Any) -> None:
        """Copy the counts onto a `pipelines.report.WorkspaceReport` (and warn once per drifted column)."""
        with self._lock:
            report.coerced = dict(self.counts.coerced)
            report.uncoerced = dict(self.counts.uncoerced)
            report.unknown_values = dict(self.counts.unknown_values)
            report.new_values = dict(self.counts.new_values)
        for column, n in sorted(report.uncoerced.items()):
            log.warning("%s: %d value(s) could not be typed; their records were rejected (type drift)", column, n)


def _coerce_json(value: Any, data_type: str) -> Any:
    """`value` (a JSON scalar) as a value of dlt `data_type` when nothing is lost, else `_NOTHING`:
    numbers only from plain decimal text (or an integral float), booleans only from true/false, text from
    numbers and booleans (their JSON spelling). A refused value rejects its record (`DriftGuard.check`)."""
    if data_type == "bigint":
        if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
            return int(value)
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return _NOTHING
    if data_type in ("double", "decimal"):
        if isinstance(value, str) and _NUMBER.fullmatch(value.strip()) and math.isfinite(float(value)):
            return float(value)
        return _NOTHING
    if data_type == "bool":
        text = value.strip().lower() if isinstance(value, str) else None
        return {"true": True, "false": False}.get(text, _NOTHING) if text is not None else _NOTHING
    if data_type == "text":
        return json.dumps(value) if isinstance(value, (int, float, bool)) else _NOTHING
    return _NOTHING
