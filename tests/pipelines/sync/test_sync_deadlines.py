"""Deadlines: a server that trickles its answers, a `Retry-After` longer than `max_retry_after_s`, and the
overall `sync_timeout_s`, each through the sandbox's fault options over real HTTP."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, query, sandbox_sync_args

from pipelines.api.client import OutreachClient
from pipelines.core.deadline import Deadline, SyncTimedOut
from pipelines.core.errors import ApiUnavailableError
from pipelines.sync.edge import run_sync


def _trickled_sync(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stall_s: int, sync_s: int
) -> None:
    """A sync against a sandbox whose answers (after the key check) come one byte every 0.3 s: never silent long
    enough for the read time-out (20 s), a page of ~2 KB would take ten minutes. Raises what ends it, within 15 s."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    sb.set_faults(drip_ms=300, drip_after=1)
    monkeypatch.setenv("SOURCES__OUTREACH__STALL_TIMEOUT_S", str(stall_s))
    monkeypatch.setenv("SOURCES__OUTREACH__SYNC_TIMEOUT_S", str(sync_s))
    started = time.monotonic()
    try:
        run_sync(**sandbox_sync_args(sb, keys, tmp_path / "w.duckdb", tmp_path))
    finally:
        elapsed = time.monotonic() - started
        assert elapsed < 15, f"the sync took {elapsed:.1f} s (stall {stall_s} s, deadline {sync_s} s)"


def test_a_trickling_server_is_cut_off_by_the_stall_timeout(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each answer is cut off after 1 s, and a request that stalls twice fails the run in one line naming it
    with pytest.raises(ApiUnavailableError, match=r"stall_timeout_s") as caught:
        _trickled_sync(make_sandbox, tmp_path, monkeypatch, stall_s=1, sync_s=600)
    assert "\n" not in str(caught.value)
    runs = query(tmp_path / "w.duckdb", "select outcome, requests, error from outreach.sync_runs")
    assert [r[0] for r in runs] == ["failed"] and "stall_timeout_s" in runs[0][2]
    assert runs[0][1] >= 2, runs  # the stalled request, tried again


def test_a_trickling_server_is_cut_off_by_the_sync_deadline(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a stall timeout longer than the run may take: the sync's own deadline ends it, checked while the answers
    # trickle in (every socket read waits in slices that look at it)
    with pytest.raises(SyncTimedOut, match=r"deadline of 6 s \(sync_timeout_s\)") as caught:
        _trickled_sync(make_sandbox, tmp_path, monkeypatch, stall_s=120, sync_s=6)
    assert "\n" not in str(caught.value)
    runs = query(tmp_path / "w.duckdb", "select outcome, error from outreach.sync_runs")
    assert [r[0] for r in runs] == ["failed"] and "sync_timeout_s" in runs[0][1]


def test_a_retry_after_longer_than_allowed_fails_at_once_naming_the_wait(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    sb.set_faults(error_rate=1.0, statuses=[429], retry_after_s=3600)
    started = time.monotonic()
    with pytest.raises(ApiUnavailableError) as caught:
        run_sync(**sandbox_sync_args(sb, keys, tmp_path / "w.duckdb", tmp_path))
    line = str(caught.value)
    assert time.monotonic() - started < 10
    assert "wait 3600 s" in line and "max_retry_after_s (120 s)" in line and "\n" not in line


def test_a_long_wait_shows_in_the_progress_and_ends_on_the_deadline(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    sb.set_faults(error_rate=1.0, statuses=[429], retry_after_s=30)
    deadline = Deadline(3)
    client = OutreachClient(key, sb.base_url, rate_limit_per_minute=None, max_retry_after=60, deadline=deadline)
    outcome: list[BaseException] = []

    def call() -> None:
        try:
            client.get("/account")
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    seen = ""
    limit = time.monotonic() + 2
    while not seen and time.monotonic() < limit:
        seen = client.stats.snapshot()["waiting"]
        time.sleep(0.05)
    worker.join(10)
    client.close()
    assert seen.startswith("waiting ") and "429" in seen, seen
    assert not worker.is_alive(), "a 30 s Retry-After outlived a 3 s deadline"
    assert outcome and isinstance(outcome[0], SyncTimedOut)
