"""The client against the sandbox: the service clock from the `Date` header (the sandbox sends its
simulated time there, so history follows the service's clock, not this machine's)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from test_sync_support import admin_keys

from pipelines.api.accounts import connectivity_check
from pipelines.api.client import OutreachClient


def test_server_time_follows_the_sandbox_clock_not_the_wall_clock(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    now = datetime.fromisoformat(sb.advance(3 * 86400).replace("Z", "+00:00"))
    with OutreachClient(key, sb.base_url, rate_limit_per_minute=0) as client:
        assert client.server_time() is None
        connectivity_check(client)
        seen = client.server_time()
    assert seen is not None and seen.tzinfo is not None
    assert abs(seen - now) < timedelta(seconds=2)  # the Date header has whole seconds
