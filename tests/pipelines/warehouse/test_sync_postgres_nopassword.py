"""A PostgreSQL DSN without a password (trust, peer or ~/.pgpass authentication) works: the test server
trusts loopback connections."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg2
import pytest
from test_sync_support import admin_keys

from pipelines.sync.edge import run_sync


def test_a_dsn_without_a_password_syncs(
    make_sandbox: Any, pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ":" not in pg_dsn.split("//", 1)[1].split("@", 1)[0]  # the fixture's DSN names a user, no password
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_dsn)
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    report = run_sync(
        mode="full",
        api_keys=keys,
        base_url=sb.base_url,
        destination="postgres",
        pipelines_dir=tmp_path / "p",
        spool_dir=tmp_path / "none",
        progress=False,
        rate_limit_per_minute=0,
    )
    loaded = sum(ws.rows.get("campaign_recipients", 0) for ws in report.workspaces)
    with psycopg2.connect(pg_dsn) as con, con.cursor() as cur:
        cur.execute("select count(*) from outreach.campaign_recipients")
        row = cur.fetchone()
    assert row is not None and row[0] == loaded > 0
