"""Bad records are quarantined, never a reason to delete: the sandbox's `POST /_sandbox/malform` sends a
campaign or a reply with ``"id": null`` in a full sync's listing. The record lands in
``outreach.rejected_records``, nothing of that endpoint (nor downstream of it) is marked deleted, the run
ends non-zero with one line naming the endpoint and the count, and `outreach status` shows it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, api_truth, assert_warehouse_equals_api, query, sandbox_sync_args

from pipelines.source.quarantine import RejectedRecordsError
from pipelines.sync.edge import run_sync

DELETABLE = ("campaign_recipients", "campaign_stats", "campaign_variants", "replies")


def _deleted(db: Path) -> dict[str, int]:
    return {t: query(db, f"select count(*) from outreach.{t} where deleted_at is not null")[0][0] for t in DELETABLE}


def _full(sb: Any, key: str, db: Path, tmp_path: Path) -> Any:
    return run_sync(mode="full", **sandbox_sync_args(sb, [key], db, tmp_path, reply_body_cap=100_000))


def test_a_campaign_without_id_is_rejected_and_deletes_nothing(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    db = tmp_path / "outreach.duckdb"
    _full(sb, key, db, tmp_path)
    truth = api_truth(sb.base_url, key)
    first = next(iter(truth["campaigns"].values()))  # page 1's first record is the one sent without its id
    current = "select count(*) from outreach.campaigns where _dlt_valid_to is null"
    assert query(db, current)[0][0] == len(truth["campaigns"])

    sb.set_malform(null_id=["campaigns"])
    with pytest.raises(RejectedRecordsError) as info:
        _full(sb, key, db, tmp_path)
    line = str(info.value)
    assert "\n" not in line and line.startswith("GET /campaigns: 1 record rejected"), line
    assert first["name"] not in line  # the record's content never reaches the line

    # nothing marked deleted: not the campaign, not its recipients, stats or variants, nothing else either
    assert _deleted(db) == dict.fromkeys(DELETABLE, 0)
    assert query(db, current)[0][0] == len(truth["campaigns"])
    sb.set_malform()
    assert_warehouse_equals_api(db, api_truth(sb.base_url, key))

    rows = query(db, "select workspace_id, endpoint, page, reason, raw, run_id from outreach.rejected_records")
    assert len(rows) == 1
    ws, endpoint, page, reason, raw, run_id = rows[0]
    assert (ws, endpoint, page, reason) == (truth["workspace_id"], "GET /campaigns", 1, "no id (primary key)")
    record = json.loads(raw)
    assert record["id"] is None and record["name"] == first["name"] and record["stats"] == first["stats"]
    runs = query(db, "select outcome, error, rejected from outreach.sync_runs where run_id = ?", run_id)
    assert runs[0][0] == "rejected" and runs[0][1].startswith("GET /campaigns: 1 record rejected")
    assert json.loads(runs[0][2]) == {"GET /campaigns": 1}

    # a clean full sync afterwards: ok, the warehouse equals the API, and still nothing deleted
    report = _full(sb, key, db, tmp_path)
    assert report.rejected() == {} and _deleted(db) == dict.fromkeys(DELETABLE, 0)


def test_a_reply_without_id_fails_the_cli_in_one_line_and_status_shows_it(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    db = tmp_path / "outreach.duckdb"
    exe = Path(sys.executable).with_name("outreach")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0", SOURCES__OUTREACH__REPLY_BODY_CAP="100000")
    sync = [str(exe), "sync", "--mode", "full", "--base-url", sb.base_url, "--api-key", key]
    sync += ["--duckdb", str(db), "--spool", str(tmp_path / "none"), "--no-progress"]
    first = subprocess.run(sync, capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    replies = query(db, "select count(*) from outreach.replies")[0][0]
    assert replies > 0
    newest = api_truth(sb.base_url, key, with_bodies=False)["replies"]
    sent_first = next(iter(newest.values()))  # the newest reply, page 1's first record

    sb.set_malform(null_id=["replies"])
    proc = subprocess.run(sync, capture_output=True, text=True, env=env, timeout=240, cwd=tmp_path)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].count("GET /replies: 1 record rejected") == 1, proc.stderr
    for text in (sent_first["subject"], sent_first["snippet"], sent_first["from"], key):
        assert text not in proc.stderr + proc.stdout  # no record content and no key in any line
    assert _deleted(db) == dict.fromkeys(DELETABLE, 0)  # the real reply is not marked deleted
    assert query(db, "select count(*) from outreach.replies where id = ?", sent_first["id"]) == [(1,)]
    assert query(db, "select endpoint, page from outreach.rejected_records") == [("GET /replies", 1)]

    status = subprocess.run(
        [str(exe), "status", "--duckdb", str(db), "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert status.returncode == 0, status.stderr
    (ws,) = json.loads(status.stdout)["workspaces"]
    assert ws["runs"][0]["outcome"] == "rejected"
    assert ws["last_error"].startswith("GET /replies: 1 record rejected")
    assert replies == query(db, "select count(*) from outreach.replies")[0][0]


def test_secrets_never_reach_the_rejected_record() -> None:
    from pipelines.source.quarantine import REDACTED, rejected_row, rejection

    raw = {"id": None, "name": "C", "webhook": {"signing_secret": "whsec_1", "url": "u"}, "api_key": "sk_1"}
    row = rejected_row("run", "ws", rejection("GET /campaigns", 1, "no id (primary key)", raw))
    stored = json.loads(row["raw"])
    assert stored == {"id": None, "name": "C", "webhook": {"signing_secret": REDACTED, "url": "u"}, "api_key": REDACTED}
    assert "whsec_1" not in row["raw"] and "sk_1" not in row["raw"]
