"""Helpers for the sync tests: the API's truth by independent paging (plain httpx), and the warehouse's view.

No tests here; `test_sync*.py` import it.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import httpx

API_TABLE_KEYS = {
    "campaign_recipients": ("id",),
    "campaign_stats": ("campaign_id",),
    "campaign_variants": ("campaign_id", "index"),
    "campaign_daily_sends": ("campaign_id", "date"),
    "replies": ("id",),
    "webhook_event_types": ("workspace_id", "key"),
    "workspaces": ("id",),
}


def admin_keys(sandbox: Any, level: str = "rw") -> list[str]:
    """One key per workspace: the rw admin key (or the read key with level='read')."""
    out: dict[str, str] = {}
    for k in sandbox.keys():
        if k["level"] == level and k["role"] == "admin":
            out.setdefault(k["workspace_id"], k["key"])
    return list(out.values())


def sync_sandbox(sandbox: Any, keys: list[str], db: Path, mode: str, tmp_path: Path) -> None:
    """One `run_sync` of `mode` into `db`, as `sandbox_sync_args` sets it up, reply bodies capped at 20."""
    from pipelines.sync.edge import run_sync

    run_sync(mode=mode, **sandbox_sync_args(sandbox, keys, db, tmp_path, reply_body_cap=20))


_BODIES: dict[tuple[str, str], Any] = {}


def sandbox_sync_args(sandbox: Any, keys: list[str], db: Path, tmp_path: Path, **overrides: Any) -> dict[str, Any]:
    """`run_sync`'s keyword arguments against a loopback sandbox: no pacing, no spool, no progress display."""
    return {
        "api_keys": keys,
        "base_url": sandbox.base_url,
        "duckdb_path": db,
        "pipelines_dir": tmp_path / "p",
        "spool_dir": tmp_path / "none",
        "progress": False,
        "rate_limit_per_minute": 0,
        **overrides,
    }


def _get_all(http: httpx.Client, path: str, per_page: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    page = 1
    while True:
        body = http.get(path, params={"page": page, "per_page": per_page}).raise_for_status().json()
        items += body["data"]
        if page >= body["meta"]["last_page"]:
            return items
        page += 1


def api_truth(base_url: str, key: str, *, with_bodies: bool = True) -> dict[str, Any]:
    """Everything the API says about one workspace, paged independently of pipelines/."""
    with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as http:
        account = http.get("/account").raise_for_status().json()["data"]
        ws = account["workspace"]["id"]
        campaigns = _get_all(http, "/campaigns", 100)
        recipients: dict[str, dict[str, Any]] = {}
        stats: dict[str, dict[str, Any]] = {}
        for c in campaigns:
            for r in _get_all(http, f"/campaigns/{c['id']}/leads", 200):
                recipients[r["id"]] = {**r, "campaign_id": c["id"]}
            stats[c["id"]] = http.get(f"/campaigns/{c['id']}/stats").raise_for_status().json()["data"]
        replies = {r["id"]: r for r in _get_all(http, "/replies", 100)}
        if with_bodies:  # a reply's body never changes: cache it across calls
            for rid in replies:
                if (base_url, rid) not in _BODIES:
                    _BODIES[(base_url, rid)] = http.get(f"/replies/{rid}").raise_for_status().json()["data"]["body"]
                replies[rid]["body"] = _BODIES[(base_url, rid)]
        mailboxes = http.get("/email-accounts").raise_for_status().json()["data"]
        events = http.get("/hooks/events").raise_for_status().json()["data"]
    return {
        "workspace_id": ws,
        "account": account,
        "campaigns": {c["id"]: c for c in campaigns},
        "recipients": recipients,
        "stats": stats,
        "replies": replies,
        "mailboxes": {m["id"]: m for m in mailboxes},
        "events": {e["key"]: e for e in events},
    }


def query(db: Path | str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """Read the warehouse: a DuckDB file (attached under an alias so a file named outreach.duckdb is
    unambiguous) or a PostgreSQL database given by its libpq URL (``?`` placeholders become ``%s``)."""
    if isinstance(db, str) and db.startswith("postgresql://"):
        import psycopg2

        pg = psycopg2.connect(db)
        try:
            with pg.cursor() as cur:
                cur.execute(sql.replace("?", "%s"), params or None)
                return [tuple(float(v) if isinstance(v, Decimal) else v for v in row) for row in cur.fetchall()]
        finally:
            pg.close()
    con = duckdb.connect()
    con.execute(f"attach '{db}' as wh (read_only)")
    con.execute("use wh")
    try:
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        from datetime import datetime

        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return value.astimezone(__import__("datetime").timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")


def assert_no_duplicates(db: Path | str) -> None:
    for table, key in API_TABLE_KEYS.items():
        cols = ", ".join(f'"{k}"' for k in key)
        dups = query(db, f"select {cols}, count(*) from outreach.{table} group by {cols} having count(*) > 1")
        assert not dups, f"{table}: duplicate keys {dups[:3]}"
    for table in ("campaigns", "email_accounts"):
        dups = query(
            db, f"select id, count(*) from outreach.{table} where _dlt_valid_to is null group by id having count(*) > 1"
        )
        assert not dups, f"{table}: several current rows {dups[:3]}"


def assert_warehouse_equals_api(
    db: Path | str,
    truth: dict[str, Any],
    *,
    skip_stale_campaigns: set[str] = frozenset(),  # type: ignore[assignment]
    check_is_read: bool = True,
    check_bodies: bool = True,
) -> None:
    """Same ids and field values in every table for this workspace (current rows; deleted_at null)."""
    ws = truth["workspace_id"]
    # workspaces
    row = query(db, "select name, plan, credits__balance, counts__campaigns from outreach.workspaces where id = ?", ws)
    acc = truth["account"]
    assert row == [(acc["workspace"]["name"], acc["plan"], acc["credits"]["balance"], acc["counts"]["campaigns"])]
    # campaigns (scd2 current rows)
    rows = query(
        db,
        "select id, name, status, stats__sent, stats__replied, stats__total_leads from outreach.campaigns "
        "where workspace_id = ? and _dlt_valid_to is null",
        ws,
    )
    want = {
        c["id"]: (c["name"], c["status"], c["stats"]["sent"], c["stats"]["replied"], c["stats"]["total_leads"])
        for c in truth["campaigns"].values()
    }
    assert {r[0]: r[1:] for r in rows} == want
    # recipients
    rows = query(
        db,
        "select id, campaign_id, email, status, current_step, last_sent_at, opened_at, replied_at, bounced_at "
        "from outreach.campaign_recipients where workspace_id = ? and deleted_at is null",
        ws,
    )
    got = {r[0]: (r[1], r[2], r[3], r[4], _iso(r[5]), _iso(r[6]), _iso(r[7]), _iso(r[8])) for r in rows}
    want = {
        r["id"]: (
            r["campaign_id"],
            r["email"],
            r["status"],
            r["current_step"],
            _iso(r["last_sent_at"]),
            _iso(r["opened_at"]),
            _iso(r["replied_at"]),
            _iso(r["bounced_at"]),
        )
        for r in truth["recipients"].values()
    }
    got = {k: v for k, v in got.items() if v[0] not in skip_stale_campaigns}
    want = {k: v for k, v in want.items() if v[0] not in skip_stale_campaigns}
    assert got.keys() == want.keys(), f"recipient ids differ: {len(got.keys() ^ want.keys())}"
    bad = [k for k in want if got[k] != want[k]]
    assert not bad, f"{len(bad)} recipients differ, e.g. {got[bad[0]]} != {want[bad[0]]}"
    # stats, variants, daily
    rows = query(
        db,
        "select campaign_id, campaign_status, totals__sent, totals__replied, totals__opened, rates__reply "
        "from outreach.campaign_stats where workspace_id = ? and deleted_at is null",
        ws,
    )
    got_s = {r[0]: r[1:] for r in rows if r[0] not in skip_stale_campaigns}
    want_s = {
        cid: (
            s["campaign"]["status"],
            s["totals"]["sent"],
            s["totals"]["replied"],
            s["totals"]["opened"],
            s["rates"]["reply"],
        )
        for cid, s in truth["stats"].items()
        if cid not in skip_stale_campaigns
    }
    assert got_s == want_s
    rows = query(
        db,
        "select campaign_id, index, subject, sent, replied from outreach.campaign_variants "
        "where workspace_id = ? and deleted_at is null",
        ws,
    )
    got_v = {(r[0], r[1]): r[2:] for r in rows if r[0] not in skip_stale_campaigns}
    want_v = {
        (cid, v["index"]): (v["subject"], v["sent"], v["replied"])
        for cid, s in truth["stats"].items()
        if cid not in skip_stale_campaigns
        for v in s["variants"]
    }
    assert got_v == want_v
    rows = query(
        db,
        "select campaign_id, cast(date as varchar), sent from outreach.campaign_daily_sends where workspace_id = ?",
        ws,
    )
    got_d = {(r[0], r[1]): r[2] for r in rows}
    for cid, s in truth["stats"].items():
        if cid in skip_stale_campaigns:
            continue
        for d in s["daily"]:
            assert got_d.get((cid, d["date"])) == d["sent"], (cid, d)
    # replies
    rows = query(
        db,
        'select id, campaign_id, "from", reply_type, is_read, received_at, body from outreach.replies '
        "where workspace_id = ? and deleted_at is null",
        ws,
    )
    got_r = {r[0]: (r[1], r[2], r[3], r[4] if check_is_read else None, _iso(r[5])) for r in rows}
    want_r = {
        r["id"]: (
            r["campaign_id"],
            r["from"],
            r["reply_type"],
            r["is_read"] if check_is_read else None,
            _iso(r["received_at"]),
        )
        for r in truth["replies"].values()
    }
    assert got_r == want_r
    if check_bodies:
        bodies = {r[0]: r[6] for r in rows}
        assert all(bodies[rid] == rep["body"] for rid, rep in truth["replies"].items()), "reply bodies differ"
    # mailboxes (scd2 current rows)
    rows = query(
        db,
        "select id, email, is_active, sent_today, reputation_score, warmup__health_score from outreach.email_accounts "
        "where workspace_id = ? and _dlt_valid_to is null",
        ws,
    )
    want_m = {
        m["id"]: (
            m["email"],
            m["is_active"],
            m["sent_today"],
            float(m["reputation_score"]),
            float(m["warmup"]["health_score"]),
        )
        for m in truth["mailboxes"].values()
    }
    assert {r[0]: r[1:] for r in rows} == want_m
    keys = {r[0] for r in query(db, "select key from outreach.webhook_event_types where workspace_id = ?", ws)}
    assert keys == set(truth["events"])


def columns_of(db: Path | str, table: str) -> list[str]:
    """Column names of outreach.<table>, in order."""
    if isinstance(db, str):
        rows = query(
            db,
            "select column_name from information_schema.columns where table_schema = 'outreach' "
            "and table_name = ? order by ordinal_position",
            table,
        )
        return [r[0] for r in rows]
    return [r[0] for r in query(db, f"describe outreach.{table}")]


def table_snapshot(db: Path | str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every base table, without bookkeeping columns (_dlt_*, synced_at, and observed_at: the
    service's clock when the workspace was read, which moves with every sync like synced_at)."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in (*API_TABLE_KEYS, "campaigns", "email_accounts"):
        cols = [c for c in columns_of(db, table) if c not in ("_dlt_load_id", "_dlt_id", "synced_at", "observed_at")]
        col_sql = ", ".join(f'"{c}"' for c in cols)
        out[table] = sorted(query(db, f"select {col_sql} from outreach.{table}"), key=repr)
    return out
