"""Turn API objects into warehouse rows (pure functions, no I/O), and watch them for drift.

Small tables stay dicts (dlt's JSON path flattens nested objects with ``__``).
Recipients, the one big table, become pyarrow tables with explicit types so
dlt writes parquet straight through (see README, "Memory").

Type drift (issue 12): a value whose JSON type differs from its column's is coerced when nothing is
lost ("42" into a bigint column, 7 into a text column); one that cannot be lands in a variant column
``<column>__v_<type>`` (dlt's rule on the JSON path; `recipients_table` does the same on the arrow path)
and is counted. `DriftGuard` does that for every resource of a source and counts unknown enum values
too; its counts go to the sync summary (`pipelines.report`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.settings import KNOWN_ENUMS, OPEN_ENUMS

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
        if isinstance(item, Mapping) and item.get("index") is not None:
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

    Unknown fields become extra columns (schema drift). A value of another JSON type is coerced when
    nothing is lost ("3" -> 3); one that cannot be lands in ``<column>__v_text`` (as dlt does on its
    JSON path), its typed column null, with a warning. What was coerced or not is in the table's schema
    metadata under ``DRIFT_METADATA`` (`DriftGuard` counts and removes it).
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
    arrays: list[pa.Array] = []
    fields: list[pa.Field] = []
    coerced: dict[str, int] = {}
    uncoerced: dict[str, int] = {}
    for f in RECIPIENT_SCHEMA:
        array, n_coerced, variant = _typed_array(columns[f.name], f.type, f.name)
        arrays.append(array)
        fields.append(f)
        if n_coerced:
            coerced[f.name] = n_coerced
        if variant is not None:
            fields.append(pa.field(f"{f.name}__v_text", pa.string()))
            arrays.append(variant)
            uncoerced[f.name] = len(variant) - variant.null_count
    for key, values in extras.items():
        fields.append(pa.field(key, (arr := _inferred_array(values)).type))
        arrays.append(arr)
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields))
    if coerced or uncoerced:
        drift = json.dumps({"coerced": coerced, "uncoerced": uncoerced}).encode()
        table = table.replace_schema_metadata({DRIFT_METADATA: drift})
    return table


DRIFT_METADATA = b"outreach.drift"
_INTEGER = re.compile(r"[+-]?\d+")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _scalar(value: Any) -> Any:
    return json.dumps(value, default=str) if isinstance(value, (dict, list)) else value


def _typed_array(values: list[Any], typ: pa.DataType, name: str) -> tuple[pa.Array, int, pa.Array | None]:
    """(typed array, values coerced without loss, the variant text array or None if every value fit)."""
    try:
        if pa.types.is_timestamp(typ) and not _has_datetimes(values):
            return pa.array(values, pa.string()).cast(typ), 0, None
        if pa.types.is_string(typ) and not all(v is None or isinstance(v, str) for v in values):
            raise pa.ArrowTypeError("non-text values in a text column")
        return pa.array(values, typ), 0, None
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return _lenient(values, typ, name)


def _has_datetimes(values: list[Any]) -> bool:
    return any(isinstance(v, datetime) for v in values[:1])


def _lenient(values: list[Any], typ: pa.DataType, name: str) -> tuple[pa.Array, int, pa.Array | None]:
    """Element-wise: coerce what converts without loss; the rest keeps its text in a variant column."""
    out: list[Any] = []
    variant: list[str | None] = []
    coerced = 0
    for value in values:
        converted = _NOTHING if value is None else _coerce_scalar(value, typ)
        if converted is _NOTHING:
            out.append(None)
            variant.append(None if value is None else str(_scalar(value)))
            continue
        if not _natural(value, typ):
            coerced += 1
        out.append(converted)
        variant.append(None)
    bad = sum(v is not None for v in variant)
    if bad:
        log.warning(
            "campaign_recipients.%s: %d value(s) do not fit type %s; they land in %s__v_text (type drift)",
            name,
            bad,
            typ,
            name,
        )
    return pa.array(out, typ), coerced, pa.array(variant, pa.string()) if bad else None


_NOTHING: Any = object()


def _natural(value: Any, typ: pa.DataType) -> bool:
    """Whether `value` has the JSON type the API sends for a column of `typ` (an ISO string for a timestamp)."""
    if pa.types.is_integer(typ):
        return isinstance(value, int) and not isinstance(value, bool)
    if pa.types.is_floating(typ):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if pa.types.is_string(typ) or pa.types.is_timestamp(typ):
        return isinstance(value, (str, datetime))
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
    if pa.types.is_timestamp(typ):
        if isinstance(value, datetime):
            return value
        try:
            return pa.array([value], pa.string()).cast(typ)[0].as_py()
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):
            return _NOTHING
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
    uncoerced: Counter[str] = field(default_factory=Counter)  # values that could not be: in a variant column
    unknown_values: Counter[str] = field(default_factory=Counter)  # enum values the spec does not name
    new_values: Counter[str] = field(default_factory=Counter)  # values of open enums outside the documented set


class DriftGuard:
    """Coerces values of another JSON type where nothing is lost and counts type drift and enum values,
    for every resource of a dlt source (`attach`), before dlt normalizes them.

    `column_types` maps table -> column -> dlt data type: the columns the warehouse already has (the
    pipeline's schema, `from_pipeline`) and the column hints of `pipelines.settings`. A column seen for
    the first time has no type yet; dlt infers it from the value and nothing is drift.
    """

    def __init__(self, column_types: Mapping[str, Mapping[str, str]]) -> None:
        self.types = {table: dict(cols) for table, cols in column_types.items()}
        self.counts = DriftCounts()
        self._lock = threading.Lock()

    @classmethod
    def from_pipeline(cls, pipeline: Any) -> DriftGuard:
        """Types from the spec, the settings' column hints and the pipeline's stored schema (which wins)."""
        from pipelines import settings

        types = _spec_types()
        for table in settings.TABLES:
            hinted = {n: str(h["data_type"]) for n, h in settings.columns_for(table).items() if "data_type" in h}
            types.setdefault(table, {}).update(hinted)
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

    def attach(self, source: Any) -> Any:
        """Add the guard as a map step to every resource of `source`; returns the source."""
        for resource in source.resources.values():
            resource.add_map(self._mapper(resource.name))
        return source

    def _mapper(self, resource_name: str) -> Callable[[Any, Any], Any]:
        def watch(item: Any, meta: Any = None) -> Any:
            hints = getattr(meta, "hints", None)
            table = (
                str(hints.get("table_name"))
                if isinstance(hints, Mapping) and hints.get("table_name")
                else resource_name
            )
            if isinstance(item, pa.Table):
                return self.arrow(table, item)
            if isinstance(item, dict):
                self.row(table, item)
            return item

        return watch

    def row(self, table: str, row: dict[str, Any]) -> dict[str, Any]:
        """Coerce drifted values of `row` in place (nested objects by their ``a__b`` column) and count."""
        self._count_enums(table, row.get)
        types = self.types.get(table)
        if types:
            self._walk(table, types, row, "")
        return row

    def arrow(self, table: str, data: pa.Table) -> pa.Table:
        """Count what `recipients_table` coerced (its schema metadata, then removed) and enum values."""
        meta = data.schema.metadata or {}
        if DRIFT_METADATA in meta:
            drift = json.loads(meta[DRIFT_METADATA])
            with self._lock:
                for column, n in drift.get("coerced", {}).items():
                    self.counts.coerced[f"{table}.{column}"] += n
                for column, n in drift.get("uncoerced", {}).items():
                    self.counts.uncoerced[f"{table}.{column}"] += n
            rest = {k: v for k, v in meta.items() if k != DRIFT_METADATA}
            data = data.replace_schema_metadata(rest or None)
        for column in (*KNOWN_ENUMS.get(table, {}), *OPEN_ENUMS.get(table, {})):
            if column in data.column_names:
                for entry in pc.value_counts(data.column(column)).to_pylist():
                    if entry["values"] is not None:
                        self._count_enum(table, column, entry["values"], int(entry["counts"]))
        return data

    def _walk(self, table: str, types: Mapping[str, str], node: dict[str, Any], prefix: str) -> None:
        for key, value in list(node.items()):
            column = f"{prefix}{key}"
            if isinstance(value, dict):
                if types.get(column) != "json":
                    self._walk(table, types, value, f"{column}__")
                continue
            if value is None or isinstance(value, list):
                continue
            data_type = types.get(column)
            natural = _NATURAL.get(data_type or "")
            if natural is None or (
                isinstance(value, natural) and not (isinstance(value, bool) and bool not in natural)
            ):
                if data_type == "double" and type(value) is int:
                    node[key] = float(value)  # a whole-number rate must not make dlt infer bigint for the column
                continue
            converted = _coerce_json(value, data_type or "")
            with self._lock:
                if converted is _NOTHING:
                    self.counts.uncoerced[f"{table}.{column}"] += 1
                else:
                    node[key] = converted
                    self.counts.coerced[f"{table}.{column}"] += 1

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
            log.warning("%s: %d value(s) of another type could not be coerced without loss (type drift)", column, n)


def _coerce_json(value: Any, data_type: str) -> Any:
    """`value` (a JSON scalar) as a value of dlt `data_type` when nothing is lost, else `_NOTHING`:
    numbers only from plain decimal text (or an integral float), booleans only from true/false, text from
    numbers and booleans (their JSON spelling). A refused value reaches dlt as it is: dlt puts it in a
    variant column (or, for a few pairs such as "yes" -> true, converts it its own way)."""
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
