"""Quick syncs read only the recipient pages that changed (pipelines.source.recipient_pages), against a real
sandbox over HTTP and a real DuckDB file; and fall back to whole reads when the stored copy is off."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from test_sync_support import admin_keys, api_truth, assert_no_duplicates, assert_warehouse_equals_api, query

from pipelines.source.shaping import campaign_fingerprint
from pipelines.sync.edge import run_sync


def _sync(sb: Any, tmp: Path, mode: str, key: str) -> Any:
    return run_sync(
        mode=mode,
        api_keys=[key],
        base_url=sb.base_url,
        duckdb_path=tmp / "outreach.duckdb",
        pipelines_dir=tmp / "pipelines",
        spool_dir=tmp / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
        reply_body_cap=100_000,
    )


def _fingerprints(base_url: str, key: str) -> dict[str, str]:
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}) as http:
        data = http.get("/campaigns", params={"per_page": 100}).json()["data"]
    return {c["id"]: campaign_fingerprint(c) for c in data}


def _execute(db: Path, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    con.execute(f"attach '{db}' as wh")
    con.execute("use wh")
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def test_quick_reads_only_changed_pages_and_repairs_or_rereads_what_is_off(
    make_sandbox: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pipelines")
    sb = make_sandbox(scale="small", rate_limit=0)
    key = admin_keys(sb)[0]
    db = tmp_path / "outreach.duckdb"
    _sync(sb, tmp_path, "full", key)
    # every recipient has its place in its campaign's list: 0..n-1 per campaign
    bad = query(
        db,
        "select campaign_id from outreach.campaign_recipients group by campaign_id "
        "having count(list_position) <> count(*) or min(list_position) <> 0 "
        "or max(list_position) <> count(*) - 1 or count(distinct list_position) <> count(*)",
    )
    assert bad == []

    before = _fingerprints(sb.base_url, key)
    sb.advance(6 * 3600)
    after = _fingerprints(sb.base_url, key)
    changed = sorted(cid for cid, fp in after.items() if before.get(cid) != fp)
    opened = dict(
        query(
            db,
            "select campaign_id, count(opened_at) from outreach.campaign_recipients group by 1 having count(*) > 200",
        )
    )
    with_opens = [cid for cid in changed if opened.get(cid, 0) > 0]
    assert with_opens and len(changed) >= 2, "six hours should change campaigns, one of several pages with opens"
    repaired = with_opens[0]
    reread = next(cid for cid in changed if cid != repaired)
    # 1) the stored copy misses an open the API has: the stats cannot add up until its page is read
    victim = query(
        db,
        "select id from outreach.campaign_recipients where campaign_id = ? and opened_at is not null "
        "order by list_position desc limit 1",
        repaired,
    )[0][0]
    _execute(db, "update outreach.campaign_recipients set opened_at = null where id = ?", victim)
    # 2) a row without a position: its campaign is read whole
    _execute(
        db,
        "update outreach.campaign_recipients set list_position = null where id = "
        "(select id from outreach.campaign_recipients where campaign_id = ? limit 1)",
        reread,
    )

    quick = _sync(sb, tmp_path, "quick", key)
    ws = quick.workspaces[0]
    assert ws.campaigns_changed == len(changed)
    assert ws.campaigns_read_whole >= 1
    assert f"campaign {reread}: read whole (stored positions incomplete)" in caplog.text
    # the point: fewer recipient pages than the changed campaigns have
    assert ws.recipient_pages_read < ws.recipient_pages_listed, (ws.recipient_pages_read, ws.recipient_pages_listed)
    assert "recipient pages read" in quick.summary()

    truth = api_truth(sb.base_url, key)
    stale = {cid for cid, c in truth["campaigns"].items() if before.get(cid) == campaign_fingerprint(c)}
    assert repaired not in stale and reread not in stale
    assert_warehouse_equals_api(db, truth, skip_stale_campaigns=stale, check_is_read=False)
    assert_no_duplicates(db)
    assert query(db, "select opened_at is not null from outreach.campaign_recipients where id = ?", victim) == [(True,)]
    assert query(db, "select count(*) from outreach.campaign_recipients where list_position is null") == [(0,)]

    # a second round on the now-repaired copy: no campaign needs a whole read, and nothing drifts
    before = _fingerprints(sb.base_url, key)
    sb.advance(3 * 3600)
    again = _sync(sb, tmp_path, "quick", key).workspaces[0]
    assert again.campaigns_changed > 0 and again.campaigns_read_whole == 0
    assert again.recipient_pages_read < again.recipient_pages_listed
    truth = api_truth(sb.base_url, key)
    stale = {cid for cid, c in truth["campaigns"].items() if before.get(cid) == campaign_fingerprint(c)}
    assert_warehouse_equals_api(db, truth, skip_stale_campaigns=stale, check_is_read=False)
