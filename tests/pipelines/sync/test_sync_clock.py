"""History on the service's clock (so that a skewed machine clock cannot reorder versions): scd2 versions of
campaigns and mailboxes are valid from
the service time they were seen at (its HTTP `Date`, the sandbox's simulated clock), and so is the workspace
row's `observed_at`; `synced_at` stays this machine's clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
from test_sync_support import admin_keys, query, sandbox_sync_args

from pipelines.sync.edge import run_sync


def _service_now(sb: Any, key: str) -> datetime:
    answer = httpx.get(f"{sb.base_url}/account", headers={"Authorization": f"Bearer {key}"})
    return parsedate_to_datetime(answer.headers["date"])


def test_history_and_observed_at_follow_the_service_clock_synced_at_the_wall_clock(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    db = tmp_path / "outreach.duckdb"
    common = sandbox_sync_args(sb, keys, db, tmp_path)
    run_sync(mode="full", **common)
    first = _service_now(sb, keys[0])
    assert abs(first - datetime.now(UTC)) > timedelta(days=1), "the sandbox clock should differ from ours"
    assert query(db, "select distinct _dlt_valid_from from outreach.campaigns") == [(first,)]
    assert query(db, "select distinct _dlt_valid_from from outreach.email_accounts") == [(first,)]

    sb.advance(24 * 3600)
    run_sync(mode="quick", **common)
    second = _service_now(sb, keys[0])
    assert second - first >= timedelta(days=1)
    retired = query(db, "select distinct _dlt_valid_to from outreach.campaigns where _dlt_valid_to is not null")
    assert retired == [(second,)], "a version retires at the service time the change was seen"
    assert query(db, "select distinct observed_at from outreach.workspaces") == [(second,)]
    synced = query(db, "select max(synced_at) from outreach.workspaces")[0][0]
    assert abs(synced - datetime.now(UTC)) < timedelta(minutes=5)
