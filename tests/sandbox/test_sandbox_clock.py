"""The simulation clock: sends in windows, follow-ups, completion, consistency invariants, determinism."""

from __future__ import annotations

from typing import Any

import httpx

STATUSES = ("pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed")


def _clients(sb: Any) -> list[httpx.Client]:
    keys = [k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin"]
    return [
        httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {k['key']}"}, timeout=60) for k in keys
    ]


def _all(c: httpx.Client, path: str, per_page: int, **params: Any) -> list[dict[str, Any]]:
    out, page = [], 1
    while True:
        body = c.get(path, params={"per_page": per_page, "page": page, **params}).json()
        out += body["data"]
        if page >= body["meta"]["last_page"]:
            return out
        page += 1


def check_invariants(c: httpx.Client, now_day: str) -> None:
    """Every number the API shows agrees with every other."""
    replies = _all(c, "/replies", 100)
    for camp in _all(c, "/campaigns", 100):
        cid = camp["id"]
        s = c.get(f"/campaigns/{cid}/stats").json()["data"]
        t = s["totals"]
        rows = _all(c, f"/campaigns/{cid}/leads", 200)
        counts = {st: sum(1 for r in rows if r["status"] == st) for st in STATUSES}
        assert sum(counts.values()) == t["recipients"] == camp["stats"]["total_leads"] == len(rows)
        for st in ("pending", "replied", "bounced", "unsubscribed"):
            assert counts[st] == t[st], (st, counts[st], t[st])
        assert t["opened"] == sum(1 for r in rows if r["opened_at"]) == camp["stats"]["opened"]
        assert t["clicked"] == sum(1 for r in rows if r["clicked_at"])
        assert sum(v["sent"] for v in s["variants"]) == t["sent"] == camp["stats"]["sent"]
        assert sum(r["current_step"] for r in rows) == t["sent"]  # every step sent is one email
        assert sum(d["sent"] for d in s["daily"]) <= t["sent"]
        assert sum(v["replied"] for v in s["variants"]) == t["replied"]
        mine = {r["from"] for r in replies if r["campaign_id"] == cid}
        assert mine == {r["email"] for r in rows if r["status"] == "replied"}
        assert all(r["last_sent_at"] is None or r["last_sent_at"][:10] <= now_day for r in rows)
        if camp["status"] == "completed":
            assert counts["pending"] == counts["active"] == counts["sent"] == 0
    for box in c.get("/email-accounts").json()["data"]:
        assert 0 <= box["sent_today"] <= box["daily_send_limit"]


def test_advance_day_keeps_invariants_and_sends(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    c = _clients(sb)[0]
    before = {x["id"]: x for x in _all(c, "/campaigns", 100)}
    replies_before = c.get("/replies").json()["meta"]["total"]
    import time

    start = time.perf_counter()
    now = sb.advance(86_400)
    assert time.perf_counter() - start < 2.0
    assert now == "2026-03-11T15:00:00Z"
    after = {x["id"]: x for x in _all(c, "/campaigns", 100)}
    grew = [cid for cid, x in after.items() if x["stats"]["sent"] > before[cid]["stats"]["sent"]]
    assert grew and all(before[cid]["status"] == "active" for cid in grew)
    assert c.get("/replies").json()["meta"]["total"] > replies_before
    for cid, x in after.items():
        if before[cid]["status"] in ("draft", "paused"):
            assert x["stats"]["sent"] == before[cid]["stats"]["sent"]
    check_invariants(c, now[:10])


def test_sent_today_matches_todays_sends_after_midnight(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    c = _clients(sb)[0]
    now = sb.advance(9 * 3600)  # 00:00 UTC next day: counters roll over
    assert now.endswith("T00:00:00Z")
    assert all(b["sent_today"] == 0 for b in c.get("/email-accounts").json()["data"])
    now = sb.advance(15 * 3600)
    total_today = 0
    for camp in _all(c, "/campaigns", 100):
        total_today += sum(
            1 for r in _all(c, f"/campaigns/{camp['id']}/leads", 200) if (r["last_sent_at"] or "")[:10] == now[:10]
        )
    boxes = c.get("/email-accounts").json()["data"]
    assert sum(b["sent_today"] for b in boxes) >= total_today > 0  # follow-ups sent twice today count twice


def test_new_campaign_runs_to_completion(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    c = _clients(sb)[0]
    box = c.get("/email-accounts", params={"active": "true"}).json()["data"][0]["id"]
    cid = c.post(
        "/campaigns",
        json={
            "name": "Sprint",
            "subject_lines": ["A {{first_name|there}}", "B for {{company}}"],
            "email_bodies": ["Hello"],
            "send_days": ["mon", "tue", "wed", "thu", "fri", "sat", "sun"],
            "send_window_start": "00:00",
            "send_window_end": "23:59",
            "delay_between_emails": 30,
            "follow_up_delay_days": 1,
            "max_follow_ups": 1,
            "email_account_ids": [box],
        },
    ).json()["data"]["id"]
    lst = c.post("/search/people/import", json={"list_name": "L", "total": 20, "countries": ["France"]}).json()["data"][
        "list_id"
    ]
    added = c.post(f"/campaigns/{cid}/leads", json={"list_id": lst}).json()["data"]["added"]
    assert added > 0
    assert c.post(f"/campaigns/{cid}/launch").status_code == 200
    sb.advance(86_400)  # the mailbox may be at today's limit: by tomorrow everyone got the first email
    rows = _all(c, f"/campaigns/{cid}/leads", 200)
    assert all(r["current_step"] >= 1 for r in rows) and {r["status"] for r in rows} <= {
        "active",
        "sent",
        "bounced",
        "replied",
        "unsubscribed",
    }
    stats = c.get(f"/campaigns/{cid}/stats").json()["data"]
    assert (
        [v["index"] for v in stats["variants"]] == [0, 1] and all(v["sent"] > 0 for v in stats["variants"]) or added < 4
    )
    c.post(f"/campaigns/{cid}/pause")
    paused_sent = c.get(f"/campaigns/{cid}").json()["data"]["stats"]["sent"]
    sb.advance(2 * 86_400)
    assert c.get(f"/campaigns/{cid}").json()["data"]["stats"]["sent"] == paused_sent  # paused: nothing sent
    c.post(f"/campaigns/{cid}/resume")
    sb.advance(2 * 86_400)
    camp = c.get(f"/campaigns/{cid}").json()["data"]
    assert camp["status"] == "completed"
    rows = _all(c, f"/campaigns/{cid}/leads", 200)
    assert {r["status"] for r in rows} <= {"completed", "replied", "bounced", "unsubscribed"}
    assert max(r["current_step"] for r in rows) == 2  # first email + one follow-up
    for r in rows:
        if r["status"] == "replied" and r["current_step"] == 1:
            assert r["replied_at"] is not None  # stop_on_reply: no follow-up after a reply
    check_invariants(c, "2026-03-16")
    # cooling: the same people cannot be added to another campaign within 30 days
    other = c.post("/campaigns", json={"name": "Again", "subject_lines": ["x"], "email_bodies": ["y"]}).json()["data"][
        "id"
    ]
    res = c.post(f"/campaigns/{other}/leads", json={"list_id": lst}).json()["data"]
    assert res["added"] == 0 and res["cooling"] + res["skipped"] == added


def test_deterministic_for_seed_and_advances(make_sandbox: Any) -> None:
    a = make_sandbox(scale="tiny", rate_limit=0, seed=11)
    b = make_sandbox(scale="tiny", rate_limit=0, seed=11)
    assert [k["key"] for k in a.keys()] == [k["key"] for k in b.keys()]
    for sb in (a, b):
        sb.advance(3 * 3600)
        sb.advance(86_400)
    ca, cb = _clients(a)[0], _clients(b)[0]
    ca.get("/replies")  # reads change nothing
    assert _all(ca, "/campaigns", 100) == _all(cb, "/campaigns", 100)
    assert _all(ca, "/replies", 100) == _all(cb, "/replies", 100)
    other = make_sandbox(scale="tiny", rate_limit=0, seed=12)
    assert _all(_clients(other)[0], "/campaigns", 100) != _all(ca, "/campaigns", 100)


def test_medium_day_is_fast(make_sandbox: Any) -> None:
    import time

    sb = make_sandbox(scale="medium", rate_limit=0)
    start = time.perf_counter()
    sb.advance(86_400)
    assert time.perf_counter() - start < 20


def test_unsubscribes_land_on_the_blacklist(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    c = _clients(sb)[0]
    sb.advance(2 * 86_400)
    gone = []
    for camp in _all(c, "/campaigns", 100):
        gone += [r for r in _all(c, f"/campaigns/{camp['id']}/leads", 200, status="unsubscribed")]
    assert gone
    person = gone[0]
    r = c.post(
        "/search/people/import",
        json={
            "list_name": "Check",
            "q": f"{person['first_name']} {person['last_name']}",
            "companies": [person["company"]],
            "total": 1000,
            "per_company": 1000,
        },
    ).json()["data"]
    assert r["suppressed"] >= 1  # the unsubscribed address is refused on import
