"""The lower bound: the fewest API requests any client needs to observe what changed.

Computed from two complete snapshots of the same workspace (`bench.snapshot`), taken with a
separate key before and after the change, so the bound never depends on our pipeline:

- fixed reads, every sync: `GET /account` (1) + campaign list pages (ceil(campaigns / 100)) +
  `GET /email-accounts` (1, not paged);
- replies: the pages from the newest down to the cursor, max(1, ceil(new replies / 100)) (an
  oracle knows from `meta.total` where the cursor is, so it never reads one page too many);
- stats: one `GET /campaigns/{id}/stats` per campaign whose stats payload changed;
- recipients: for each changed campaign, the number of distinct 200-row pages (in the API's stable
  order) holding a new or changed row.

"Changed campaign" means its list fingerprint (status and running totals, DESIGN.md) changed or it is
new. Changes inside campaigns whose fingerprint did not move are quick's documented blind spot: their
pages are counted apart (`blind_requests`) and not in `requests`, since no quick sync promises them.
Reply bodies (`GET /replies/{id}`) are counted apart too (`body_requests`: one per new reply), because
the baseline fetches none; ours' body fetches are reported beside them.

A full sync's bound is the same formula against an empty "before": every page of everything.
Time bound: `requests / (rate_limit_per_minute / 60)`, at the API's documented 120/min unless the
scenario sets another limit.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from bench.snapshot import (
    CAMPAIGNS_PER_PAGE,
    RECIPIENTS_PER_PAGE,
    REPLIES_PER_PAGE,
    Snapshot,
    campaign_fingerprint,
)

DOCUMENTED_RATE_LIMIT = 120


@dataclass
class Bound:
    """Request counts of the lower bound, by kind."""

    fixed: int
    reply_pages: int
    stats: int
    recipient_pages: int
    blind_requests: int = 0
    body_requests: int = 0
    changed_campaigns: int = 0
    changed_recipients: int = 0
    new_replies: int = 0

    @property
    def requests(self) -> int:
        return self.fixed + self.reply_pages + self.stats + self.recipient_pages

    def wall_s(self, rate_limit_per_minute: int = DOCUMENTED_RATE_LIMIT) -> float:
        return self.requests / (rate_limit_per_minute / 60.0)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "requests": self.requests}


def _fixed(after: Snapshot) -> int:
    return 1 + max(1, math.ceil(len(after.campaigns) / CAMPAIGNS_PER_PAGE)) + 1


def _changed_pages(before_rows: list[Any] | None, after_rows: list[Any]) -> tuple[int, int]:
    """(distinct pages holding a new or changed row, number of such rows)."""
    old = {r.id: r.digest for r in before_rows or []}
    pages: set[int] = set()
    changed = 0
    for position, row in enumerate(after_rows):
        if old.get(row.id) != row.digest:
            pages.add(position // RECIPIENTS_PER_PAGE)
            changed += 1
    return len(pages), changed


def change_bound(before: Snapshot | None, after: Snapshot) -> Bound:
    """The bound for syncing `after` when the client already holds `before` (None: a full sync)."""
    before_campaigns = {str(c["id"]): c for c in (before.campaigns if before else [])}
    before_replies = {str(r["id"]) for r in (before.replies if before else [])}
    new_replies = sum(1 for r in after.replies if str(r["id"]) not in before_replies)
    bound = Bound(
        fixed=_fixed(after),
        reply_pages=max(1, math.ceil(new_replies / REPLIES_PER_PAGE)),
        stats=0,
        recipient_pages=0,
        body_requests=new_replies,
        new_replies=new_replies,
    )
    for campaign in after.campaigns:
        cid = str(campaign["id"])
        old = before_campaigns.get(cid)
        stats_changed = before is None or before.stats.get(cid) != after.stats.get(cid)
        pages, rows = _changed_pages(before.recipients.get(cid) if before else None, after.recipients.get(cid, []))
        promised = old is None or campaign_fingerprint(old) != campaign_fingerprint(campaign)
        if promised:
            bound.changed_campaigns += 1
            bound.stats += int(stats_changed)
            bound.recipient_pages += pages
            bound.changed_recipients += rows
        else:
            bound.blind_requests += int(stats_changed) + pages
    return bound


def unchanged_fingerprints(before: Snapshot, after: Snapshot) -> frozenset[str]:
    """Campaigns whose list fingerprint did not change (quick's blind spot, DESIGN.md)."""
    old = {str(c["id"]): campaign_fingerprint(c) for c in before.campaigns}
    return frozenset(str(c["id"]) for c in after.campaigns if old.get(str(c["id"])) == campaign_fingerprint(c))
