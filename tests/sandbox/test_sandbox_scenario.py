"""The deliverability scenario's control endpoint: what it changes, named in its answer; bad input is 422."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from sandbox.settings import SandboxSettings


def test_the_endpoint_applies_parts_and_names_what_it_changed(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", workspaces=1, rate_limit=0)
    assert httpx.get(f"{sb.url}/_sandbox/scenario").json()["data"] is None
    rw = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    headers = {"Authorization": f"Bearer {rw['key']}"}
    before = httpx.get(f"{sb.base_url}/replies", params={"unread": "true", "per_page": 100}, headers=headers).json()
    done = sb.apply_scenario("deliverability", parts=["positive_reply"])
    assert done["reply_id"] and "bounce_mailbox_id" not in done and "stalled_campaign_id" not in done
    reply = httpx.get(f"{sb.base_url}/replies/{done['reply_id']}", headers=headers).json()["data"]
    assert (reply["reply_type"], reply["is_read"], reply["campaign_id"]) == (
        "interested",
        False,
        done["reply_campaign_id"],
    )
    after = httpx.get(f"{sb.base_url}/replies", params={"unread": "true", "per_page": 100}, headers=headers).json()
    assert after["meta"]["total"] == before["meta"]["total"] + 1
    assert httpx.get(f"{sb.url}/_sandbox/scenario").json()["data"] == done


@pytest.mark.parametrize(
    "body",
    [{"name": "outage"}, {}, {"name": "deliverability", "parts": ["meteor"]}, {"name": "deliverability", "parts": []}],
)
def test_unknown_scenarios_and_parts_are_422(make_sandbox: Any, body: dict[str, Any]) -> None:
    sb = make_sandbox(scale="tiny", workspaces=1, rate_limit=0)
    response = httpx.post(f"{sb.url}/_sandbox/scenario", json=body)
    assert response.status_code == 422 and response.json()["errors"]


def test_an_unknown_scenario_at_start_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown scenario 'outage': use one of deliverability"):
        SandboxSettings(scenario="outage")
