"""Sandbox reads over real HTTP: shapes, paging, ordering, auth errors and their documented bodies."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import httpx
import pytest

STATUSES = ("pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed")


def _keys(sb: Any) -> dict[tuple[str, str, int], str]:
    """(level, role, workspace number) -> key."""
    order = list(dict.fromkeys(k["workspace_id"] for k in sb.keys()))
    return {(k["level"], k["role"], order.index(k["workspace_id"])): k["key"] for k in sb.keys()}


def _client(sb: Any, key: str) -> httpx.Client:
    return httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30)


@pytest.fixture(scope="module")
def small(shared_small_sandbox: Any) -> Any:
    return shared_small_sandbox


@pytest.fixture(scope="module")
def rw(small: Any) -> httpx.Client:
    return _client(small, _keys(small)[("rw", "admin", 0)])


def test_keys_contract(small: Any) -> None:
    keys = small.keys()
    workspaces = {k["workspace_id"] for k in keys}
    assert len(workspaces) >= 2
    for ws in workspaces:
        mine = [k for k in keys if k["workspace_id"] == ws]
        assert {(k["level"], k["role"]) for k in mine} >= {("rw", "admin"), ("read", "admin")}
        assert all(k["signing_secret"] for k in mine)
    assert ("rw", "former_admin", 0) in _keys(small)
    assert httpx.get(small.url + "/_sandbox/health").json() == {"data": {"status": "ok"}}


def test_account_shape_and_counts(rw: httpx.Client) -> None:
    data = rw.get("/account").json()["data"]
    assert set(data) == {"workspace", "plan", "credits", "counts"}
    assert data["workspace"]["created_at"].endswith("Z")
    campaigns = rw.get("/campaigns", params={"per_page": 100}).json()
    assert data["counts"]["campaigns"] == campaigns["meta"]["total"]
    assert data["counts"]["email_accounts"] == len(rw.get("/email-accounts").json()["data"])


def test_scale_small_sizes(small: Any) -> None:
    total_campaigns = total_recipients = total_replies = mailboxes = 0
    order = list(dict.fromkeys(k["workspace_id"] for k in small.keys()))
    keys = _keys(small)
    for w in range(len(order)):
        c = _client(small, keys[("rw", "admin", w)])
        camps = c.get("/campaigns", params={"per_page": 100}).json()["data"]
        total_campaigns += len(camps)
        total_recipients += sum(x["stats"]["total_leads"] for x in camps)
        total_replies += c.get("/replies").json()["meta"]["total"]
        mailboxes += len(c.get("/email-accounts").json()["data"])
    assert (total_campaigns, total_recipients, mailboxes) == (12, 3000, 6)
    assert 450 <= total_replies <= 800


def test_campaign_statuses_and_order(rw: httpx.Client) -> None:
    body = rw.get("/campaigns", params={"per_page": 100}).json()
    items = body["data"]
    assert {c["status"] for c in items} == {"draft", "active", "paused", "completed"}
    keys = [(c["created_at"], c["id"]) for c in items]
    for a, b in pairwise(keys):  # newest first by created_at, ties by id
        assert a[0] > b[0] or (a[0] == b[0] and a[1] <= b[1])
    active = rw.get("/campaigns", params={"status": "active"}).json()
    assert active["data"] and all(c["status"] == "active" for c in active["data"])
    page2 = rw.get("/campaigns", params={"per_page": 3, "page": 2}).json()
    assert page2["meta"] == {
        "current_page": 2,
        "last_page": -(-body["meta"]["total"] // 3),
        "total": body["meta"]["total"],
    }
    assert [c["id"] for c in page2["data"]] == [c["id"] for c in items[3:6]]
    beyond = rw.get("/campaigns", params={"page": 99}).json()
    assert beyond["data"] == [] and beyond["meta"]["current_page"] == 99


def test_recipient_paging_stable_and_status_sums(rw: httpx.Client) -> None:
    camp = rw.get("/campaigns", params={"status": "active"}).json()["data"][0]
    cid = camp["id"]
    first = rw.get(f"/campaigns/{cid}/leads", params={"per_page": 200}).json()
    again = rw.get(f"/campaigns/{cid}/leads", params={"per_page": 200}).json()
    assert [r["id"] for r in first["data"]] == [r["id"] for r in again["data"]]
    assert first["meta"]["total"] == camp["stats"]["total_leads"]
    stats = rw.get(f"/campaigns/{cid}/stats").json()["data"]
    by_status = {
        s: rw.get(f"/campaigns/{cid}/leads", params={"status": s, "per_page": 1}).json()["meta"]["total"]
        for s in STATUSES
    }
    assert sum(by_status.values()) == stats["totals"]["recipients"]
    assert by_status["pending"] == stats["totals"]["pending"]
    assert by_status["replied"] == stats["totals"]["replied"] == camp["stats"]["replied"]
    assert by_status["pending"] > 0  # active campaigns still have people to contact
    row = first["data"][0]
    assert set(row) == {
        "id",
        "email",
        "first_name",
        "last_name",
        "company",
        "status",
        "current_step",
        "last_sent_at",
        "opened_at",
        "clicked_at",
        "replied_at",
        "bounced_at",
    }


def test_stats_invariants_every_campaign(rw: httpx.Client) -> None:
    for camp in rw.get("/campaigns", params={"per_page": 100}).json()["data"]:
        s = rw.get(f"/campaigns/{camp['id']}/stats").json()["data"]
        t = s["totals"]
        assert sum(v["sent"] for v in s["variants"]) == t["sent"] == camp["stats"]["sent"]
        assert len(s["daily"]) == 14 and sum(d["sent"] for d in s["daily"]) <= t["sent"]
        assert [v["index"] for v in s["variants"]] == list(range(len(camp["subject_lines"])))
        assert t["delivered"] == t["sent"] - t["bounced"]
        for key in ("opened", "clicked", "replied", "bounced"):
            assert t[key] == camp["stats"][key]
        if camp["status"] == "active":
            assert sum(d["sent"] for d in s["daily"]) > 0


def test_replies_order_filters_and_body(rw: httpx.Client) -> None:
    body = rw.get("/replies", params={"per_page": 100}).json()
    items = body["data"]
    keys = [(r["received_at"], r["id"]) for r in items]
    for a, b in pairwise(keys):
        assert a[0] > b[0] or (a[0] == b[0] and a[1] <= b[1])
    assert "body" not in items[0]
    types = set()
    page = 1
    while True:
        chunk = rw.get("/replies", params={"per_page": 100, "page": page}).json()
        types |= {r["reply_type"] for r in chunk["data"]}
        if page >= chunk["meta"]["last_page"]:
            break
        page += 1
    assert types == {"interested", "not_interested", "out_of_office", "wrong_person", "unsubscribe", "auto_reply"}
    one = rw.get(f"/replies/{items[0]['id']}").json()["data"]
    assert one["body"].startswith(one["snippet"].removesuffix("..."))
    unread = rw.get("/replies", params={"unread": "true", "per_page": 100}).json()
    assert unread["meta"]["total"] < body["meta"]["total"] and all(not r["is_read"] for r in unread["data"])
    cid = items[0]["campaign_id"]
    mine = rw.get("/replies", params={"campaign_id": cid, "per_page": 100}).json()
    assert all(r["campaign_id"] == cid for r in mine["data"])
    replied = rw.get(f"/campaigns/{cid}/leads", params={"status": "replied", "per_page": 200}).json()["data"]
    assert sorted(r["email"] for r in replied) == sorted(r["from"] for r in mine["data"])


def test_mailboxes(rw: httpx.Client) -> None:
    boxes = rw.get("/email-accounts").json()["data"]
    assert {b["provider"] for b in boxes} <= {"google", "microsoft", "smtp"}
    paused = rw.get("/email-accounts", params={"active": "false"}).json()["data"]
    assert paused and all(not b["is_active"] for b in paused)
    assert all(b["sent_today"] <= b["daily_send_limit"] for b in boxes)
    one = rw.get(f"/email-accounts/{boxes[0]['id']}").json()["data"]
    assert one == boxes[0]


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("/campaigns", {"per_page": 101}, "per_page"),
        ("/campaigns", {"status": "running"}, "status"),
        ("/replies", {"per_page": 0}, "per_page"),
        ("/replies", {"unread": "maybe"}, "unread"),
        ("/email-accounts", {"active": "x"}, "active"),
    ],
)
def test_bad_query_is_422_with_field_errors(rw: httpx.Client, path: str, params: dict[str, Any], field: str) -> None:
    r = rw.get(path, params=params)
    assert r.status_code == 422
    assert field in r.json()["errors"] and r.json()["message"]


def test_leads_per_page_limit(rw: httpx.Client) -> None:
    cid = rw.get("/campaigns").json()["data"][0]["id"]
    assert rw.get(f"/campaigns/{cid}/leads", params={"per_page": 201}).status_code == 422
    assert rw.get(f"/campaigns/{cid}/leads", params={"per_page": 200}).status_code == 200
    assert rw.get(f"/campaigns/{cid}/leads").json()["meta"]["total"] >= 0


def test_auth_errors(small: Any, rw: httpx.Client) -> None:
    keys = _keys(small)
    no_key = httpx.get(small.base_url + "/campaigns")
    bad_key = httpx.get(small.base_url + "/campaigns", headers={"Authorization": "Bearer nope"})
    for r in (no_key, bad_key):
        assert r.status_code == 401 and "API key" in r.json()["message"]
    other = _client(small, keys[("rw", "admin", 1)])
    cid = rw.get("/campaigns").json()["data"][0]["id"]
    r = other.get(f"/campaigns/{cid}")
    assert r.status_code == 404 and "not found" in r.json()["message"]
    assert other.get(f"/campaigns/{cid}/leads").status_code == 404
    reply_id = rw.get("/replies").json()["data"][0]["id"]
    assert other.get(f"/replies/{reply_id}").status_code == 404
    read = _client(small, keys[("read", "admin", 0)])
    assert read.get("/campaigns").status_code == 200
    r = read.post("/campaigns", json={"name": "x", "subject_lines": ["a"], "email_bodies": ["b"]})
    assert r.status_code == 403 and "read-only" in r.json()["message"]
    former = _client(small, keys[("rw", "former_admin", 0)])
    assert former.get("/account").status_code == 200
    r = former.post(f"/campaigns/{cid}/pause")
    assert r.status_code == 403 and "no longer" in r.json()["message"]


def test_events_and_sample(rw: httpx.Client) -> None:
    events = rw.get("/hooks/events").json()["data"]
    assert [e["key"] for e in events] == [
        "lead.replied",
        "lead.bounced",
        "lead.unsubscribed",
        "lead.opened",
        "lead.clicked",
        "campaign.completed",
    ]
    sample = rw.get("/hooks/sample").json()["data"][0]
    assert sample["event"] == "lead.replied" and set(sample["data"]) == {"lead_id", "email", "first_name", "company"}
    assert sample["created_at"].endswith("+00:00")
    assert rw.get("/hooks/sample", params={"event": "nope"}).status_code == 422


def test_recipient_page_is_fast(small: Any) -> None:
    """Building a 200-row recipients page takes well under 5 ms server-side (the sandbox is never the bottleneck)."""
    import time

    import numpy as np
    import orjson

    from sandbox import views

    rt = small.app.state.sandbox
    camp = max(rt.state.workspaces[0].campaigns, key=lambda c: len(c.recipients))
    rows = np.arange(200)
    best = float("inf")
    for _ in range(5):  # best of 5 batches: other processes share the CPU
        start = time.perf_counter()
        for _ in range(10):
            orjson.dumps(views.recipients_page(camp, rows, rt.state.directory))
        best = min(best, (time.perf_counter() - start) / 10)
    assert best < 0.005


def test_every_send_is_inside_its_send_window(rw: httpx.Client) -> None:
    """Seeded history respects each campaign's local send days and window (first emails and follow-ups)."""
    from datetime import datetime
    from zoneinfo import ZoneInfo

    days = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
    checked = 0
    for camp in rw.get("/campaigns", params={"per_page": 100}).json()["data"]:
        w = camp["send_window"]
        rows = rw.get(f"/campaigns/{camp['id']}/leads", params={"per_page": 200}).json()["data"]
        for r in rows:
            if not r["last_sent_at"]:
                continue
            local = datetime.fromisoformat(r["last_sent_at"].replace("Z", "+00:00")).astimezone(ZoneInfo(w["timezone"]))
            assert days[local.weekday()] in w["days"], (camp["name"], r["last_sent_at"])
            in_window = w["start"] <= local.strftime("%H:%M") <= w["end"]
            assert in_window or _near_dst(local), (camp["name"], r["last_sent_at"], w)
            checked += 1
    assert checked > 100


def _near_dst(local: Any) -> bool:
    """A follow-up scheduled across a DST change keeps its UTC spacing: up to an hour outside the window."""
    from datetime import timedelta

    return (
        local.utcoffset() != (local - timedelta(days=14)).utcoffset()
        or local.utcoffset() != (local + timedelta(days=14)).utcoffset()
    )
