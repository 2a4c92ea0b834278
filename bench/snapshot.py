"""An independent, complete read of one workspace through the API (httpx only, no pipeline code).

Used as the ground truth for `truth_ok` and for the lower bound (before/after a simulated hour).
Recipients are kept compact (a tuple of key fields per row plus a hash of the whole row), so a
`large` snapshot (1M recipients) stays in a few hundred MB.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx

logger = logging.getLogger(__name__)

CAMPAIGNS_PER_PAGE = 100
REPLIES_PER_PAGE = 100
RECIPIENTS_PER_PAGE = 200
RECIPIENT_TIMESTAMPS = ("last_sent_at", "opened_at", "clicked_at", "replied_at", "bounced_at")
CAMPAIGN_STATS = ("total_leads", "sent", "opened", "clicked", "replied", "bounced")


def epoch_ms(value: str | None) -> int | None:
    """ISO 8601 (with `Z` or an offset) to epoch milliseconds; None stays None."""
    if value is None:
        return None
    return round(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)


def row_hash(row: dict[str, Any]) -> int:
    """A stable fingerprint of a whole API row (to tell changed rows from unchanged ones)."""
    text = json.dumps(row, sort_keys=True, separators=(",", ":"))
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def campaign_fingerprint(campaign: dict[str, Any]) -> tuple[Any, ...]:
    """Status and running totals from the campaign list: what DESIGN.md's quick sync compares."""
    stats = campaign.get("stats") or {}
    return (campaign["status"], *(stats.get(k) for k in CAMPAIGN_STATS))


@dataclass
class RecipientRow:
    """Key fields of one recipient (compared with the warehouse) and a hash of the whole row."""

    id: str
    key: tuple[Any, ...]
    digest: int


@dataclass
class Snapshot:
    """Everything one workspace's API returns, in API order."""

    account: dict[str, Any]
    campaigns: list[dict[str, Any]]
    recipients: dict[str, list[RecipientRow]] = field(default_factory=dict)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    replies: list[dict[str, Any]] = field(default_factory=list)
    mailboxes: list[dict[str, Any]] = field(default_factory=list)
    requests: int = 0

    @property
    def workspace_id(self) -> str:
        return str(self.account["workspace"]["id"])

    def recipient_count(self) -> int:
        return sum(len(rows) for rows in self.recipients.values())


class _Reader:
    """Minimal paging reader with retries for 429/5xx (the snapshot must not fail on a busy sandbox)."""

    def __init__(self, base_url: str, api_key: str) -> None:
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=httpx.Timeout(60.0),
        )
        self.requests = 0

    def close(self) -> None:
        self._client.close()

    def get(self, path: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        for attempt in range(8):
            self.requests += 1
            try:
                response = self._client.get(path, params=params)
            except httpx.TransportError:
                time.sleep(0.2 * (attempt + 1))
                continue
            if response.status_code == 429 or response.status_code >= 500:
                time.sleep(float(response.headers.get("Retry-After", 0.2 * (attempt + 1))))
                continue
            response.raise_for_status()
            try:
                return dict(response.json())
            except ValueError:  # a truncated body (fault injection): read again
                continue
        raise RuntimeError(f"snapshot: GET {path} kept failing; is the sandbox up and faults off?")

    def pages(self, path: str, per_page: int, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        page = 1
        while True:
            body = self.get(path, {**(params or {}), "per_page": per_page, "page": page})
            rows.extend(body["data"])
            if page >= int(body["meta"]["last_page"]):
                return rows
            page += 1


def _recipient_row(row: dict[str, Any]) -> RecipientRow:
    key = (
        row["email"],
        row["status"],
        row["current_step"],
        *(epoch_ms(row.get(name)) for name in RECIPIENT_TIMESTAMPS),
    )
    return RecipientRow(id=str(row["id"]), key=key, digest=row_hash(row))


def take_snapshot(base_url: str, api_key: str, *, with_recipients: bool = True) -> Snapshot:
    """Read the whole workspace of `api_key` (account, campaigns, recipients, stats, replies, mailboxes)."""
    reader = _Reader(base_url, api_key)
    try:
        snap = Snapshot(
            account=reader.get("/account")["data"],
            campaigns=reader.pages("/campaigns", CAMPAIGNS_PER_PAGE),
        )
        for campaign in snap.campaigns:
            cid = str(campaign["id"])
            snap.stats[cid] = reader.get(f"/campaigns/{cid}/stats")["data"]
            if with_recipients:
                rows = reader.pages(f"/campaigns/{cid}/leads", RECIPIENTS_PER_PAGE)
                snap.recipients[cid] = [_recipient_row(r) for r in rows]
        snap.replies = reader.pages("/replies", REPLIES_PER_PAGE)
        snap.mailboxes = list(reader.get("/email-accounts")["data"])
        snap.requests = reader.requests
        logger.info(
            "snapshot: %d campaigns, %d recipients, %d replies in %d requests",
            len(snap.campaigns),
            snap.recipient_count(),
            len(snap.replies),
            snap.requests,
        )
        return snap
    finally:
        reader.close()
