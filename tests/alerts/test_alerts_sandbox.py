"""The deliverability scenario end to end: sync, `outreach models` (rules after the build), notifications to a
local JSON webhook, the guard, speed to lead from webhook events alone, and every sandbox-driven rule opening and
then resolving as the sandbox clock moves on. One journey: each model build takes a minute on a shared machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipelines.sync.edge import run_sync
from receiver.server import ReceiverServer
from tests.alerts_support import sink
from tests.test_sync_support import sandbox_sync_args

DAY = 86_400


def _cli(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def _incidents(db: Path) -> dict[tuple[str, str], dict[str, Any]]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute("select * from reporting.alert_incidents")
        names = [d[0] for d in cur.description]
        return {(r[1], r[4]): dict(zip(names, r, strict=True)) for r in cur.fetchall()}


def _api(sb: Any, key: str, method: str, path: str, **kw: Any) -> Any:
    response = sb.http.request(method, sb.base_url + path, headers={"Authorization": f"Bearer {key}"}, **kw)
    response.raise_for_status()
    return response.json()


@pytest.mark.timeout(1500)
def test_deliverability_scenario_opens_notifies_once_guards_and_resolves(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = make_sandbox(scale="tiny", workspaces=1, rate_limit=0, insecure_hooks=True, scenario="deliverability")
    scenario = sb.app.state.sandbox.scenario
    keys = sb.keys()
    rw = next(k for k in keys if k["level"] == "rw" and k["role"] == "admin")
    read = next(k for k in keys if k["level"] == "read")
    db = tmp_path / "w.duckdb"
    mailbox = scenario["bounce_mailbox_id"]
    monkeypatch.setenv("SOURCES__OUTREACH__BASE_URL", sb.base_url)
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", json.dumps([rw["key"]]))
    monkeypatch.setenv("SOURCES__OUTREACH__DUCKDB_PATH", str(db))
    monkeypatch.setenv("SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE", "0")
    monkeypatch.setenv("SOURCES__OUTREACH__PIPELINES_DIR", str(tmp_path / "p"))
    sync_args = sandbox_sync_args(sb, [rw["key"]], db, tmp_path)

    with sink() as hook:
        monkeypatch.setenv("ALERTS__TARGETS", json.dumps([hook.url]))
        run_sync(mode="full", **sync_args)
        _cli("models", "--duckdb", str(db))

        # exactly one mailbox_bounce_rate incident, for the damaged mailbox, and one notification of it
        found = _incidents(db)
        bounce = [i for (rule, _), i in found.items() if rule == "mailbox_bounce_rate"]
        assert [(i["subject_id"], i["state"]) for i in bounce] == [(mailbox, "open")]
        assert bounce[0]["value"] > 0.02 and bounce[0]["volume"] >= 20
        assert len(hook.titles("OPEN mailbox_bounce_rate")) == 1
        assert ("campaign_bounce_rate", scenario["bounce_campaign_ids"][0]) in found
        assert found[("warmup_health_low", scenario["warmup_mailbox_id"])]["value"] == 72.0
        assert len(hook.received) == len(found)  # one notification per incident, none twice
        assert all(i["notified_open"].endswith(": sent") for i in found.values())
        report = tmp_path / "report.html"
        _cli("report", "--duckdb", str(db), "--out", str(report))
        page = report.read_text()
        assert page.index('id="card-alerts"') < page.index('id="card-kpi"') and "mailbox_bounce_rate" in page

        # a second build notifies nothing
        before = len(hook.received)
        _cli("models", "--duckdb", str(db))
        assert len(hook.received) == before
        listed = json.loads(_cli("alerts", "--json", "--duckdb", str(db)).output)
        assert {i["incident_id"] for i in listed} == {i["incident_id"] for i in found.values()}

        # the guard: read-only key -> one line; dry run -> nothing changes; then it pauses, once
        monkeypatch.setenv("ALERTS__AUTO_PAUSE", "true")
        monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", json.dumps([read["key"]]))
        out = _cli("alerts", "guard", "--duckdb", str(db)).output
        assert sum("needs a read-write key" in line for line in out.splitlines()) == 1, out
        monkeypatch.setenv("SOURCES__OUTREACH__API_KEYS", json.dumps([rw["key"]]))
        out = _cli("alerts", "guard", "--dry-run", "--duckdb", str(db)).output
        assert f"would pause mailbox {scenario['bounce_mailbox_email']}" in out
        assert _api(sb, rw["key"], "GET", f"/email-accounts/{mailbox}")["data"]["is_active"] is True
        monkeypatch.setenv("ALERTS__MAX_PAUSES_PER_RUN", "1")
        out = _cli("alerts", "guard", "--duckdb", str(db)).output
        assert f"paused mailbox {scenario['bounce_mailbox_email']}" in out and "more left for the next run" in out
        assert _api(sb, rw["key"], "GET", f"/email-accounts/{mailbox}")["data"]["is_active"] is False
        with duckdb.connect(str(db), read_only=True) as con:
            actions = con.execute("select subject_id, rule, outcome from outreach.guard_actions").fetchall()
        assert (mailbox, "mailbox_bounce_rate", "paused") in actions
        assert any(o.startswith("failed: the key cannot make changes") for _, _, o in actions)
        monkeypatch.delenv("ALERTS__AUTO_PAUSE")
        monkeypatch.delenv("ALERTS__MAX_PAUSES_PER_RUN")

        # speed to lead: a positive reply delivered by webhook opens its incident 2 h later, with no sync
        with ReceiverServer(
            signing_secret={rw["workspace_id"]: rw["signing_secret"]}, spool_dir=tmp_path / "spool"
        ) as rc:
            _api(sb, rw["key"], "POST", "/hooks", json={"target_url": rc.url, "event": "lead.replied"})
            fresh = sb.apply_scenario("deliverability", parts=["positive_reply"])
            sb.wait_deliveries()
            lead = f"{fresh['reply_campaign_id']}:{fresh['reply_lead_email']}"
            _cli("alerts", "replies", "--spool", str(tmp_path / "spool"), "--duckdb", str(db))
            assert ("positive_reply_waiting", lead) not in _incidents(db)  # not yet 2 h
            sb.advance(2 * 3600 + 600)
            sb.wait_deliveries()
            out = _cli("alerts", "replies", "--spool", str(tmp_path / "spool"), "--duckdb", str(db)).output
        assert _incidents(db)[("positive_reply_waiting", lead)]["state"] == "open", out
        assert len(hook.titles(f"OPEN positive_reply_waiting: reply {fresh['reply_lead_email']}")) == 1

        # three days on: the stall, the reputation drop and the first reply's wait are seen
        sb.advance(3 * DAY)
        run_sync(mode="full", **sync_args)
        _cli("models", "--duckdb", str(db))
        found = _incidents(db)
        first_lead = f"{scenario['reply_campaign_id']}:{scenario['reply_lead_email']}"
        for key in [
            ("campaign_stalled", scenario["stalled_campaign_id"]),
            ("mailbox_reputation_drop", scenario["reputation_mailbox_id"]),
            ("positive_reply_waiting", first_lead),
        ]:
            assert found[key]["state"] == "open", key

        # the user acts: reads both replies, pauses the stalled campaign; 29 days later everything resolves
        for reply_id in (scenario["reply_id"], fresh["reply_id"]):
            _api(sb, rw["key"], "POST", f"/replies/{reply_id}/read")
        _api(sb, rw["key"], "POST", f"/campaigns/{scenario['stalled_campaign_id']}/pause")
        resolved_before = len(hook.titles("RESOLVED mailbox_bounce_rate"))
        sb.advance(29 * DAY)
        run_sync(mode="full", **sync_args)
        _cli("models", "--duckdb", str(db))
        found = _incidents(db)
        assert resolved_before == 0 and len(hook.titles("RESOLVED mailbox_bounce_rate")) == 1
        for key in [
            ("mailbox_bounce_rate", mailbox),
            ("campaign_bounce_rate", scenario["bounce_campaign_ids"][0]),
            ("campaign_stalled", scenario["stalled_campaign_id"]),
            ("mailbox_reputation_drop", scenario["reputation_mailbox_id"]),
            ("warmup_health_low", scenario["warmup_mailbox_id"]),
            ("positive_reply_waiting", first_lead),
            ("positive_reply_waiting", lead),
        ]:
            assert found[key]["state"] == "resolved", (key, found[key])
            assert found[key]["notified_resolve"].endswith(": sent")
        assert len(hook.titles("RESOLVED")) == sum(1 for i in found.values() if i["state"] == "resolved")
