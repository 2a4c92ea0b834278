"""Which recipient pages a sync reads for one campaign, and when a quick sync may stop.

A full sync reads every page. A quick sync of a changed campaign reads only the pages that hold
its changes, and stops when the campaign's stats add up:

* The warehouse knows, per stored page (rows in the API's list order, `list_position`), how much
  that page adds to each counter of `GET /campaigns/{id}/stats` `totals`: recipients, sent (the sum
  of `current_step`), opened, clicked, replied, bounced, unsubscribed, pending.
* Reading a page replaces its stored contribution with the API's. When stored totals, corrected
  by every page read, equal the API's totals, the pages not read hold no change: each counter only
  moves one way per recipient (steps and opens only grow, nobody goes back to pending), and every
  status change moves a recipient up a fixed order (pending < active < sent < completed <
  replied/bounced/unsubscribed), which the counts would show. The exception is sent -> completed,
  which the counts cannot see; it happens when the campaign completes, so a campaign whose status
  changed is read whole.
* Pages are tried in the order most likely to hold each unexplained counter (new recipients at the
  end; the next pending recipients for first sends and bounces; the longest-waiting active ones for
  follow-ups; the most recently emailed for opens, clicks, replies, unsubscribes), taking turns
  between counters.
* Anything unexpected reads the campaign whole: no stored positions, a page whose first or last
  id moved (the order is not what was stored), totals missing from the stats, or candidates used
  up before the counts add up. A whole read is what the sync did before this, so the worst case
  costs nothing extra but the pages already read.

The semantics of the counters are the sandbox's documented ones (sandbox/README.md, "Counts" and
"Recipient transitions"); an API that counts differently never adds up and is always read whole.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

COUNTERS = ("recipients", "sent", "opened", "clicked", "replied", "bounced", "unsubscribed", "pending")
Vector = tuple[int, ...]
ZERO: Vector = (0,) * len(COUNTERS)
_STATUS_COUNTERS = {"replied": 4, "bounced": 5, "unsubscribed": 6, "pending": 7}


def row_vector(item: Mapping[str, Any]) -> Vector:
    """What one API recipient adds to each counter."""
    v = [1, _int(item.get("current_step")), int(item.get("opened_at") is not None),
         int(item.get("clicked_at") is not None), 0, 0, 0, 0]  # fmt: skip
    slot = _STATUS_COUNTERS.get(str(item.get("status")))
    if slot is not None:
        v[slot] = 1
    return tuple(v)


def api_totals(stats: Any) -> Vector | None:
    """The counters from a stats payload's `totals`, or None when any is missing or not an integer."""
    totals = stats.get("totals") if isinstance(stats, Mapping) else None
    if not isinstance(totals, Mapping):
        return None
    values = [totals.get(name) for name in COUNTERS]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return tuple(values)  # type: ignore[arg-type]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _add(a: Vector, b: Vector, sign: int = 1) -> Vector:
    return tuple(x + sign * y for x, y in zip(a, b, strict=True))


@dataclass(frozen=True)
class StoredPage:
    """One page as the warehouse holds it: its counter contribution and the ids at its two ends."""

    rows: int
    vector: Vector
    first_id: str
    last_id: str


@dataclass
class StoredCampaign:
    """One campaign's stored recipients, summarised per page (built by `pipelines.source.stored`)."""

    status: str | None
    pages: dict[int, StoredPage]
    candidates: dict[str, list[int]]  # counter -> pages, likeliest first
    positioned: bool = True  # False: some stored rows have no list_position (loaded before it existed)

    @property
    def rows(self) -> int:
        return sum(p.rows for p in self.pages.values())

    @property
    def totals(self) -> Vector:
        total = ZERO
        for page in self.pages.values():
            total = _add(total, page.vector)
        return total

    def is_contiguous(self, per_page: int) -> bool:
        """Pages 1..n, all full but the last: positions were written by whole-page reads."""
        n = len(self.pages)
        if set(self.pages) != set(range(1, n + 1)):
            return False
        return all(self.pages[i].rows == per_page for i in range(1, n)) and 0 < self.pages[n].rows <= per_page


@dataclass
class PageGuide:
    """Hands out page numbers for one campaign (`next_page`), learning from each page read (`observe`).

    `stored` None (a full sync, or nothing usable stored) reads every page, like plain paging.
    """

    per_page: int
    stored: StoredCampaign | None = None
    stats: Any = None
    whole: bool = False
    reason: str = ""
    pages_read: int = 0
    last_page: int | None = None
    _read: set[int] = field(default_factory=set)
    _queue: list[int] = field(default_factory=list)
    _need: Vector = ZERO
    _have: Vector = ZERO
    _turn: int = 0
    _candidates: dict[str, Iterator[int]] = field(default_factory=dict)
    _done: bool = False

    def __post_init__(self) -> None:
        need = api_totals(self.stats)
        status = self.stats.get("campaign", {}).get("status") if isinstance(self.stats, Mapping) else None
        stored = self.stored
        if stored is None:
            self._read_whole("no stored pages" if self.stats is not None else "")
        elif need is None:
            self._read_whole("stats without usable totals")
        elif not stored.positioned or not stored.is_contiguous(self.per_page):
            self._read_whole("stored positions incomplete")
        elif status != stored.status:
            self._read_whole(f"campaign status {stored.status} -> {status}")
        elif need[0] < stored.rows:
            self._read_whole("fewer recipients than stored")
        else:
            self._need, self._have = need, stored.totals
            self.last_page = max(1, math.ceil(need[0] / self.per_page))
            if need[0] > stored.rows:  # new recipients are appended: read from the first page they touch
                self._queue = list(range(stored.rows // self.per_page + 1, self.last_page + 1))
            self._candidates = {name: iter(pages) for name, pages in stored.candidates.items()}

    @property
    def verified(self) -> bool:
        """True when the pages read explain every change in the stats (a quick read that stopped early)."""
        return not self.whole and self._have == self._need

    def _read_whole(self, reason: str) -> None:
        self.whole = True
        self.reason = reason

    def next_page(self) -> int | None:
        """The next page to read, or None when done."""
        if self._done:
            return None
        while self._queue:
            number = self._queue.pop(0)
            if number not in self._read:
                return number
        if self.whole:
            return self._next_unread()
        if self._have == self._need:
            return None
        candidate = self._next_candidate()
        if candidate is None:
            self._read_whole("stats did not add up after the likely pages")
            return self._next_unread()
        return candidate

    def _next_unread(self) -> int | None:
        limit = self.last_page if self.last_page is not None else 1
        for number in range(1, limit + 1):
            if number not in self._read:
                return number
        return None

    def _next_candidate(self) -> int | None:
        """Round robin over the counters that still differ; each offers its next unread page."""
        names = [n for i, n in enumerate(COUNTERS) if self._have[i] != self._need[i] and n in self._candidates]
        for offset in range(len(names)):
            name = names[(self._turn + offset) % len(names)]
            for number in self._candidates[name]:
                if number not in self._read:
                    self._turn = (self._turn + offset + 1) % len(names)
                    return number
            del self._candidates[name]
        return None

    def observe(self, number: int, items: Sequence[Mapping[str, Any]], last_page: int) -> None:
        """Account for page `number` as the API returned it."""
        self._read.add(number)
        self.pages_read += 1
        if self.whole:
            self.last_page = last_page
            if not items:  # past the end: plain paging stops here too
                self._done = True
            return
        self.last_page = max(last_page, self.last_page or 0)  # the list may have grown since the stats
        stored = self.stored.pages.get(number) if self.stored else None
        if stored is not None and not _same_ends(stored, items):
            self._read_whole(f"page {number} no longer starts and ends with the stored recipients")
            return
        page_vector = ZERO
        for item in items:
            page_vector = _add(page_vector, row_vector(item))
        self._have = _add(_add(self._have, page_vector), stored.vector if stored else ZERO, -1)


def _same_ends(stored: StoredPage, items: Sequence[Mapping[str, Any]]) -> bool:
    if len(items) < stored.rows:
        return False
    return str(items[0].get("id")) == stored.first_id and str(items[stored.rows - 1].get("id")) == stored.last_id
