"""Records that cannot be loaded go to ``outreach.rejected_records``, never away and never as NULLs.

A record is rejected when it has no primary key, or when one of its values cannot be typed (a timestamp in
no accepted form, text in a number column: `pipelines.source.drift.DriftGuard.check`). Each rejection keeps
the endpoint, the page (when the endpoint pages), the reason and the record's JSON, with values under
secret-looking keys replaced. They travel in the batch's load package, so they commit with its data.

A rejection also says what the run cannot know: a record without an id might be any stored row, so
the tables that `ENDPOINT_TABLES` names for its endpoint get no deletion marks and no scd2 retirements
from that workspace in that run. The run then ends non-zero with one line per endpoint and count
(`RejectedRecordsError`), and its run records carry the counts (`outreach status` shows them).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

import dlt
from dlt.common.schema.typing import TTableSchemaColumns

from pipelines.core.errors import OutreachError

REJECTED_TABLE = "rejected_records"

#: The endpoint whose records a table is made of (what a rejection names).
TABLE_ENDPOINTS: dict[str, str] = {
    "workspaces": "GET /account",
    "workspace_history": "GET /account",
    "campaigns": "GET /campaigns",
    "campaign_recipients": "GET /campaigns/{id}/leads",
    "campaign_stats": "GET /campaigns/{id}/stats",
    "campaign_variants": "GET /campaigns/{id}/stats",
    "campaign_daily_sends": "GET /campaigns/{id}/stats",
    "replies": "GET /replies",
    "email_accounts": "GET /email-accounts",
    "webhook_event_types": "GET /hooks/events",
}
REPLY_BODY_ENDPOINT = "GET /replies/{id}"

#: The tables an endpoint's rejections protect: nothing in them is marked deleted or retired for that
#: workspace in that run. A campaign missing from the list would otherwise make its recipients, stats
#: and variants look deleted too.
ENDPOINT_TABLES: dict[str, tuple[str, ...]] = {
    "GET /account": ("workspaces", "workspace_history"),
    "GET /campaigns": ("campaigns", "campaign_recipients", "campaign_stats", "campaign_variants"),
    "GET /campaigns/{id}/leads": ("campaign_recipients",),
    "GET /campaigns/{id}/stats": ("campaign_stats", "campaign_variants"),
    "GET /replies": ("replies",),
    REPLY_BODY_ENDPOINT: ("replies",),
    "GET /email-accounts": ("email_accounts",),
    "GET /hooks/events": ("webhook_event_types",),
}

_SECRET_KEY = re.compile(r"(secret|password|passwd|token|api[_-]?key|authorization|signing)", re.IGNORECASE)
REDACTED = "[redacted]"

REJECTED_COLUMNS = cast(
    TTableSchemaColumns,
    {
        "run_id": {"data_type": "text", "nullable": False},
        "workspace_id": {"data_type": "text"},
        "endpoint": {"data_type": "text", "nullable": False},
        "page": {"data_type": "bigint"},
        "reason": {"data_type": "text", "nullable": False},
        "raw": {"data_type": "text"},
        "rejected_at": {"data_type": "timestamp", "timezone": True},
    },
)


class RejectedRecordsError(OutreachError):
    """The run loaded what it could, but rejected records: it ends non-zero, naming endpoints and counts.
    `report` is the run's `pipelines.core.report.SyncReport`."""

    report: Any = None


@dataclass(frozen=True)
class Rejection:
    endpoint: str
    page: int | None
    reason: str
    raw: Any
    at: datetime


def rejection(endpoint: str, page: int | None, reason: str, raw: Any) -> Rejection:
    return Rejection(endpoint, page, reason, raw, datetime.now(UTC))


def redact(value: Any) -> Any:
    """`value` with every value under a secret-looking key replaced (nested objects and lists too)."""
    if isinstance(value, Mapping):
        return {k: REDACTED if _SECRET_KEY.search(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    return value


def rejected_row(run_id: str, workspace_id: str, item: Rejection) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "workspace_id": workspace_id,
        "endpoint": item.endpoint,
        "page": item.page,
        "reason": item.reason,
        "raw": json.dumps(redact(item.raw), default=str, sort_keys=True),
        "rejected_at": item.at,
    }


def rejected_resource(rows: Callable[[], Iterable[dict[str, Any]]]) -> Any:
    """The `rejected_records` resource (append); `rows` gives the rows when the resource runs."""

    @dlt.resource(name=REJECTED_TABLE, write_disposition="append", columns=REJECTED_COLUMNS)
    def rejected_records() -> Iterator[list[dict[str, Any]]]:
        ready = list(rows())
        if ready:
            yield ready

    return rejected_records()


def protected_tables(rejections: Iterable[Rejection]) -> set[str]:
    """The tables that must not be marked deleted (or retired) given these rejections."""
    return {table for item in rejections for table in ENDPOINT_TABLES.get(item.endpoint, ())}


def counts(rejections: Iterable[Rejection]) -> dict[str, int]:
    """Rejected records per endpoint."""
    return dict(Counter(item.endpoint for item in rejections))


def summary_line(per_endpoint: Mapping[str, int], where: str = "") -> str:
    """One line: ``GET /replies: 1 record rejected; ...`` (never a record's content)."""
    parts = [f"{endpoint}: {n} record{'s' if n != 1 else ''} rejected" for endpoint, n in sorted(per_endpoint.items())]
    scope = f" ({where})" if where else ""
    return (
        "; ".join(parts) + scope + f": see outreach.{REJECTED_TABLE} for the reason and the record; "
        "nothing was marked deleted on those endpoints"
    )
