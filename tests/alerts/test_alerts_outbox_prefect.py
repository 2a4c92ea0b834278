"""The Prefect event is one more target of the outbox (on a real Prefect test server): emitted once per
transition, never again on later evaluations, and owed, then emitted once, when Prefect did not take it."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_alerts_outbox import IID, World

from alerts import notify
from alerts.notify import EVENT_OPENED
from tests.alerts_support import sink


def _events(api: str, since: datetime, expect: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    """The opened events of the incident since `since`, once `expect` of them arrived (or the timeout)."""
    from prefect.events.worker import EventsWorker

    EventsWorker.drain_all()
    body = {
        "filter": {
            "event": {"name": [EVENT_OPENED]},
            "resource": {"id": [f"outreach.alert.{IID}"]},
            "occurred": {"since": since.isoformat()},
        }
    }
    deadline = time.monotonic() + timeout
    while True:
        found = list(httpx.post(f"{api}/events/filter", json=body, timeout=10).raise_for_status().json()["events"])
        if len(found) >= expect or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_the_prefect_event_is_emitted_once_and_owed_while_prefect_does_not_take_it(
    prefect_harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    since = datetime.now(UTC)
    world = World("duckdb", tmp_path)
    real_emit = notify.emit_prefect_event
    with sink() as hook:
        # Prefect refuses this once: the webhook gets the notification, the event stays owed
        monkeypatch.setattr(notify, "emit_prefect_event", lambda kind, incident: False)
        first = world.run(hook)
        assert (first.notified, first.owed) == (0, 1) and len(hook.received) == 1
        assert world.row()["notify_error"] == "Prefect event: failed: Prefect did not take the event"
        monkeypatch.setattr(notify, "emit_prefect_event", real_emit)

        second = world.run(hook)
        assert (second.notified, second.owed) == (1, 0) and len(hook.received) == 1  # the webhook not again
        assert len(_events(prefect_harness, since, 1)) == 1
        assert world.run(hook).notified == 0
        assert len(_events(prefect_harness, since, 2, timeout=5.0)) == 1  # no second event
