"""What a rule finds, and the clock rules measure on (the service's, never the wall clock)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from alerts.db import Db
from alerts.settings import AlertSettings


@dataclass(frozen=True)
class Finding:
    """One subject in breach of one rule."""

    rule: str
    workspace_id: str | None
    subject_type: str  # workspace, mailbox, campaign or reply
    subject_id: str
    subject_label: str
    value: float
    threshold: float
    volume: float | None = None  # sends or recipients the rate is over
    is_estimate: bool = False  # a bounce attributed to a mailbox by its share of a campaign's sends
    detail: str = ""


Rule = Callable[[Db, AlertSettings, datetime], list[Finding]]


def service_now(db: Db) -> datetime | None:
    """The service's clock as the warehouse knows it: the newest service timestamp loaded (the account's
    `observed_at`, sends, replies, webhook events); the same rule as models' stg_service_clock."""
    parts = [
        ("workspaces", "observed_at"),
        ("campaign_recipients", "last_sent_at"),
        ("campaign_recipients", "bounced_at"),
        ("campaign_recipients", "replied_at"),
        ("replies", "received_at"),
        ("events", "created_at"),
    ]
    found = []
    for table, column in parts:
        # a column dlt never created (the API never sent it, or an older warehouse) is skipped, not an error
        if db.has("outreach", table) and column in db.columns("outreach", table):
            found.append(db.scalar(f"select max({column}) from outreach.{table}"))
    stamps = [aware(v) for v in found if v is not None]
    return max(stamps) if stamps else None


def aware(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).astimezone(UTC)
