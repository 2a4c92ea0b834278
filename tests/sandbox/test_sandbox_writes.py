"""Sandbox changes over real HTTP: create/update validation, launch blockers, state machines, leads, search."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

VALID = {"name": "Spring push", "subject_lines": ["Hi {{first_name|there}}"], "email_bodies": ["About {{company}}"]}


@pytest.fixture
def env(make_sandbox: Any) -> tuple[Any, httpx.Client]:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = next(k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    return sb, httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


def test_create_defaults_and_validation(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    r = c.post("/campaigns", json=VALID)
    assert r.status_code == 201
    d = r.json()["data"]
    assert d["status"] == "draft" and d["campaign_type"] == "outbound" and d["schedule_type"] == "immediate"
    assert d["send_window"] == {
        "start": "09:00",
        "end": "17:00",
        "days": ["mon", "tue", "wed", "thu", "fri"],
        "timezone": "UTC",
    }
    assert d["follow_up"] == {"enabled": True, "delay_days": 3, "max": 2} and d["stop_on_reply"] is True
    assert d["stats"] == {"total_leads": 0, "sent": 0, "opened": 0, "clicked": 0, "replied": 0, "bounced": 0}
    bad = {
        "subject_lines": ["a"] * 6,
        "email_bodies": [],
        "timezone": "Mars/Base",
        "send_days": ["funday"],
        "send_window_start": "25:00",
        "delay_between_emails": 29,
        "follow_up_delay_days": 61,
        "max_follow_ups": 6,
        "email_account_ids": ["00000000-0000-4000-8000-000000000000"],
        "track_opens": "yes",
    }
    r = c.post("/campaigns", json=bad)
    assert r.status_code == 422
    assert set(r.json()["errors"]) == {"name", *bad}
    assert all(isinstance(v, list) and v for v in r.json()["errors"].values())


def test_patch_rules(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    cid = c.post("/campaigns", json=VALID).json()["data"]["id"]
    r = c.patch(
        f"/campaigns/{cid}", json={"name": "Renamed", "subject_lines": ["A", "B"], "send_window_start": "08:00"}
    )
    assert r.status_code == 200
    d = r.json()["data"]
    assert (d["name"], d["subject_lines"], d["send_window"]["start"]) == ("Renamed", ["A", "B"], "08:00")
    r = c.patch(f"/campaigns/{cid}", json={"send_window_end": "07:00"})
    assert r.status_code == 422 and "send_window_end" in r.json()["errors"]
    completed = c.get("/campaigns", params={"status": "completed"}).json()["data"][0]["id"]
    r = c.patch(f"/campaigns/{completed}", json={"name": "x"})
    assert r.status_code == 422 and "status" in r.json()["errors"]


def test_launch_blockers_and_state_machine(env: tuple[Any, httpx.Client]) -> None:
    sb, c = env
    cid = c.post("/campaigns", json=VALID).json()["data"]["id"]
    r = c.post(f"/campaigns/{cid}/launch")
    assert r.status_code == 422
    codes = [b["code"] for b in r.json()["blockers"]]
    assert codes == ["no_recipients", "no_mailbox"] and set(r.json()["errors"]) == {"recipients", "email_account_ids"}
    list_id = _first_list(c)
    assert c.post(f"/campaigns/{cid}/leads", json={"list_id": list_id}).json()["data"]["added"] > 0
    mailbox = c.get("/email-accounts", params={"active": "true"}).json()["data"][0]["id"]
    c.patch(f"/campaigns/{cid}", json={"email_account_ids": [mailbox]})
    ws = c.get("/account").json()["data"]["workspace"]["id"]
    httpx.post(sb.url + "/_sandbox/credits", json={"workspace_id": ws, "balance": 0})
    r = c.post(f"/campaigns/{cid}/launch")
    assert [b["code"] for b in r.json()["blockers"]] == ["no_credits"]
    httpx.post(sb.url + "/_sandbox/credits", json={"workspace_id": ws, "balance": 500})
    assert c.post(f"/campaigns/{cid}/resume").status_code == 422  # draft cannot resume
    r = c.post(f"/campaigns/{cid}/launch")
    assert r.status_code == 200 and r.json()["data"]["status"] == "active" and r.json()["message"]
    r = c.post(f"/campaigns/{cid}/launch")
    assert r.status_code == 422 and [b["code"] for b in r.json()["blockers"]] == ["not_draft"]
    assert c.post(f"/campaigns/{cid}/pause").json()["data"]["status"] == "paused"
    assert c.post(f"/campaigns/{cid}/pause").status_code == 422
    assert c.post(f"/campaigns/{cid}/resume").json()["data"]["status"] == "active"
    assert c.post(f"/campaigns/{cid}/resume").status_code == 422
    assert c.post("/campaigns/00000000-0000-4000-8000-000000000000/launch").status_code == 404


def _first_list(c: httpx.Client) -> str:
    r = c.post("/search/people/import", json={"list_name": "Managers", "titles": ["Manager"], "total": 40})
    assert r.status_code == 201
    return str(r.json()["data"]["list_id"])


def test_add_leads_sources_and_skips(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    cid = c.post("/campaigns", json=VALID).json()["data"]["id"]
    r = c.post(f"/campaigns/{cid}/leads", json={})
    assert r.status_code == 422 and set(r.json()["errors"]) == {"list_id", "lead_ids"}
    r = c.post(f"/campaigns/{cid}/leads", json={"lead_ids": ["x"], "company": "Acme"})
    assert r.status_code == 422 and "company" in r.json()["errors"]
    r = c.post(f"/campaigns/{cid}/leads", json={"lead_ids": ["x"] * 1001})
    assert r.status_code == 422 and "lead_ids" in r.json()["errors"]
    list_id = _first_list(c)
    filtered = c.post(f"/campaigns/{cid}/leads", json={"list_id": list_id, "job_title": "Sales"}).json()["data"]
    everyone = c.post(f"/campaigns/{cid}/leads", json={"list_id": list_id}).json()["data"]
    assert filtered["added"] > 0 and everyone["skipped"] == filtered["added"]
    assert everyone["total_recipients"] == filtered["added"] + everyone["added"]
    assert c.post(f"/campaigns/{cid}/leads", json={"lead_ids": []}).status_code == 422


def test_search_people_and_import(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    r = c.get("/search/people", params={"titles[]": ["VP"], "countries[]": ["Germany"]})
    body = r.json()["data"]
    assert body["total"] > 0 and len(body["preview"]) <= 25
    assert all("VP" in p["job_title"] and "Germany" in p["location"] for p in body["preview"])
    assert "email" not in body["preview"][0]
    assert c.get("/search/people", params={"seniorities[]": ["boss"]}).status_code == 422
    assert c.get("/search/people", params={"titles[]": [f"t{i}" for i in range(13)]}).status_code == 422
    r = c.post(
        "/search/people/import",
        json={"list_name": "Founders", "seniorities": ["founder"], "total": 30, "per_company": 1},
    )
    d = r.json()["data"]
    assert r.status_code == 201 and d["matched"] == 30
    assert d["matched"] == d["imported"] + d["duplicate"] + d["suppressed"] + d["unsendable"]
    again = c.post(
        "/search/people/import", json={"list_name": "Again", "seniorities": ["founder"], "total": 30, "per_company": 1}
    ).json()["data"]
    assert again["imported"] == 0 and again["duplicate"] == d["imported"]
    assert c.post("/search/people/import", json={"seniorities": ["founder"]}).status_code == 422
    assert c.get("/account").json()["data"]["counts"]["lists"] >= 2


def test_search_companies_and_import(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    body = c.get("/search/companies", params={"sizes[]": ["51-200"], "industries[]": ["Software"]}).json()["data"]
    assert body["total"] > 0 and all(p["size"] == "51-200" and p["industry"] == "Software" for p in body["preview"])
    assert c.get("/search/companies", params={"sizes[]": ["huge"]}).status_code == 422
    r = c.post("/search/companies/import", json={"list_name": "Software cos", "industries": ["Software"], "total": 20})
    d = r.json()["data"]
    assert r.status_code == 201 and d["matched"] == d["imported"] + d["duplicate"] + d["failed"] == 20


def test_plan_limits_people_search_industries(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    order = list(dict.fromkeys(k["workspace_id"] for k in sb.keys()))
    starter_key = next(k["key"] for k in sb.keys() if k["workspace_id"] == order[1] and k["level"] == "rw")
    c = httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {starter_key}"})
    assert c.get("/account").json()["data"]["plan"] == "starter"
    assert c.get("/search/people", params={"industries[]": ["Software"]}).status_code == 422
    r = c.post("/search/people/import", json={"list_name": "big", "total": 5000})
    assert r.json()["data"]["matched"] == 1000  # starter row limit


def test_replies_mark_read_and_mailbox_pause(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    unread = c.get("/replies", params={"unread": "true"}).json()["data"][0]
    r = c.post(f"/replies/{unread['id']}/read")
    assert r.status_code == 200 and r.json()["data"]["is_read"] is True and "body" not in r.json()["data"]
    box = c.get("/email-accounts", params={"active": "true"}).json()["data"][0]["id"]
    assert c.post(f"/email-accounts/{box}/pause").json()["data"]["is_active"] is False
    assert box in [b["id"] for b in c.get("/email-accounts", params={"active": "false"}).json()["data"]]
    assert c.post(f"/email-accounts/{box}/resume").json()["data"]["is_active"] is True
    assert c.post("/email-accounts/nope/pause").status_code == 404


def test_hooks_subscribe_rules(env: tuple[Any, httpx.Client]) -> None:
    _, c = env
    r = c.post("/hooks", json={"target_url": "https://example.com/hook", "event": "lead.replied"})
    assert r.status_code == 201 and set(r.json()) == {"id", "event", "target"}
    hook_id = r.json()["id"]
    r = c.post("/hooks", json={"target_url": "http://127.0.0.1:9/x", "event": "nope"})
    assert r.status_code == 422 and set(r.json()["errors"]) == {
        "target_url",
        "event",
    }  # http refused without --insecure-hooks
    r = c.delete(f"/hooks/{hook_id}")
    assert r.status_code == 200 and set(r.json()) == {"message"}
    assert c.delete(f"/hooks/{hook_id}").status_code == 404
