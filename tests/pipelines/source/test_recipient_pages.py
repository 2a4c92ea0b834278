"""Unit tests of pipelines.source.recipient_pages: which pages a sync reads, and when a quick sync may stop.

A small campaign is simulated in memory (5 pages of 4 rows): the stored copy is summarised the way
pipelines.source.stored does it, the "API" is a list of rows, and the guide is driven page by page.
"""

from __future__ import annotations

import copy
from typing import Any

from pipelines.source.recipient_pages import COUNTERS, PageGuide, StoredCampaign, StoredPage, row_vector

PER_PAGE = 4


def _rows(n: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        contacted = i < 12
        rows.append(
            {
                "id": f"r{i:03d}",
                "status": "active" if contacted else "pending",
                "current_step": 1 if contacted else 0,
                "last_sent_at": f"2026-03-{1 + i:02d}T10:00:00Z" if contacted else None,
                "opened_at": None,
                "clicked_at": None,
            }
        )
    return rows


def _stored(rows: list[dict[str, Any]], status: str = "active") -> StoredCampaign:
    pages: dict[int, StoredPage] = {}
    for start in range(0, len(rows), PER_PAGE):
        chunk = rows[start : start + PER_PAGE]
        vector = tuple(sum(row_vector(r)[i] for r in chunk) for i in range(len(COUNTERS)))
        pages[start // PER_PAGE + 1] = StoredPage(len(chunk), vector, chunk[0]["id"], chunk[-1]["id"])
    # every counter tries pages in order: enough for these tests (the real orders come from SQL)
    candidates = {name: sorted(pages) for name in COUNTERS[1:]}
    return StoredCampaign(status=status, pages=pages, candidates=candidates)


def _stats(rows: list[dict[str, Any]], status: str = "active") -> dict[str, Any]:
    totals = {name: sum(row_vector(r)[i] for r in rows) for i, name in enumerate(COUNTERS)}
    return {"campaign": {"status": status}, "totals": {**totals, "delivered": 0, "failed": 0}}


def _drive(guide: PageGuide, api: list[dict[str, Any]]) -> list[int]:
    """Serve pages of `api` to the guide until it stops; return the page numbers it asked for."""
    asked = []
    last_page = max(1, -(-len(api) // PER_PAGE))
    while (number := guide.next_page()) is not None:
        asked.append(number)
        assert len(asked) <= 50, "the guide never stops"
        guide.observe(number, api[(number - 1) * PER_PAGE : number * PER_PAGE], last_page)
    return asked


def test_full_sync_reads_every_page_in_order_like_plain_paging() -> None:
    api = _rows(18)
    guide = PageGuide(PER_PAGE)
    assert _drive(guide, api) == [1, 2, 3, 4, 5]
    assert guide.whole and guide.reason == "" and not guide.verified


def test_no_change_in_the_stats_reads_nothing() -> None:
    api = _rows(18)
    guide = PageGuide(PER_PAGE, _stored(api), _stats(api))
    assert _drive(guide, api) == []
    assert guide.verified


def test_a_change_stops_at_the_page_that_explains_it() -> None:
    stored_rows = _rows(18)
    api = copy.deepcopy(stored_rows)
    api[9]["opened_at"] = "2026-03-20T10:00:00Z"  # page 3
    api[13].update(status="active", current_step=1, last_sent_at="2026-03-20T10:00:00Z")  # page 4
    guide = PageGuide(PER_PAGE, _stored(stored_rows), _stats(api))
    asked = _drive(guide, api)
    assert asked == [1, 2, 3, 4]  # candidates in page order here; page 5 holds nothing and is skipped
    assert guide.verified and not guide.whole


def test_new_recipients_read_from_the_first_page_they_touch() -> None:
    stored_rows = _rows(18)
    api = stored_rows + [{**r, "id": f"n{i}"} for i, r in enumerate(_rows(18)[14:])]  # 4 appended, pending
    guide = PageGuide(PER_PAGE, _stored(stored_rows), _stats(api))
    assert _drive(guide, api) == [5, 6]  # page 5 held 2 stored rows and gets 2 new ones; page 6 is new
    assert guide.verified


def test_an_order_that_moved_reads_the_campaign_whole() -> None:
    stored_rows = _rows(18)
    api = copy.deepcopy(stored_rows)
    api[0], api[5] = api[5], api[0]  # pages 1 and 2 swapped a row: stored ends no longer match
    api[1]["opened_at"] = "2026-03-20T10:00:00Z"
    guide = PageGuide(PER_PAGE, _stored(stored_rows), _stats(api))
    assert sorted(_drive(guide, api)) == [1, 2, 3, 4, 5]
    assert guide.whole and "no longer starts and ends" in guide.reason


def test_status_change_missing_totals_or_missing_positions_read_whole() -> None:
    rows = _rows(18)
    changed_status = PageGuide(PER_PAGE, _stored(rows, "active"), _stats(rows, "completed"))
    assert changed_status.whole and "active -> completed" in changed_status.reason
    no_totals = PageGuide(PER_PAGE, _stored(rows), {"campaign": {"status": "active"}, "totals": {"sent": 3}})
    assert no_totals.whole and "totals" in no_totals.reason
    stored = _stored(rows)
    del stored.pages[2]  # a gap: some rows were never positioned
    gap = PageGuide(PER_PAGE, stored, _stats(rows))
    assert gap.whole and "positions" in gap.reason
    assert sorted(_drive(gap, rows)) == [1, 2, 3, 4, 5]


def test_counts_that_never_add_up_end_in_a_whole_read() -> None:
    stored_rows = _rows(18)
    api = copy.deepcopy(stored_rows)
    stats = _stats(api)
    stats["totals"]["opened"] += 1  # an API that counts opens differently: no page can explain it
    guide = PageGuide(PER_PAGE, _stored(stored_rows), stats)
    assert sorted(_drive(guide, api)) == [1, 2, 3, 4, 5]
    assert guide.whole and "did not add up" in guide.reason and not guide.verified


def test_candidates_are_tried_in_turn_between_counters() -> None:
    stored_rows = _rows(18)
    api = copy.deepcopy(stored_rows)
    api[17].update(status="bounced", current_step=1, last_sent_at="2026-03-20T10:00:00Z")  # page 5
    api[0]["opened_at"] = "2026-03-20T10:00:00Z"  # page 1
    stored = _stored(stored_rows)
    stored.candidates = {name: [1, 2, 3, 4, 5] for name in COUNTERS[1:]}
    stored.candidates["bounced"] = stored.candidates["pending"] = [5, 4]
    guide = PageGuide(PER_PAGE, stored, _stats(api))
    asked = _drive(guide, api)
    assert asked[:2] in ([5, 1], [1, 5]) and len(asked) == 2  # one page per counter, not all of one first
    assert guide.verified
