"""Paged listings of the API: one page, and what a listing has shown so far, to spot paging that skips rows.

A page must be the one asked for (`meta.current_page`) and no page may repeat another: an API that
ignores `page` would otherwise make a sync load the first page again and again and miss the rest.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pipelines.api.client_stats import ClientStats
from pipelines.core.errors import ApiUnavailableError, PagingError


@dataclass
class Page:
    """One page of a paged list: its items and `meta` (current_page, last_page, total)."""

    items: list[dict[str, Any]]
    current_page: int
    last_page: int
    total: int | None


class Listing:
    """What one paged listing (a path and its filters) has shown: pages seen, to spot a repeated page."""

    def __init__(self, stats: ClientStats) -> None:
        self._lock = threading.Lock()
        self._pages: dict[str, int] = {}  # digest of a page's row ids -> page number
        self._last_page = 0
        self._read = 0
        self._stats = stats

    def progress(self) -> tuple[int, int]:
        with self._lock:
            return self._read, self._last_page

    def observe(self, path: str, page: int, items: list[Any], last_page: int) -> None:
        ids = row_ids(items)
        digest = hashlib.blake2b("\n".join(ids).encode(), digest_size=16).hexdigest() if ids else ""
        with self._lock:
            other = self._pages.get(digest) if digest else None
            if other is not None and other != page:
                raise PagingError(
                    f"GET {path}: page {page} holds the same {len(ids)} rows as page {other}: the API ignores "
                    "`page`, so rows would be missed; stopped before loading anything"
                )
            if digest:
                self._pages[digest] = page
            known = max(self._last_page, last_page)
            grown, self._last_page = known - self._last_page, known
            self._read += 1
        self._stats.add(pages_read=1, pages_known=grown)


def row_ids(items: list[Any]) -> list[str]:
    return [str(item["id"]) for item in items if isinstance(item, Mapping) and item.get("id") is not None]


def paging_meta(path: str, page: int, meta: Any) -> tuple[int, int, int | None]:
    """(current_page, last_page, total) from a paged answer's `meta`; PagingError if it has none."""
    if not isinstance(meta, Mapping):
        raise PagingError(
            f"GET {path}: the answer has no paging `meta` (current_page, last_page): cannot tell whether pages "
            "are missing; is the base URL the API's /api/v1?"
        )
    try:
        current = int(meta.get("current_page") or page)
        last = int(meta.get("last_page") or current)
        total = meta.get("total")
        return current, last, int(total) if total is not None else None
    except (TypeError, ValueError):
        raise PagingError(f"GET {path}: `meta` paging numbers are not integers: {dict(meta)!r:.200}") from None


class PagedReads:
    """The paging of `OutreachClient`: pages read in order to `meta.last_page`, each checked against the
    page asked for, the listing's earlier pages and its `meta.total`."""

    _state_lock: threading.Lock
    _listings: dict[str, Listing]
    stats: ClientStats

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json_body: Any = None,
        idempotent: bool,
        need_data: bool = False,
    ) -> Any:
        raise NotImplementedError  # the client's

    def page(self, path: str, page: int, per_page: int, params: Mapping[str, Any] | None = None) -> Page:
        """Fetch one page of a paged list; PagingError if its `meta` contradicts the page asked for."""
        query = {**(params or {}), "page": page, "per_page": per_page}
        body = self._request("GET", path, params=query, idempotent=True, need_data=True)
        items = body["data"]
        if not isinstance(items, list):
            raise ApiUnavailableError(f"GET {path}: `data` is not a list: the API answered an unexpected shape")
        meta = body.get("meta")
        current, last, total = paging_meta(path, page, meta)
        if current != page:
            raise PagingError(
                f"GET {path} asked for page {page} but the API answered page {current} (meta.current_page): it "
                "does not page as documented, so rows would be missed; stopped before loading anything"
            )
        listing = self._listing(path, params)
        listing.observe(path, page, items, last)
        return Page(items, current, last, total)

    def iter_pages(
        self, path: str, *, per_page: int, params: Mapping[str, Any] | None = None, start_page: int = 1
    ) -> Iterator[Page]:
        """Yield pages in order until `meta.last_page` (or an empty page).

        Read to its end (not stopped early by the caller) under an unchanged `meta.total`, the listing
        must have held `total` distinct rows, else PagingError (rows were skipped by the API's paging).
        """
        number = start_page
        seen: set[int] = set()  # hashes of row ids: a large listing's ids would cost several times more
        anonymous = 0  # rows without an id (skipped downstream, but rows of the listing all the same)
        totals: set[int | None] = set()
        while True:
            current = self.page(path, number, per_page, params)
            ids = row_ids(current.items)
            seen.update(hash(i) for i in ids)
            anonymous += len(current.items) - len(ids)
            totals.add(current.total)
            yield current
            if number >= current.last_page or not current.items:
                break
            number += 1
        total = current.total
        rows = len(seen) + anonymous
        if start_page == 1 and len(totals) == 1 and total is not None and rows < total:
            raise PagingError(
                f"GET {path}: {rows} distinct rows over {number} page(s), but meta.total is {total} on every "
                "page: the API's paging skips rows; stopped before loading anything"
            )

    def paging_progress(self) -> dict[str, tuple[int, int]]:
        """Per listing read so far (its path, plus its filters if any): (pages read, `meta.last_page` known)."""
        with self._state_lock:
            listings = dict(self._listings)
        return {key: listing.progress() for key, listing in listings.items()}

    def _listing(self, path: str, params: Mapping[str, Any] | None) -> Listing:
        key = path + ("?" + json.dumps(sorted(params.items()), default=str) if params else "")
        with self._state_lock:
            listing = self._listings.get(key)
            if listing is None:
                listing = self._listings[key] = Listing(self.stats)
            return listing
