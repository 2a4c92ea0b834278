"""Progress: wall-clock rate wait and an ETA from pages read vs pages known, so a long wait is told apart from
a hang."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from test_sync_support import admin_keys

from pipelines.core.progress import (
    WorkspaceProgress,
    _line,
    eta_seconds,
    expected_recipient_pages,
    format_eta,
    paging_totals,
)


def test_pages_known_count_started_listings_by_last_page_and_others_by_expectation() -> None:
    listings = {"/campaigns": (1, 1), "/campaigns/a/leads": (2, 5)}
    expected = {"/campaigns/a/leads": 4, "/campaigns/b/leads": 3}
    assert paging_totals(listings, expected) == (3, 1 + 5 + 3)
    assert eta_seconds(3, 9, 6.0) == 12.0 and eta_seconds(2, 9, 6.0) is None and eta_seconds(9, 9, 6.0) == 0.0
    assert [format_eta(s) for s in (None, 42, 125, 7322)] == ["-", "42s", "2m05s", "2h02m"]
    campaigns = [{"id": "a", "stats": {"total_leads": 401}}, {"id": "b", "stats": {"total_leads": "0"}}, {"id": "c"}]
    assert expected_recipient_pages(campaigns, ["a", "b"], "full", 200) == {
        "/campaigns/a/leads": 3,
        "/campaigns/b/leads": 1,
    }
    assert expected_recipient_pages(campaigns, ["a"], "quick", 200) == {"/campaigns/a/leads": 1}


def test_a_paced_sync_shows_wall_clock_waits_and_an_eta_that_ends_at_zero(
    shared_small_sandbox: Any, tmp_path: Path
) -> None:
    from pipelines.api.accounts import check_keys
    from pipelines.core.config import resolve_settings
    from pipelines.sync.extract import extract_batch
    from pipelines.warehouse.destination import warehouse_target

    sb = shared_small_sandbox
    key = admin_keys(sb)[0]
    progress = WorkspaceProgress(label="ws")
    samples: list[dict[str, Any]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            samples.append(progress.snapshot())

    sampler = threading.Thread(target=sample)
    started = time.monotonic()
    sampler.start()
    try:
        settings = resolve_settings(
            base_url=sb.base_url,
            duckdb_path=tmp_path / "w.duckdb",
            pipelines_dir=str(tmp_path / "p"),
            rate_limit_per_minute=600,
            reply_body_cap=10,
            workers=4,
            spool_dir=str(tmp_path / "none"),
        )
        (workspace,) = check_keys([key], sb.base_url)
        assert not isinstance(workspace, BaseException)
        extract_batch(
            [workspace],
            mode="full",
            settings=settings,
            warehouse=warehouse_target(settings),
            run_id="progress",
            progress_for=lambda ws: progress,
        )
    finally:
        done.set()
        sampler.join()
    elapsed = time.monotonic() - started
    final = progress.snapshot()
    client = final["client"]
    assert client["rate_wait_thread_s"] > client["rate_wait_s"] > 1.0  # 4 threads waited together
    assert client["rate_wait_s"] <= elapsed  # never more than the time that passed
    assert final["pages_read"] == final["pages_known"] > 3 and final["eta_s"] == 0.0
    etas = [s["eta_s"] for s in samples if s["eta_s"]]
    assert etas, "an ETA was shown while pages were left"
    assert any(s["pages_read"] < s["pages_known"] for s in samples)
    line = _line(final)
    assert f"pages={final['pages_read']}/{final['pages_known']}" in line and "eta=0s" in line


def test_a_settled_progress_keeps_its_figures_and_lets_the_closed_client_go() -> None:
    """The run keeps every workspace's progress to its end: holding the client's bound methods would keep each
    closed client (connection pool, TLS context, listings) alive, and a sync of 1,000 workspaces grew by them."""
    import gc
    import weakref

    from pipelines.api.client import OutreachClient

    client = OutreachClient("key-never-sent", "http://127.0.0.1:9/api/v1")
    client.stats.add(requests=7, pages_read=2)
    progress = WorkspaceProgress(label="w")
    progress.stats_source, progress.paging_source = client.stats.snapshot, client.paging_progress
    before = progress.snapshot()
    client.close()
    progress.settle()
    gone = weakref.ref(client)
    del client
    gc.collect()
    assert gone() is None
    after = progress.snapshot()
    assert after["client"] == before["client"] and after["client"]["requests"] == 7
    assert (after["pages_read"], after["pages_known"]) == (before["pages_read"], before["pages_known"])


def test_an_id_is_one_segment_of_a_request_path() -> None:
    """Every id that goes into a request's path (the sync's reads, the guard's pauses, unsubscribe): httpx normalises
    `..` in a URL, so `/campaigns/../email-accounts/x/pause` was a request to pause a mailbox."""
    import httpx

    from pipelines.core.constants import segment

    assert segment("3f1c2a9e-0000-4000-8000-000000000001") == "3f1c2a9e-0000-4000-8000-000000000001"
    path = f"/campaigns/{segment('../email-accounts/x')}/pause"
    assert (
        httpx.Request("POST", f"http://h/api/v1{path}").url.raw_path
        == b"/api/v1/campaigns/..%2Femail-accounts%2Fx/pause"
    )
