"""Remaining README decisions: scheduling, PATCH of variants, key levels of reply/mailbox changes,
mailbox day roll-over."""

from __future__ import annotations

from typing import Any

import httpx


def _client(sb: Any, level: str = "rw") -> httpx.Client:
    k = next(k for k in sb.keys() if k["level"] == level and k["role"] == "admin")
    return httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {k['key']}"}, timeout=30)


def test_scheduled_campaign_waits_for_scheduled_at(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    c = _client(sb)
    base = {
        "name": "Later",
        "subject_lines": ["s"],
        "email_bodies": ["b"],
        "send_window_start": "00:00",
        "send_window_end": "23:59",
        "send_days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
    }
    r = c.post("/campaigns", json={**base, "schedule_type": "scheduled"})
    assert r.status_code == 422 and "scheduled_at" in r.json()["errors"]
    assert c.post("/campaigns", json={**base, "campaign_type": "blast"}).status_code == 422
    box = c.get("/email-accounts", params={"active": "true"}).json()["data"][0]["id"]
    r = c.post(
        "/campaigns",
        json={
            **base,
            "schedule_type": "scheduled",
            "scheduled_at": "2026-03-13T00:00:00Z",
            "email_account_ids": [box],
            "campaign_type": "nurture",
        },
    )
    d = r.json()["data"]
    assert (d["schedule_type"], d["scheduled_at"], d["campaign_type"]) == (
        "scheduled",
        "2026-03-13T00:00:00Z",
        "nurture",
    )
    lst = c.post("/search/people/import", json={"list_name": "x", "total": 5}).json()["data"]["list_id"]
    c.post(f"/campaigns/{d['id']}/leads", json={"list_id": lst})
    assert c.post(f"/campaigns/{d['id']}/launch").status_code == 200
    sb.advance(86_400)
    assert c.get(f"/campaigns/{d['id']}").json()["data"]["stats"]["sent"] == 0
    sb.advance(3 * 86_400)
    assert c.get(f"/campaigns/{d['id']}").json()["data"]["stats"]["sent"] > 0


def test_patch_subject_lines_keeps_variant_counts(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    c = _client(sb)
    camps = c.get("/campaigns", params={"status": "active", "per_page": 100}).json()["data"]
    camp = max(camps, key=lambda x: len(x["subject_lines"]))
    stats = c.get(f"/campaigns/{camp['id']}/stats").json()["data"]
    used = sum(1 for v in stats["variants"] if v["sent"] > 0)
    assert used > 1  # seed 7 has an A/B test running
    r = c.patch(f"/campaigns/{camp['id']}", json={"subject_lines": ["only one"]})
    assert r.status_code == 422 and "subject_lines" in r.json()["errors"]
    r = c.patch(
        f"/campaigns/{camp['id']}", json={"subject_lines": [f"New {i}" for i in range(len(camp["subject_lines"]))]}
    )
    assert r.status_code == 200
    after = c.get(f"/campaigns/{camp['id']}/stats").json()["data"]
    assert [v["subject"] for v in after["variants"]] == [f"New {i}" for i in range(len(camp["subject_lines"]))]
    assert sum(v["sent"] for v in after["variants"]) == after["totals"]["sent"]


def test_reply_and_mailbox_changes_need_a_writing_key(shared_small_sandbox: Any) -> None:
    read = _client(shared_small_sandbox, "read")
    reply = read.get("/replies").json()["data"][0]["id"]
    box = read.get("/email-accounts").json()["data"][0]["id"]
    assert read.get(f"/replies/{reply}").status_code == 200
    assert read.post(f"/replies/{reply}/read").status_code == 403
    assert read.post(f"/email-accounts/{box}/pause").status_code == 403
    assert read.get("/account").status_code == 200


def test_mailbox_day_rollover_moves_reputation_and_warmup(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    c = _client(sb)
    before = {b["id"]: b for b in c.get("/email-accounts").json()["data"]}
    sb.advance(9 * 3600)  # to 00:00 UTC
    after = {b["id"]: b for b in c.get("/email-accounts").json()["data"]}
    for box_id, b in after.items():
        assert b["sent_today"] == 0
        if b["warmup"]["enabled"]:
            assert b["warmup"]["health_score"] == min(100.0, round(before[box_id]["warmup"]["health_score"] + 0.4, 1))
        assert 40 <= b["reputation_score"] <= 100
    assert any(after[i]["reputation_score"] != before[i]["reputation_score"] for i in after)
