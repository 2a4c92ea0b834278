"""A synthetic raw warehouse that follows pipelines/SCHEMA.md, generated straight into DuckDB.

Used by the model tests (a few thousand recipients, in a second) and by
bench/models_build.py (1M and 10M recipients). Everything is set-based SQL over
`range()` with `hash()` as the random source, so a seed gives the same data and
10M rows need no Python loop. The data keeps the service's invariants: recipient
statuses add up to the campaign totals, variants' sent adds up to the campaign's
sent, every reply belongs to a recipient who replied.
"""

from __future__ import annotations

import logging
from pathlib import Path

import duckdb

log = logging.getLogger(__name__)

#: the generator's statements, one file per step (raw tables, webhook events, workspaces as scd2)
SQL_DIR = Path(__file__).parent / "sql"

#: The fixed "now" of the synthetic data (UTC); campaigns start 20 to 60 days before it.
NOW = "2026-03-02 12:00:00+00"

#: Reply classifications the generator draws from (see models/macros for which count as positive).
REPLY_TYPES = (
    "interested",
    "meeting_booked",
    "not_interested",
    "out_of_office",
    "wrong_person",
    "unsubscribe",
    "auto_reply",
)

WEBHOOK_EVENTS = (
    ("lead.replied", "A recipient replied"),
    ("lead.bounced", "A message hard-bounced"),
    ("lead.unsubscribed", "A recipient unsubscribed"),
    ("lead.opened", "A recipient opened a message"),
    ("lead.clicked", "A recipient clicked a link"),
    ("campaign.completed", "A campaign finished sending"),
)


def make_raw_warehouse(
    duckdb_path: str | Path,
    *,
    recipients: int = 3000,
    campaigns: int | None = None,
    workspaces: int = 2,
    mailboxes_per_workspace: int = 3,
    seed: int = 7,
    include_events: bool = True,
    workspace_history: bool = False,
    memory_limit: str | None = None,
) -> Path:
    """Create (or replace) the raw `outreach` schema in `duckdb_path` and return the path.

    `campaigns` defaults to one per 250 recipients (at least 6, at most 500). `include_events`: webhook
    events (replies, opens, clicks, bounces, unsubscribes) for a share of the recipients.
    `workspace_history`: `workspaces` as an scd2 history (a version per day over the last 20 days, the
    credit balance falling with the day's sends, one top-up) instead of one merged row per workspace.
    """
    path = Path(duckdb_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    n_campaigns = campaigns or max(6, min(500, recipients // 250))
    n_leads = max(1, int(recipients * 0.8))
    if n_leads % n_campaigns == 0:
        n_leads -= 1  # a lead must never land twice in one campaign (i and i + n_leads)
    params = {
        "seed": seed,
        "now": NOW,
        "n_ws": workspaces,
        "n_camp": n_campaigns,
        "n_rec": recipients,
        "n_leads": max(1, n_leads),
        "n_mb": mailboxes_per_workspace,
    }
    # attached under another name: in `outreach.duckdb` the name `outreach.x` would be ambiguous
    con = duckdb.connect()
    try:
        con.execute(f"set temp_directory = '{str(path).replace(chr(39), chr(39) * 2)}.tmp'")
        con.execute(f"attach '{str(path).replace(chr(39), chr(39) * 2)}' as warehouse")
        con.execute("use warehouse")
        con.execute("set enable_progress_bar = false")
        con.execute("set TimeZone = 'UTC'")
        if memory_limit:
            con.execute(f"set memory_limit = '{memory_limit}'")
        con.execute("drop schema if exists outreach cascade")
        con.execute("create schema outreach")
        con.execute(
            "create or replace temp macro fake_uuid(s) as "
            "substr(md5(s), 1, 8) || '-' || substr(md5(s), 9, 4) || '-4' || substr(md5(s), 14, 3)"
            " || '-a' || substr(md5(s), 18, 3) || '-' || substr(md5(s), 21, 12)"
        )
        con.execute("create or replace temp macro rnd(i, tag) as (hash(i, tag, getvariable('seed')) % 1000)::bigint")
        for name, value in params.items():
            con.execute(f"set variable {name} = ?", [value])
        con.execute("set variable reply_types = ?", [list(REPLY_TYPES)])
        con.execute(_sql("synthetic_raw"))
        con.execute(
            "insert into outreach.webhook_event_types select e.key, e.label, w.id, '1.1', fake_uuid(w.id || e.key) "
            "from outreach.workspaces w, (select unnest(?) as key, unnest(?) as label) e",
            [[k for k, _ in WEBHOOK_EVENTS], [label for _, label in WEBHOOK_EVENTS]],
        )
        if include_events:
            con.execute(_sql("synthetic_events"))
        if workspace_history:
            con.execute(_sql("synthetic_workspace_history"))
        # dlt's own table of loads: every row above came with the one load '1.1' (bench/models_incremental.py
        # adds a load per simulated quick sync, as dlt would)
        con.execute(
            "create table outreach._dlt_loads as select '1.1' as load_id, 'outreach' as schema_name, "
            "0::bigint as status, getvariable('now')::timestamptz as inserted_at, 'synthetic' as schema_version_hash"
        )
        con.execute("checkpoint warehouse")
    finally:
        con.close()
    log.info("synthetic warehouse: %s recipients, %s campaigns at %s", recipients, n_campaigns, path)
    return path


def _sql(name: str) -> str:
    return (SQL_DIR / f"{name}.sql").read_text()
