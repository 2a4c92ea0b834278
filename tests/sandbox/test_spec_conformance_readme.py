"""Does the sandbox do what sandbox/README.md says for the choices the spec leaves "not shown"?

Read from sandbox/README.md only (never the sandbox's code). Each check names the README decision.
Read-only checks use ``shared_small_sandbox``; state-changing ones share one sandbox via subtests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from test_spec_conformance_support import (
    Keys,
    advance,
    all_pages,
    api,
    body_of,
    control_get,
    control_post,
    error_fields,
    fetch_keys,
    ok_data,
    paged,
    random_uuid,
    valid_campaign_body,
)

REPLY_TYPES = {"interested", "not_interested", "out_of_office", "wrong_person", "unsubscribe", "auto_reply"}


@pytest.fixture(scope="module")
def keys(shared_small_sandbox: Any) -> Keys:
    return fetch_keys(shared_small_sandbox)


@pytest.fixture(scope="module")
def client(shared_small_sandbox: Any, keys: Keys) -> Iterator[httpx.Client]:
    with api(shared_small_sandbox, keys.a_rw) as c:
        yield c


def test_enums_and_plans(client: httpx.Client, shared_small_sandbox: Any, keys: Keys) -> None:
    campaigns = [c for page in all_pages(client, "/campaigns", 100) for c in page]
    assert {c["campaign_type"] for c in campaigns} <= {"outbound", "nurture", "reengagement"}
    assert {c["schedule_type"] for c in campaigns} <= {"immediate", "scheduled"}
    assert all(c["scheduled_at"] for c in campaigns if c["schedule_type"] == "scheduled")
    assert {m["provider"] for m in ok_data(client.get("/email-accounts"))} <= {"google", "microsoft", "smtp"}
    replies = ok_data(client.get("/replies", params={"per_page": 100}))
    assert {r["reply_type"] for r in replies} <= REPLY_TYPES
    assert ok_data(client.get("/account"))["plan"] == "growth"
    with api(shared_small_sandbox, keys.b_rw) as b:
        assert ok_data(b.get("/account"))["plan"] == "starter"


def test_counts_follow_from_recipients(client: httpx.Client) -> None:
    """README 'Counts': sent = sum(current_step) = sum(variant sent); statuses count recipients; etc."""
    campaigns = [c for page in all_pages(client, "/campaigns", 100) for c in page]
    target = max(campaigns, key=lambda c: c["stats"]["replied"])
    cid = target["id"]
    recipients = [r for page in all_pages(client, f"/campaigns/{cid}/leads", 200) for r in page]
    stats = ok_data(client.get(f"/campaigns/{cid}/stats"))
    totals = stats["totals"]
    assert totals["sent"] == sum(r["current_step"] for r in recipients) == sum(v["sent"] for v in stats["variants"])
    for status in ("replied", "bounced", "unsubscribed", "pending"):
        assert totals[status] == sum(r["status"] == status for r in recipients), status
    assert totals["opened"] == sum(r["opened_at"] is not None for r in recipients)
    assert totals["clicked"] == sum(r["clicked_at"] is not None for r in recipients)
    assert totals["delivered"] == totals["sent"] - totals["bounced"] and totals["failed"] == 0
    contacted = sum(r["current_step"] > 0 for r in recipients)
    assert abs(stats["rates"]["reply"] - round(100 * totals["replied"] / contacted, 2)) <= 0.01
    assert abs(stats["rates"]["progress"] - round(100 * contacted / len(recipients), 2)) <= 0.01
    _, meta = paged(client.get("/replies", params={"campaign_id": cid, "per_page": 1}))
    assert meta["total"] == totals["replied"], "exactly one reply per replied recipient"


def test_query_validation_and_error_bodies(client: httpx.Client, shared_small_sandbox: Any) -> None:
    cases = [
        ("/campaigns", {"per_page": 0}, {"per_page"}),
        ("/campaigns", {"page": 0}, {"page"}),
        ("/replies", {"unread": "maybe"}, {"unread"}),
        ("/replies", {"campaign_id": random_uuid()}, {"campaign_id"}),
        ("/email-accounts", {"active": "maybe"}, {"active"}),
        ("/search/people", {"company_mode": "current"}, {"company_mode"}),
    ]
    for path, params, fields in cases:
        resp = client.get(path, params=params)
        assert error_fields(resp) == fields, f"{path} {params}: {resp.text[:200]}"
        errors = resp.json()["errors"]
        assert all(isinstance(v, list) and all(isinstance(m, str) for m in v) for v in errors.values())
    with api(shared_small_sandbox, None) as anonymous:
        resp = anonymous.get("/campaigns")
    assert resp.status_code == 401 and resp.headers.get("WWW-Authenticate", "").startswith("Bearer")
    assert isinstance(body_of(resp).get("message"), str)
    for path in ("/campaigns/not-a-uuid", f"/campaigns/{random_uuid()}"):
        resp = client.get(path)
        assert resp.status_code == 404 and isinstance(body_of(resp).get("message"), str), path


def test_people_industries_need_a_growth_plan(shared_small_sandbox: Any, keys: Keys, client: httpx.Client) -> None:
    params = [("industries[]", "Software")]
    ok_data(client.get("/search/people", params=params))
    with api(shared_small_sandbox, keys.b_rw) as b:
        assert error_fields(b.get("/search/people", params=params)) == {"industries"}


def test_hook_sample_has_the_four_fields(client: httpx.Client) -> None:
    sample = ok_data(client.get("/hooks/sample"))[0]
    assert set(sample["data"]) == {"lead_id", "email", "first_name", "company"}


def _blocker_codes(resp: httpx.Response) -> list[str]:
    body = body_of(resp)
    assert resp.status_code == 422 and isinstance(body.get("blockers"), list), resp.text[:300]
    return [b["code"] for b in body["blockers"]]


def test_state_decisions(make_sandbox: Callable[..., Any], subtests: Any) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)  # tiny's first workspace holds no draft
    with subtests.test(msg="the clock starts at 2026-03-10T15:00:00Z"):
        assert advance(sb, 60).startswith("2026-03-10T15:01:00")
    keys = fetch_keys(sb)
    rw = api(sb, keys.a_rw)
    with subtests.test(msg="create defaults"):
        c = ok_data(rw.post("/campaigns", json=valid_campaign_body()), 201)
        assert c["send_window"] == {
            "start": "09:00",
            "end": "17:00",
            "days": ["mon", "tue", "wed", "thu", "fri"],
            "timezone": "UTC",
        }
        assert c["follow_up"] == {"enabled": True, "delay_days": 3, "max": 2} and c["stop_on_reply"] is True
        assert (c["campaign_type"], c["schedule_type"], c["scheduled_at"]) == ("outbound", "immediate", None)
        assert (c.get("delay_between_emails"), c.get("track_opens"), c.get("email_account_ids")) == (120, True, [])
    with subtests.test(msg="window end after start"):
        resp = rw.post("/campaigns", json=valid_campaign_body(send_window_start="17:00", send_window_end="09:00"))
        assert "send_window_end" in error_fields(resp)
    with subtests.test(msg="empty draft: blockers no_recipients, no_mailbox"):
        empty = ok_data(rw.post("/campaigns", json=valid_campaign_body()), 201)
        resp = rw.post(f"/campaigns/{empty['id']}/launch")
        assert _blocker_codes(resp) == ["no_recipients", "no_mailbox"]
        assert set(resp.json()["errors"]) == {"recipients", "email_account_ids"}
        assert error_fields(rw.post(f"/campaigns/{empty['id']}/pause")) == {"status"}, "pause only from active"
        assert error_fields(rw.post(f"/campaigns/{empty['id']}/leads", json={"list_id": random_uuid()}))
    drafts = ok_data(rw.get("/campaigns", params={"status": "draft", "per_page": 100}))
    with subtests.test(msg="the first seeded draft is ready; launch only from draft; resume only from paused"):
        ready = [d for d in drafts if d["stats"]["total_leads"] > 0]
        assert ready, "README: the first draft of a workspace has recipients and mailboxes"
        launched = ok_data(rw.post(f"/campaigns/{ready[0]['id']}/launch"))
        assert launched["status"] == "active"
        again = rw.post(f"/campaigns/{ready[0]['id']}/launch")
        assert _blocker_codes(again)[0] == "not_draft" and "status" in again.json()["errors"]
        assert error_fields(rw.post(f"/campaigns/{ready[0]['id']}/resume")) == {"status"}
    completed = ok_data(rw.get("/campaigns", params={"status": "completed", "per_page": 1}))
    with subtests.test(msg="a completed campaign accepts no change and no leads"):
        assert completed, "small scale seeds a completed campaign"
        cid = completed[0]["id"]
        assert error_fields(rw.patch(f"/campaigns/{cid}", json={"name": "x"})) == {"status"}
        assert error_fields(rw.post(f"/campaigns/{cid}/leads", json={"lead_ids": [random_uuid()]}))
    with subtests.test(msg="403 comes before the id lookup"):
        with api(sb, keys.a_read) as read:
            assert read.patch(f"/campaigns/{random_uuid()}", json={"name": "x"}).status_code == 403
    with subtests.test(msg="subscribe 201, delete 200, unknown 404"):
        sub = rw.post("/hooks", json={"target_url": "https://example.com/x", "event": "lead.clicked"})
        assert sub.status_code == 201
        assert rw.delete(f"/hooks/{sub.json()['id']}").status_code == 200
        assert rw.delete(f"/hooks/{sub.json()['id']}").status_code == 404
    with subtests.test(msg="metrics count by route template"):
        control_post(sb, "metrics/reset", {})
        rw.get(f"/campaigns/{drafts[0]['id']}/leads")
        assert control_get(sb, "metrics")["data"]["by_route"] == {"GET /campaigns/{id}/leads": 1}
    with subtests.test(msg="GET /_sandbox/faults shows the setting; a 429 fault has Retry-After: 1"):
        control_post(sb, "faults", {"error_rate": 1.0, "statuses": [429], "seed": 3})
        shown = control_get(sb, "faults")["data"]
        assert shown["error_rate"] == 1.0 and shown["statuses"] == [429]
        resp = rw.get("/campaigns")
        assert resp.status_code == 429 and resp.headers.get("Retry-After") == "1"
        control_post(sb, "faults", {})
        assert rw.get("/campaigns").status_code == 200
    rw.close()


def test_rate_limit_headers_and_401s_not_counted(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=5)
    keys = fetch_keys(sb)
    with api(sb, None) as anonymous:
        assert all(anonymous.get("/campaigns").status_code == 401 for _ in range(6))
    with api(sb, keys.a_rw) as c:
        remaining = []
        for _ in range(5):
            resp = c.get("/campaigns")
            assert resp.status_code == 200, "401s are not counted against the window"
            assert resp.headers.get("X-RateLimit-Limit") == "5"
            remaining.append(int(resp.headers["X-RateLimit-Remaining"]))
        assert remaining == [4, 3, 2, 1, 0]
        assert c.get("/campaigns").status_code == 429
