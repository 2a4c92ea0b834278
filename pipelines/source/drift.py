"""Type drift and enum values over a whole source: `DriftGuard` types every JSON row and arrow table of a
workspace before dlt normalizes them, and counts what it coerced, rejected or did not know, for the sync
summary (`pipelines.core.report`)."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.core.constants import KNOWN_ENUMS, OPEN_ENUMS
from pipelines.core.timestamps import TimestampError, parse_optional
from pipelines.source.typing_rules import DRIFT_METADATA, ISO_LIKE, NATURAL_JSON_TYPES, NOTHING, coerce_json

log = logging.getLogger(__name__)


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
    pipeline's schema, `from_pipeline`) and the column hints of `pipelines.core.constants`. A column seen for
    the first time has no type yet; dlt infers it from the value and nothing is drift.
    """

    def __init__(self, column_types: Mapping[str, Mapping[str, str]]) -> None:
        self.types = {table: dict(cols) for table, cols in column_types.items()}
        self.counts = DriftCounts()
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> DriftGuard:
        """Types from the spec and the settings' column hints (before anything was loaded)."""
        from pipelines.core import constants as settings

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
        `pipelines.core.timestamps.parse_instant`; other values of another JSON type are coerced when nothing is
        lost. A row with a value that cannot be typed must be rejected (pipelines.source.quarantine): it never
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
                if not (isinstance(value, datetime) or (isinstance(value, str) and ISO_LIKE.match(value))):
                    with self._lock:
                        counts.coerced[f"{table}.{column}"] += 1
                continue
            natural = NATURAL_JSON_TYPES.get(data_type or "")
            if natural is None or (
                isinstance(value, natural) and not (isinstance(value, bool) and bool not in natural)
            ):
                if data_type == "double" and type(value) is int:
                    node[key] = float(value)  # a whole-number rate must not make dlt infer bigint for the column
                continue
            converted = coerce_json(value, data_type or "")
            if converted is NOTHING:
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
        """Copy the counts onto a `pipelines.core.report.WorkspaceReport` (and warn once per drifted column)."""
        with self._lock:
            report.coerced = dict(self.counts.coerced)
            report.uncoerced = dict(self.counts.uncoerced)
            report.unknown_values = dict(self.counts.unknown_values)
            report.new_values = dict(self.counts.new_values)
        for column, n in sorted(report.uncoerced.items()):
            log.warning("%s: %d value(s) could not be typed; their records were rejected (type drift)", column, n)
