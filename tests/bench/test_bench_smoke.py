"""Smoke test of `python -m bench`: the idle scenario at tiny scale through the real CLI (ours only, to stay fast)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.snapshot import Snapshot

ISSUE_KEYS = {
    "scenario", "scale", "ours_requests", "baseline_requests", "bound_requests", "ours_wall_s",
    "baseline_wall_s", "bound_wall_s", "ours_peak_mb", "truth_ok",
}  # fmt: skip


def test_idle_tiny_prints_the_json_line_and_results(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--scenario",
            "idle",
            "--scale",
            "tiny",
            "--no-baseline",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    assert ISSUE_KEYS <= record.keys()
    assert record["scenario"] == "idle" and record["scale"] == "tiny"
    assert record["truth_ok"] is True and record["ours_ok"] is True
    assert record["baseline_requests"] is None  # --no-baseline
    # Idle: nothing changed, so the bound is the fixed reads plus one replies page.
    assert record["bound"]["changed_campaigns"] == 0 and record["bound"]["recipient_pages"] == 0
    assert record["bound_requests"] == record["bound"]["fixed"] + 1
    assert record["bound"]["new_replies"] == 0 and record["truth_tolerated"] == 0
    assert record["ours_requests"] >= record["bound_requests"]  # nobody beats the bound
    assert record["ours_peak_mb"] > 0 and record["ours_wall_s"] > 0
    table = (tmp_path / "RESULTS.md").read_text()
    assert "| idle | tiny |" in table and "Machine:" in table


def _snapshot(statuses: list[str], replies: int = 0) -> Snapshot:
    from bench.snapshot import RecipientRow, Snapshot

    campaign = {"id": "c1", "name": "C", "status": "active",
                "stats": {"total_leads": len(statuses), "sent": statuses.count("sent"), "opened": 0,
                          "clicked": 0, "replied": 0, "bounced": 0}}  # fmt: skip
    rows = [RecipientRow(id=f"r{i}", key=(f"r{i}@x.io", s, 0, None, None, None, None, None), digest=hash(s))
            for i, s in enumerate(statuses)]  # fmt: skip
    return Snapshot(
        account={"workspace": {"id": "w1", "name": "W"}, "plan": "p", "credits": {"balance": 1},
                 "counts": {"campaigns": 1, "email_accounts": 0, "lists": 0}},
        campaigns=[campaign],
        recipients={"c1": rows},
        stats={"c1": {"totals": {"sent": statuses.count("sent")}, "variants": [], "daily": []}},
        replies=[{"id": f"p{i}"} for i in range(replies)],
    )  # fmt: skip


def test_bound_counts_only_pages_holding_changed_rows() -> None:
    from bench.bound import change_bound

    before = _snapshot(["pending"] * 1000)
    after_statuses = ["pending"] * 1000
    after_statuses[5] = after_statuses[650] = "sent"  # pages 0 and 3 of 5
    after = _snapshot(after_statuses, replies=150)
    bound = change_bound(before, after)
    assert (bound.fixed, bound.stats, bound.recipient_pages, bound.reply_pages) == (3, 1, 2, 2)
    assert bound.requests == 8 and bound.new_replies == 150
    assert change_bound(after, after).requests == 4  # idle: fixed reads + one replies page
    assert change_bound(None, after).recipient_pages == 5  # full: every page


def test_truth_check_catches_a_changed_missing_and_duplicate_row(tmp_path: Path) -> None:
    import duckdb

    from bench.truth import OUR_SPECS, check_table

    spec = next(s for s in OUR_SPECS if s.name == "campaign_recipients")
    snap = _snapshot(["pending", "sent", "sent"])
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("create schema outreach")
    con.execute("create table outreach.campaign_recipients (id varchar, workspace_id varchar, campaign_id varchar,"
                " email varchar, status varchar, current_step bigint, deleted_at timestamptz)")  # fmt: skip
    rows = [("r0", "pending"), ("r1", "sent"), ("r2", "sent")]
    con.executemany("insert into outreach.campaign_recipients values (?, 'w1', 'c1', ? || '@x.io', ?, 0, null)",
                    [(i, i, s) for i, s in rows])  # fmt: skip
    assert check_table(con, spec, snap).ok
    con.execute("update outreach.campaign_recipients set status = 'pending' where id = 'r1'")
    con.execute("delete from outreach.campaign_recipients where id = 'r2'")
    con.execute("insert into outreach.campaign_recipients values ('r0', 'w1', 'c1', 'r0@x.io', 'pending', 0, null)")
    check = check_table(con, spec, snap)
    assert (check.differing, check.missing, check.duplicates, check.ok) == (1, 1, 1, False)
    assert check_table(con, spec, snap, tolerate_campaigns=frozenset({"c1"})).tolerated == 2
    con.close()


def test_a_side_past_the_memory_cap_is_stopped_and_reported(make_sandbox: Any, tmp_path: Path) -> None:
    from bench.sides import run_side

    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = next(k["key"] for k in sb.keys() if k["level"] == "rw")
    run = run_side(sb, side="baseline", mode="full", api_key=key, workdir=tmp_path, memory_cap_mb=40)
    assert not run.ok
    assert run.error is not None and "stopped by the bench (memory cap: 40 MB" in run.error
    assert run.peak_mb > 40 and run.rows == {}


def test_a_child_reports_its_own_peak_not_its_parents() -> None:
    """ru_maxrss would give the child at least the parent's RSS at fork (300 MB here)."""
    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touch every page: resident, not just reserved
    code = "from bench.peak import peak_rss_mb; print(peak_rss_mb())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert 5 < float(out) < 150, out
    del ballast
