"""A server that trickles its status line and headers (not its body) a byte at a time: never silent for the
read time-out, so only the stall deadline (`stall_timeout_s`) ends the answer, through a raw-socket proxy in
front of the sandbox over real HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, query, sandbox_sync_args
from trickle_proxy import TrickleProxy

from pipelines.api.client import OutreachClient
from pipelines.core.errors import ApiUnavailableError
from pipelines.sync.edge import run_sync


@pytest.fixture
def trickling(make_sandbox: Any) -> Iterator[tuple[Any, TrickleProxy]]:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    # one byte every 0.4 s: an answer's ~250 bytes of status line and headers take ~100 s
    proxy = TrickleProxy(sb.base_url, drip_s=0.4, drip_after=1)
    yield sb, proxy
    proxy.close()


def test_a_client_gives_up_on_trickled_headers_after_the_stall_timeout(trickling: tuple[Any, TrickleProxy]) -> None:
    sb, proxy = trickling
    client = OutreachClient(admin_keys(sb)[0], proxy.base_url, rate_limit_per_minute=None, stall_timeout=1)
    client.get("/account")  # the first answer comes at full speed
    started = time.monotonic()
    with pytest.raises(ApiUnavailableError) as caught:
        client.get("/campaigns")
    seconds = time.monotonic() - started
    client.close()
    line = str(caught.value)
    # a stall is tried twice (one retry, its backoff under 0.5 s), not max_attempts times
    assert seconds < 2 * 1 + 0.5 + 1.5, f"gave up after {seconds:.1f} s"
    assert seconds >= 2 * 1, f"gave up after {seconds:.1f} s, before two stall timeouts"
    assert "failed 2 times" in line and "stall_timeout_s" in line and "\n" not in line, line
    assert client.stats.snapshot()["timeouts"] == 2


def test_a_sync_fails_in_one_line_naming_the_stall(
    trickling: tuple[Any, TrickleProxy], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb, proxy = trickling
    keys = admin_keys(sb)[:1]
    monkeypatch.setenv("SOURCES__OUTREACH__STALL_TIMEOUT_S", "2")
    args = sandbox_sync_args(sb, keys, tmp_path / "w.duckdb", tmp_path, base_url=proxy.base_url)
    started = time.monotonic()
    with pytest.raises(ApiUnavailableError) as caught:
        run_sync(**args)
    seconds = time.monotonic() - started
    line = str(caught.value)
    assert "stall_timeout_s" in line and "too slowly" in line and "\n" not in line, line
    # two stalls of 2 s, plus the sync's own start (dlt, the warehouse): far from the ~100 s of one trickled answer
    assert seconds < 2 * 2 + 25, f"the sync took {seconds:.1f} s"
    runs = query(tmp_path / "w.duckdb", "select outcome, error from outreach.sync_runs")
    assert [r[0] for r in runs] == ["failed"] and "stall_timeout_s" in runs[0][1], runs
