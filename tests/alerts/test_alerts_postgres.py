"""Alerts on a real PostgreSQL warehouse, as on DuckDB: the deliverability scenario synced into PostgreSQL and
built with `outreach models --destination postgres` opens exactly one `mailbox_bounce_rate` incident and sends
one notification to a local JSON webhook; a second build sends none; 29 sandbox days later exactly one resolve
arrives (`campaign_bounce_rate` opens and resolves too). `outreach alerts --json`, `alerts ack`, the guard's
audit table and speed to lead from webhook events run there too; the dbt test `alert_incidents_one_open` bites
on PostgreSQL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from typer.testing import CliRunner

from alerts.db import connect
from alerts.store import TABLE, ensure_table
from flows.cli import app
from models.dbt_invoke import invoke
from models.settings import resolve_target
from pipelines.sync.edge import run_sync
from pipelines.warehouse.destination import warehouse_target
from receiver.server import ReceiverServer
from tests.alerts_support import sink

pytestmark = pytest.mark.timeout(1500)
DAY = 86_400
PG = ("--destination", "postgres")


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def _query(dsn: str, sql: str) -> list[dict[str, Any]]:
    con = psycopg2.connect(dsn)
    try:
        with con.cursor() as cur:
            cur.execute(sql)
            names = [d[0] for d in cur.description or []]
            return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


def _incidents(dsn: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["rule"], r["subject_id"]): r for r in _query(dsn, f"select * from {TABLE}")}


def _api(sb: Any, key: str, method: str, path: str, **kw: Any) -> Any:
    response = sb.http.request(method, sb.base_url + path, headers={"Authorization": f"Bearer {key}"}, **kw)
    response.raise_for_status()
    return response.json()


def test_deliverability_on_postgres_opens_notifies_once_and_resolves(
    make_sandbox: Any, pg_dsn: str, pg_credentials: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = make_sandbox(scale="tiny", workspaces=1, rate_limit=0, insecure_hooks=True, scenario="deliverability")
    scenario = sb.app.state.sandbox.scenario
    rw = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    mailbox, campaign = scenario["bounce_mailbox_id"], scenario["bounce_campaign_ids"][0]
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    monkeypatch.setenv("SOURCES__OUTREACH__BASE_URL", sb.base_url)
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", json.dumps([rw["key"]]))
    monkeypatch.setenv("SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE", "0")
    monkeypatch.setenv("SOURCES__OUTREACH__PIPELINES_DIR", str(tmp_path / "p"))

    def sync() -> None:
        run_sync(mode="full", destination="postgres", spool_dir=tmp_path / "none", progress=False)

    with sink() as hook:
        monkeypatch.setenv("ALERTS__TARGETS", json.dumps([hook.url]))
        sync()
        out = _cli("models", *PG).output
        assert "alerts: not evaluated" not in out and "alerts: " in out, out
        assert "(8 rules)" in out and "rules that failed" not in out, out  # every rule's SQL ran on PostgreSQL

        found = _incidents(pg_dsn)
        bounce = [i for (rule, _), i in found.items() if rule == "mailbox_bounce_rate"]
        assert [(i["subject_id"], i["state"]) for i in bounce] == [(mailbox, "open")]
        assert bounce[0]["value"] > 0.02 and bounce[0]["volume"] >= 20
        assert len(hook.titles("OPEN mailbox_bounce_rate")) == 1
        assert found[("campaign_bounce_rate", campaign)]["state"] == "open"
        assert found[("warmup_health_low", scenario["warmup_mailbox_id"])]["value"] == 72.0
        assert len(hook.received) == len(found)  # one notification per incident
        assert all(i["notified_open_at"] is not None and i["notify_attempts"] == 1 for i in found.values())

        before = len(hook.received)
        _cli("models", *PG)  # a second build notifies nothing
        assert len(hook.received) == before
        listed = json.loads(_cli("alerts", "--json", *PG).output)
        assert {i["incident_id"] for i in listed} == {i["incident_id"] for i in found.values()}
        assert {i["notified"] for i in listed} == {"yes"}
        warm = found[("warmup_health_low", scenario["warmup_mailbox_id"])]["incident_id"]
        assert "acknowledged" in _cli("alerts", "ack", warm, *PG).output
        assert _incidents(pg_dsn)[("warmup_health_low", scenario["warmup_mailbox_id"])]["state"] == "acknowledged"

        # the guard's audit table on PostgreSQL
        monkeypatch.setenv("ALERTS__AUTO_PAUSE", "true")
        monkeypatch.setenv("ALERTS__MAX_PAUSES_PER_RUN", "1")
        out = _cli("alerts", "guard", *PG).output
        assert f"paused mailbox {scenario['bounce_mailbox_email']}" in out, out
        assert _api(sb, rw["key"], "GET", f"/email-accounts/{mailbox}")["data"]["is_active"] is False
        actions = _query(pg_dsn, "select subject_id, rule, outcome from outreach.guard_actions")
        assert actions == [{"subject_id": mailbox, "rule": "mailbox_bounce_rate", "outcome": "paused"}]
        monkeypatch.delenv("ALERTS__AUTO_PAUSE")

        # speed to lead: a positive reply delivered by webhook opens its incident 2 h later, with no sync
        with ReceiverServer(
            signing_secret={rw["workspace_id"]: rw["signing_secret"]}, spool_dir=tmp_path / "spool"
        ) as rc:
            _api(sb, rw["key"], "POST", "/hooks", json={"target_url": rc.url, "event": "lead.replied"})
            fresh = sb.apply_scenario("deliverability", parts=["positive_reply"])
            sb.advance(2 * 3600 + 600)
            sb.wait_deliveries()
            out = _cli("alerts", "replies", "--spool", str(tmp_path / "spool"), *PG).output
        lead = f"{fresh['reply_campaign_id']}:{fresh['reply_lead_email']}"
        assert _incidents(pg_dsn)[("positive_reply_waiting", lead)]["state"] == "open", out
        assert len(hook.titles(f"OPEN positive_reply_waiting: reply {fresh['reply_lead_email']}")) == 1

        # 29 days on, the bounces have left the window: exactly one resolve of the mailbox's incident
        sb.advance(29 * DAY)
        sync()
        out = _cli("models", *PG).output
        assert "(8 rules)" in out and "rules that failed" not in out, out  # the events' JSON payload included
        found = _incidents(pg_dsn)
        assert found[("mailbox_bounce_rate", mailbox)]["state"] == "resolved"
        assert found[("campaign_bounce_rate", campaign)]["state"] == "resolved"
        assert len(hook.titles("RESOLVED mailbox_bounce_rate")) == 1
        assert len(hook.titles("RESOLVED campaign_bounce_rate")) == 1
        assert all(i["notified_resolved_at"] is not None for i in found.values() if i["state"] == "resolved")
        assert len(hook.titles("RESOLVED")) == sum(1 for i in found.values() if i["state"] == "resolved")


ROW = f"insert into {TABLE} (incident_id, rule, subject_type, subject_id, state, opened_at) values (?, ?, ?, ?, ?, ?)"


def test_the_dbt_test_alert_incidents_one_open_bites_on_postgres(
    pg_dsn: str, pg_credentials: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    warehouse = warehouse_target(destination="postgres")
    now = datetime(2026, 3, 10, tzinfo=UTC)
    with connect(warehouse) as db:
        ensure_table(db)
        db.execute(ROW, ["a", "sync_stale", "workspace", "ws-1", "open", now])
        db.execute(ROW, ["b", "sync_stale", "workspace", "ws-1", "resolved", now])

    def status() -> tuple[str, object]:
        outcome = invoke(["test", "--select", "alert_incidents_one_open"], resolve_target(None, "postgres"))
        (result,) = [r for r in outcome.results if r.node.name == "alert_incidents_one_open"]
        return str(result.status), result.failures

    assert status() == ("pass", 0)
    with connect(warehouse) as db:
        db.execute(ROW, ["c", "sync_stale", "workspace", "ws-1", "open", now])
    assert status() == ("fail", 1)
