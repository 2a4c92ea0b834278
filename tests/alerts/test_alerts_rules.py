"""Every rule opens and resolves, on a small DuckDB warehouse with the columns the rules read (the raw tables
and the staging views' columns, as tables); the incidents' transitions notify once each. The sandbox journey
(test_alerts_sandbox.py) runs the same rules over a real sync and build."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest

from alerts import evaluate, resolve_alert_settings
from alerts.store import incident_id
from pipelines.warehouse.destination import warehouse_target
from tests.alerts_support import Sink, sink

T0 = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)
WS, MB, MB2, CAMP = "ws-1", "mb-1", "mb-2", "c-1"

SCHEMA = """
create schema outreach; create schema reporting;
create table outreach.workspaces (id varchar, name varchar, observed_at timestamptz);
create table outreach.campaigns (id varchar, workspace_id varchar, name varchar, status varchar,
    email_account_ids json, created_at timestamptz, _dlt_valid_to timestamptz);
create table outreach.email_accounts (id varchar, email varchar, _dlt_valid_to timestamptz);
create table outreach.events (event_id varchar, event varchar, created_at timestamptz, workspace_id varchar,
    campaign_id varchar, lead_id varchar, email varchar, reply_type varchar, data json);
create table outreach.sync_runs (workspace_id varchar, workspace_name varchar, ended_at timestamptz, outcome varchar);
create table reporting.stg_campaign_recipients (recipient_id varchar, workspace_id varchar, campaign_id varchar,
    lead_email varchar, current_step bigint, last_sent_at timestamptz, bounced_at timestamptz);
create table reporting.stg_campaign_daily_sends (campaign_id varchar, workspace_id varchar, send_date date,
    count_sent bigint);
create table reporting.stg_campaign_stats (campaign_id varchar, total_pending bigint);
create table reporting.stg_email_account_history (email_account_id varchar, workspace_id varchar,
    mailbox_email varchar, daily_send_limit bigint, sent_today bigint, reputation_score double,
    warmup_health_score double, is_warmup_enabled boolean, is_current boolean, valid_from_at timestamptz,
    valid_to_at timestamptz);
create table reporting.stg_replies (workspace_id varchar, campaign_id varchar, lead_email varchar,
    is_positive boolean, is_read boolean, received_at timestamptz);
create table reporting.reply_classes (reply_type varchar, reply_class varchar);
insert into reporting.reply_classes values ('interested', 'positive'), ('not_interested', 'negative');
"""


class World:
    def __init__(self, path: Path, hook: Sink) -> None:
        self.path, self.hook = path, hook
        self.warehouse = warehouse_target(duckdb_path=path)
        self.settings = resolve_alert_settings(targets=[hook.url], notify_retries=0)

    def sql(self, text: str, params: list[Any] | None = None) -> None:
        with duckdb.connect(str(self.path)) as con:
            con.execute("set TimeZone = 'UTC'")
            con.execute(text, params or [])

    def run(self, rule: str, now: datetime, **overrides: Any) -> dict[str, Any]:
        settings = (
            self.settings
            if not overrides
            else resolve_alert_settings(targets=[self.hook.url], notify_retries=0, **overrides)
        )
        result = evaluate(self.warehouse, settings=settings, only=[rule], now=now)
        assert result.errors == [] and result.evaluated == [rule]
        return {"opened": result.opened, "resolved": result.resolved}

    def state(self, rule: str, subject: str) -> str:
        with duckdb.connect(str(self.path), read_only=True) as con:
            row = con.execute(
                "select state from reporting.alert_incidents where incident_id = ?", [incident_id(rule, subject)]
            ).fetchone()
        return "none" if row is None else str(row[0])


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("set TimeZone = 'UTC'")
        con.execute(SCHEMA)
        con.execute("insert into outreach.workspaces values (?, 'Acme', ?)", [WS, T0])
        con.execute(
            "insert into outreach.campaigns values (?, ?, 'Launch', 'active', ?, ?, null)",
            [CAMP, WS, json.dumps([MB]), T0 - timedelta(days=40)],
        )
        con.execute(
            "insert into outreach.email_accounts values (?, 'ann@acme.test', null), (?, 'bo@acme.test', null)",
            [MB, MB2],
        )
    with sink() as hook:
        yield World(path, hook)


def _sends(w: World, day: datetime, n: int, campaign: str = CAMP) -> None:
    w.sql("insert into reporting.stg_campaign_daily_sends values (?, ?, ?, ?)", [campaign, WS, day.date(), n])


def _recipients(w: World, n: int, bounced: int, at: datetime, campaign: str = CAMP) -> None:
    """`n` recipients last sent to at `at`, the first `bounced` of them bounced 30 s later."""
    w.sql(
        "insert into reporting.stg_campaign_recipients select ? || '-r' || i, ?, ?, 'l' || i || '@x.test', 1, ?, "
        "case when i < ? then ? end from range(?) t(i)",
        [campaign, WS, campaign, at, bounced, at + timedelta(seconds=30), n],
    )


def test_mailbox_bounce_rate_opens_once_and_resolves_when_the_bounces_leave_the_28_day_window(world: World) -> None:
    _sends(world, T0 - timedelta(days=3), 100)
    _recipients(world, 100, 5, T0 - timedelta(days=3))
    first = world.run("mailbox_bounce_rate", T0)
    (opened,) = first["opened"]
    assert (opened["subject_id"], opened["value"], opened["volume"], opened["is_estimate"]) == (MB, 0.05, 100, False)
    assert world.run("mailbox_bounce_rate", T0 + timedelta(hours=1)) == {"opened": [], "resolved": []}
    assert world.hook.titles() == ["[outreach] OPEN mailbox_bounce_rate: mailbox ann@acme.test"]
    later = world.run("mailbox_bounce_rate", T0 + timedelta(days=29))
    assert [i["subject_id"] for i in later["resolved"]] == [MB] and world.state("mailbox_bounce_rate", MB) == "resolved"
    assert world.hook.titles("RESOLVED") == ["[outreach] RESOLVED mailbox_bounce_rate: mailbox ann@acme.test"]


def test_mailbox_bounce_rate_splits_a_shared_campaign_and_prefers_the_mailbox_an_event_names(world: World) -> None:
    world.sql("update outreach.campaigns set email_account_ids = ?", [json.dumps([MB, MB2])])
    _sends(world, T0 - timedelta(days=2), 200)
    _recipients(world, 200, 4, T0 - timedelta(days=2))  # 4 bounces split 2 / 2 over 100 sends each: 2%, not above
    assert world.run("mailbox_bounce_rate", T0)["opened"] == []
    world.sql(
        "insert into outreach.events values ('e1', 'lead.bounced', ?, ?, ?, 'c-1-r10', 'x', null, ?)",
        [T0 - timedelta(days=1), WS, CAMP, json.dumps({"email_account_id": MB2})],
    )
    (opened,) = world.run("mailbox_bounce_rate", T0)["opened"]  # MB2: 2 estimated + 1 named = 3 over 100
    assert (opened["subject_id"], round(opened["value"], 4), opened["is_estimate"]) == (MB2, 0.03, True)


def test_mailbox_bounce_rate_waits_for_20_sends(world: World) -> None:
    _sends(world, T0 - timedelta(days=1), 19)
    _recipients(world, 19, 5, T0 - timedelta(days=1))
    assert world.run("mailbox_bounce_rate", T0)["opened"] == []


def test_campaign_bounce_rate_opens_and_resolves(world: World) -> None:
    _recipients(world, 50, 3, T0 - timedelta(days=5))
    (opened,) = world.run("campaign_bounce_rate", T0)["opened"]
    assert (opened["subject_id"], opened["value"], opened["volume"]) == (CAMP, 0.06, 50)
    assert world.run("campaign_bounce_rate", T0 + timedelta(days=22))["resolved"] == []  # still inside 28 days
    resolved = world.run("campaign_bounce_rate", T0 + timedelta(days=24))["resolved"]
    assert [i["subject_id"] for i in resolved] == [CAMP]


def _history(
    w: World,
    frm: datetime,
    to: datetime | None,
    *,
    score: float = 90,
    health: float = 90,
    warm: bool = True,
    sent: int = 10,
    limit: int = 50,
    mailbox: str = MB,
) -> None:
    w.sql(
        "insert into reporting.stg_email_account_history values (?, ?, 'ann@acme.test', ?, ?, ?, ?, ?, ?, ?, ?)",
        [mailbox, WS, limit, sent, score, health, warm, to is None, frm, to],
    )


def test_mailbox_reputation_drop_opens_within_7_days_and_resolves_after(world: World) -> None:
    _history(world, T0 - timedelta(days=10), T0 - timedelta(days=1), score=95)
    _history(world, T0 - timedelta(days=1), None, score=84)
    (opened,) = world.run("mailbox_reputation_drop", T0)["opened"]
    assert (opened["subject_id"], opened["value"]) == (MB, 11)
    assert [i["subject_id"] for i in world.run("mailbox_reputation_drop", T0 + timedelta(days=7))["resolved"]] == [MB]


def test_warmup_health_low_opens_and_resolves_when_health_recovers(world: World) -> None:
    _history(world, T0 - timedelta(days=1), None, health=72)
    (opened,) = world.run("warmup_health_low", T0)["opened"]
    assert (opened["subject_id"], opened["value"], opened["threshold"]) == (MB, 72, 80)
    world.sql("update reporting.stg_email_account_history set is_current = false, valid_to_at = ?", [T0])
    _history(world, T0, None, health=81)
    assert [i["subject_id"] for i in world.run("warmup_health_low", T0)["resolved"]] == [MB]


def test_mailbox_at_limit_needs_3_days_in_a_row_and_resolves_when_a_day_is_under(world: World) -> None:
    for days_ago, sent in ((3, 50), (2, 50), (1, 50)):
        day = T0 - timedelta(days=days_ago)
        _history(world, day, day + timedelta(hours=1), sent=sent)
    assert world.run("mailbox_at_limit", T0 - timedelta(days=1, minutes=-90))["opened"][0]["value"] == 3
    _history(world, T0, None, sent=12)
    assert [i["subject_id"] for i in world.run("mailbox_at_limit", T0 + timedelta(hours=2))["resolved"]] == [MB]


def test_campaign_stalled_opens_after_48_hours_and_resolves_when_paused(world: World) -> None:
    world.sql("insert into reporting.stg_campaign_stats values (?, 40)", [CAMP])
    _recipients(world, 5, 0, T0 - timedelta(hours=47))
    assert world.run("campaign_stalled", T0)["opened"] == []
    (opened,) = world.run("campaign_stalled", T0 + timedelta(hours=2))["opened"]
    assert opened["subject_id"] == CAMP and opened["value"] >= 48
    world.sql("update outreach.campaigns set status = 'paused'")
    assert [i["subject_id"] for i in world.run("campaign_stalled", T0 + timedelta(hours=3))["resolved"]] == [CAMP]


def test_positive_reply_waiting_from_an_event_alone_and_resolved_once_read(world: World) -> None:
    for email, reply_type in (("Lea@x.test ", " Interested"), ("neg@x.test", "not_interested")):
        world.sql(
            "insert into outreach.events values (?, 'lead.replied', ?, ?, ?, 'lead', ?, ?, '{}')",
            [email, T0, WS, CAMP, email, reply_type],
        )
    assert world.run("positive_reply_waiting", T0 + timedelta(hours=1, minutes=59))["opened"] == []
    (opened,) = world.run("positive_reply_waiting", T0 + timedelta(hours=2))["opened"]
    assert opened["subject_id"] == f"{CAMP}:lea@x.test" and opened["subject_type"] == "reply"
    world.sql("insert into reporting.stg_replies values (?, ?, 'lea@x.test', true, true, ?)", [WS, CAMP, T0])
    (resolved,) = world.run("positive_reply_waiting", T0 + timedelta(hours=3))["resolved"]
    assert resolved["subject_id"] == f"{CAMP}:lea@x.test"


def test_sync_stale_opens_past_twice_the_schedule_and_resolves_after_a_good_sync(world: World) -> None:
    wall = datetime.now(UTC)
    world.sql("insert into outreach.sync_runs values (?, 'Acme', ?, 'ok')", [WS, wall - timedelta(minutes=31)])
    world.sql("insert into outreach.sync_runs values (?, 'Acme', ?, 'failed')", [WS, wall])
    (opened,) = world.run("sync_stale", T0)["opened"]
    assert opened["subject_id"] == WS and opened["value"] > 30
    world.sql("insert into outreach.sync_runs values (?, 'Acme', ?, 'ok')", [WS, datetime.now(UTC)])
    assert [i["subject_id"] for i in world.run("sync_stale", T0)["resolved"]] == [WS]


def test_acknowledged_stays_quiet_and_a_reopened_incident_notifies_again(world: World) -> None:
    from alerts.db import connect
    from alerts.store import acknowledge

    _history(world, T0, None, health=70)
    world.run("warmup_health_low", T0)
    with connect(world.warehouse) as db:
        assert acknowledge(db, incident_id("warmup_health_low", MB))["state"] == "acknowledged"  # type: ignore[index]
    assert world.run("warmup_health_low", T0) == {"opened": [], "resolved": []}
    world.sql("update reporting.stg_email_account_history set warmup_health_score = 90")
    assert len(world.run("warmup_health_low", T0)["resolved"]) == 1
    world.sql("update reporting.stg_email_account_history set warmup_health_score = 60")
    (again,) = world.run("warmup_health_low", T0)["opened"]
    assert again["times_opened"] == 2 and again["incident_id"] == incident_id("warmup_health_low", MB)
    assert len(world.hook.titles("OPEN warmup_health_low")) == 2 and len(world.hook.titles("RESOLVED")) == 1


def test_a_rule_that_fails_leaves_its_incidents_and_says_why_in_one_line(world: World) -> None:
    _history(world, T0, None, health=70)
    world.run("warmup_health_low", T0)
    world.sql("drop table reporting.stg_email_account_history")
    result = evaluate(world.warehouse, settings=world.settings, only=["warmup_health_low"], now=T0)
    assert result.evaluated == [] and len(result.errors) == 1 and "stg_email_account_history" in result.errors[0]
    assert world.state("warmup_health_low", MB) == "open"
