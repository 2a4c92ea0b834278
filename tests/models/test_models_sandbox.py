"""Models on a warehouse synced for real from a `small` sandbox (two workspaces, read-only keys).

Checks every mart against pandas over the raw tables (check_marts), the campaign-level
marts against the API itself (httpx, independent of the pipeline), and that a reader
holding the BI file open is never blocked by a sync + build and keeps its snapshot.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from test_models_bi import READER
from test_models_marts import check_marts
from test_sync_support import admin_keys, sync_sandbox

from models.build import build
from models.settings import bi_path_for

pytestmark = pytest.mark.timeout(240)


def _api_truth(sandbox: Any, keys: list[str]) -> dict[str, Any]:
    """Campaign stats, recipient counts by status and mailboxes, read straight from the API."""
    stats: dict[str, dict[str, Any]] = {}
    funnel: dict[tuple[str, str], int] = {}
    mailboxes: dict[str, dict[str, Any]] = {}
    for key in keys:
        with httpx.Client(base_url=sandbox.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
            page, campaigns = 1, []
            while True:
                body = api.get("/campaigns", params={"per_page": 100, "page": page}).json()
                campaigns += body["data"]
                if page >= body["meta"]["last_page"]:
                    break
                page += 1
            for campaign in campaigns:
                cid = campaign["id"]
                stats[cid] = api.get(f"/campaigns/{cid}/stats").json()["data"]
                for status in ("pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed"):
                    meta = api.get(f"/campaigns/{cid}/leads", params={"status": status, "per_page": 1}).json()["meta"]
                    if meta["total"]:
                        funnel[(cid, status)] = meta["total"]
            for mailbox in api.get("/email-accounts").json()["data"]:
                mailboxes[mailbox["id"]] = mailbox
    return {"stats": stats, "funnel": funnel, "mailboxes": mailboxes}


def _check_against_api(warehouse: Path, truth: dict[str, Any]) -> None:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        perf = {
            r[0]: r[1:]
            for r in con.execute(
                "select campaign_id, count_recipients, count_sent, count_delivered, count_opened, count_replied, "
                "count_bounced, count_unsubscribed from reporting.campaign_performance"
            ).fetchall()
        }
        variants = {
            (r[0], r[1]): r[2:]
            for r in con.execute(
                "select campaign_id, variant_index, count_sent, count_replied from reporting.variant_performance"
            ).fetchall()
        }
        funnel = {
            (r[0], r[1]): r[2]
            for r in con.execute(
                "select campaign_id, recipient_status, count_recipients from reporting.recipient_funnel"
            ).fetchall()
        }
        health = {
            r[0]: r[1:]
            for r in con.execute(
                "select email_account_id, sent_today, daily_send_limit, reputation_score, is_active "
                "from reporting.mailbox_health"
            ).fetchall()
        }
    finally:
        con.close()
    assert set(perf) == set(truth["stats"])
    for cid, s in truth["stats"].items():
        t = s["totals"]
        assert perf[cid] == (
            t["recipients"],
            t["sent"],
            t["delivered"],
            t["opened"],
            t["replied"],
            t["bounced"],
            t["unsubscribed"],
        ), cid
        for v in s["variants"]:
            assert variants[(cid, v["index"])] == (v["sent"], v["replied"])
    assert funnel == truth["funnel"]
    assert set(health) == set(truth["mailboxes"])
    for mid, m in truth["mailboxes"].items():
        assert health[mid] == (
            m["sent_today"],
            m["daily_send_limit"],
            pytest.approx(m["reputation_score"]),
            m["is_active"],
        )


def test_models_on_synced_sandbox_with_reader_holding_bi_file(make_sandbox: Callable[..., Any], tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="small", rate_limit=0)
    keys = admin_keys(sandbox, level="read")
    assert len(keys) >= 2
    warehouse = tmp_path / "outreach.duckdb"  # the default name: catalog and raw schema are both `outreach`

    sync_sandbox(sandbox, keys, warehouse, "full", tmp_path)
    report = build(warehouse)
    assert report.passed
    check_marts(warehouse)
    _check_against_api(warehouse, _api_truth(sandbox, keys))

    bi = bi_path_for(warehouse)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(bi)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        before = reader.stdout.readline().strip()
        con = duckdb.connect(str(bi), read_only=True)  # and one in this process too
        sent_before = con.execute("select sum(count_sent) from reporting.campaign_performance").fetchall()[0][0]

        sandbox.advance(86_400)  # a simulated day of sends, opens, replies
        sync_sandbox(sandbox, keys, warehouse, "full", tmp_path)  # the sync never touches the BI file
        report = build(warehouse)
        assert report.passed

        assert con.execute("select sum(count_sent) from reporting.campaign_performance").fetchall()[0][0] == sent_before
        con.close()
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == before
        assert reader.wait(timeout=30) == 0
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import duckdb, sys; print(duckdb.connect(sys.argv[1], read_only=True).execute("
            "'select sum(count_sent) from reporting.campaign_performance').fetchall()[0][0])",
            str(bi),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert int(fresh.stdout) > sent_before, "a new connection sees the data of the new sync"
    check_marts(warehouse)
    _check_against_api(warehouse, _api_truth(sandbox, keys))
