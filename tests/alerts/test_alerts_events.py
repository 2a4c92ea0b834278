"""Each incident transition is a Prefect event (`outreach.alert.opened` / `.resolved`) with the rule and the
subject as related resources, on a real Prefect test server; without a Prefect API none is sent."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from alerts.notify import EVENT_OPENED, EVENT_RESOLVED, emit_prefect_event

INCIDENT = {
    "incident_id": "ev0123456789",
    "rule": "campaign_stalled",
    "subject_type": "campaign",
    "subject_id": "camp-42",
    "subject_label": "Spring launch",
    "value": 51.0,
    "threshold": 48.0,
    "workspace_id": "ws-1",
    "detail": "12 recipients pending, nothing sent for 51 h",
}


def _events(api: str, name: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        body = {"filter": {"event": {"name": [name]}, "resource": {"id": ["outreach.alert.ev0123456789"]}}}
        found = httpx.post(f"{api}/events/filter", json=body, timeout=10).raise_for_status().json()["events"]
        if found or time.monotonic() > deadline:
            return list(found)
        time.sleep(0.5)


def test_opened_and_resolved_events_carry_the_rule_and_the_subject(prefect_harness: str) -> None:
    from prefect.events.worker import EventsWorker

    assert emit_prefect_event("opened", INCIDENT) and emit_prefect_event("resolved", INCIDENT)
    EventsWorker.drain_all()
    for name in (EVENT_OPENED, EVENT_RESOLVED):
        (event,) = _events(prefect_harness, name)
        assert event["resource"]["outreach.rule"] == "campaign_stalled"
        # Prefect adds the flow and flow run of a run context active where the event is sent (its events worker
        # copies the sender's context), and an earlier test in this process can leave one set: ours are the rule
        # and the subject, whatever ran before
        related = {r["prefect.resource.role"]: r["prefect.resource.id"] for r in event["related"]}
        ours = {role: related.get(role) for role in ("rule", "subject")}
        assert ours == {"rule": "outreach.rule.campaign_stalled", "subject": "outreach.campaign.camp-42"}
        assert set(related) <= {"rule", "subject", "flow", "flow-run"}, related
        assert event["payload"]["value"] == 51.0


def test_without_a_prefect_api_no_event_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: None}):
        assert emit_prefect_event("opened", INCIDENT) is False
