"""Independent spec-conformance check of the sandbox: read endpoints, shapes, paging, orders.

Written from the API's interface description (parts 2, 4, 8) and the control-plane contract in DESIGN.md,
without reading the sandbox's code. Read-only checks use ``shared_small_sandbox`` and never change
its state. Errors live in test_spec_conformance_errors.py, state changes in *_writes.py, the
control plane in *_control.py and webhook delivery in *_delivery.py.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import date, timedelta
from itertools import pairwise
from typing import Any

import httpx
import pytest
from test_spec_conformance_support import (
    CAMPAIGN_SHAPE,
    CAMPAIGN_STATUSES,
    COMPANY_PREVIEW_SHAPE,
    COMPANY_SIZES,
    DAILY_SHAPE,
    EVENT_KEYS,
    MAILBOX_SHAPE,
    PERSON_PREVIEW_SHAPE,
    RECIPIENT_SHAPE,
    RECIPIENT_STATUSES,
    REPLY_SHAPE,
    STATS_SHAPE,
    VARIANT_SHAPE,
    WORKSPACE_SHAPE,
    Keys,
    all_pages,
    api,
    assert_shape,
    control_get,
    fetch_keys,
    is_str,
    is_uuid,
    ok_data,
    paged,
    parse_timestamp,
)


@pytest.fixture(scope="module")
def keys(shared_small_sandbox: Any) -> Keys:
    return fetch_keys(shared_small_sandbox)


@pytest.fixture(scope="module")
def client(shared_small_sandbox: Any, keys: Keys) -> Iterator[httpx.Client]:
    with api(shared_small_sandbox, keys.a_rw) as c:
        yield c


@pytest.fixture(scope="module")
def campaigns(client: httpx.Client) -> list[dict[str, Any]]:
    return [c for page in all_pages(client, "/campaigns", 100) for c in page]


@pytest.fixture(scope="module")
def busiest_campaign(campaigns: list[dict[str, Any]]) -> dict[str, Any]:
    """The campaign with the most recipients (small has ~3,000 over 12 campaigns)."""
    return max(campaigns, key=lambda c: (c["stats"]["total_leads"], c["stats"]["sent"]))


# ---------------------------------------------------------------- control plane (read-only part)


def test_health_is_ok(shared_small_sandbox: Any) -> None:
    assert control_get(shared_small_sandbox, "health") == {"data": {"status": "ok"}}


def test_keys_meet_the_contract(keys: Keys) -> None:
    assert len(keys.workspaces) >= 2, "contract: at least two workspaces"
    first = keys.workspaces[0]
    keys.pick(first, "read")  # one read-only key in the first workspace
    keys.pick(first, "rw", "former_admin")  # one former-admin rw key in the first workspace
    for ws in keys.workspaces:
        keys.pick(ws, "rw")
        keys.pick(ws, "read")
        secrets = {k.signing_secret for k in keys.all if k.workspace_id == ws}
        assert len(secrets) == 1 and "" not in secrets, f"workspace {ws}: one non-empty signing_secret expected"
        names = {k.workspace_name for k in keys.all if k.workspace_id == ws}
        assert len(names) == 1 and "" not in names
    assert len({k.key for k in keys.all}) == len(keys.all), "keys must be distinct"
    assert all(is_uuid(ws) for ws in keys.workspaces), "workspace ids are uuids (part 2)"


def test_base_url_ends_in_api_v1(shared_small_sandbox: Any) -> None:
    assert str(shared_small_sandbox.base_url).rstrip("/").endswith("/api/v1"), "part 9: base_url ends in /api/v1"


# ---------------------------------------------------------------- account


def test_account_shape_and_counts(client: httpx.Client, keys: Keys, campaigns: list[dict[str, Any]]) -> None:
    account = ok_data(client.get("/account"))
    assert_shape(account, WORKSPACE_SHAPE, "GET /account")
    assert account["workspace"]["id"] == keys.a_rw.workspace_id, "the key's workspace is the account's workspace"
    assert account["counts"]["campaigns"] == len(campaigns)
    mailboxes = ok_data(client.get("/email-accounts"))
    assert account["counts"]["email_accounts"] == len(mailboxes)


def test_each_workspace_sees_its_own_account(shared_small_sandbox: Any, keys: Keys) -> None:
    with api(shared_small_sandbox, keys.b_rw) as b:
        account = ok_data(b.get("/account"))
    assert account["workspace"]["id"] == keys.b_rw.workspace_id


# ---------------------------------------------------------------- campaigns


def test_campaign_list_items_have_the_campaign_shape(campaigns: list[dict[str, Any]]) -> None:
    assert campaigns, "small scale should have campaigns"
    for c in campaigns:
        assert_shape(c, CAMPAIGN_SHAPE, f"campaign {c.get('id')}")
    assert len({c["id"] for c in campaigns}) == len(campaigns), "campaign ids repeat across pages"
    statuses = {c["status"] for c in campaigns}
    assert len(statuses) >= 2, f"seeded data should mix statuses, got {statuses}"


def test_campaigns_are_newest_first(campaigns: list[dict[str, Any]]) -> None:
    created = [parse_timestamp(c["created_at"]) for c in campaigns]
    assert created == sorted(created, reverse=True), "part 4: GET /campaigns is newest first"


def test_campaign_paging_meta(client: httpx.Client, campaigns: list[dict[str, Any]]) -> None:
    total = len(campaigns)
    data, meta = paged(client.get("/campaigns"))
    assert meta["total"] == total
    assert meta["current_page"] == 1
    assert meta["last_page"] == max(1, math.ceil(total / 25)), "default per_page is 25"
    assert len(data) == min(25, total)
    seen: list[str] = []
    last_page = math.ceil(total / 5)
    for page in range(1, last_page + 1):
        data, meta = paged(client.get("/campaigns", params={"per_page": 5, "page": page}))
        assert meta == {"current_page": page, "last_page": last_page, "total": total}
        assert len(data) == (5 if page < last_page else total - 5 * (last_page - 1))
        seen += [c["id"] for c in data]
    assert seen == [c["id"] for c in campaigns], "pages of 5 must concatenate to the full newest-first list"


def test_campaign_per_page_max_is_100(client: httpx.Client) -> None:
    resp = client.get("/campaigns", params={"per_page": 101})
    if resp.status_code == 200:
        _, meta = paged(resp)
        assert meta["last_page"] == max(1, math.ceil(meta["total"] / 100)), "per_page above 100 must act as 100"
    else:
        assert resp.status_code == 422 and "per_page" in resp.json().get("errors", {}), resp.text[:300]


@pytest.mark.parametrize("status", CAMPAIGN_STATUSES)
def test_campaign_status_filter(client: httpx.Client, campaigns: list[dict[str, Any]], status: str) -> None:
    filtered = [c for page in all_pages(client, "/campaigns", 100, status=status) for c in page]
    assert all(c["status"] == status for c in filtered), f"status={status} returned other statuses"
    assert {c["id"] for c in filtered} == {c["id"] for c in campaigns if c["status"] == status}


def test_campaign_detail_matches_list(client: httpx.Client, campaigns: list[dict[str, Any]]) -> None:
    for listed in campaigns[:4]:
        detail = ok_data(client.get(f"/campaigns/{listed['id']}"))
        assert_shape(detail, CAMPAIGN_SHAPE, "GET /campaigns/{id}")
        for field in ("id", "name", "status", "subject_lines", "email_bodies", "stats", "created_at"):
            assert detail[field] == listed[field], f"{field} differs between list and detail"


def test_merge_fields_in_seeded_bodies(campaigns: list[dict[str, Any]]) -> None:
    bodies = [b for c in campaigns for b in c["email_bodies"]]
    assert any("{{" in b for b in bodies), "part 2: bodies use {{field|fallback}} / {{company}} merge fields"


# ---------------------------------------------------------------- recipients


def test_recipients_shape_and_default_paging(client: httpx.Client, busiest_campaign: dict[str, Any]) -> None:
    cid = busiest_campaign["id"]
    data, meta = paged(client.get(f"/campaigns/{cid}/leads"))
    total = meta["total"]
    assert total == busiest_campaign["stats"]["total_leads"], "recipients total vs campaign stats.total_leads"
    assert total > 50, "need a campaign with more than one default page to check per_page default"
    assert len(data) == 50 and meta["last_page"] == math.ceil(total / 50), "default per_page is 50"
    for r in data:
        assert_shape(r, RECIPIENT_SHAPE, "recipient")


def test_recipients_per_page_max_is_200(client: httpx.Client, busiest_campaign: dict[str, Any]) -> None:
    cid = busiest_campaign["id"]
    data, meta = paged(client.get(f"/campaigns/{cid}/leads", params={"per_page": 200}))
    assert len(data) == min(200, meta["total"])
    assert meta["last_page"] == max(1, math.ceil(meta["total"] / 200))
    resp = client.get(f"/campaigns/{cid}/leads", params={"per_page": 201})
    if resp.status_code == 200:
        data, meta = paged(resp)
        assert len(data) <= 200 and meta["last_page"] == max(1, math.ceil(meta["total"] / 200))
    else:
        assert resp.status_code == 422 and "per_page" in resp.json().get("errors", {}), resp.text[:300]


def test_recipients_all_pages_and_status_filter(client: httpx.Client, busiest_campaign: dict[str, Any]) -> None:
    cid = busiest_campaign["id"]
    everyone = [r for page in all_pages(client, f"/campaigns/{cid}/leads", 200) for r in page]
    assert len({r["id"] for r in everyone}) == len(everyone) == busiest_campaign["stats"]["total_leads"]
    by_status: dict[str, int] = {}
    for r in everyone:
        by_status[r["status"]] = by_status.get(r["status"], 0) + 1
    for status in RECIPIENT_STATUSES:
        _, meta = paged(client.get(f"/campaigns/{cid}/leads", params={"status": status, "per_page": 1}))
        assert meta["total"] == by_status.get(status, 0), f"status={status} filter count"
    some = max(by_status, key=lambda s: by_status[s])
    data, _ = paged(client.get(f"/campaigns/{cid}/leads", params={"status": some, "per_page": 200}))
    assert data and all(r["status"] == some for r in data)


# ---------------------------------------------------------------- stats


def test_stats_shape(client: httpx.Client, campaigns: list[dict[str, Any]]) -> None:
    sending = [c for c in campaigns if c["stats"]["sent"] > 0] or campaigns
    for c in sending[:3]:
        stats = ok_data(client.get(f"/campaigns/{c['id']}/stats"))
        assert_shape(stats, STATS_SHAPE, "GET /campaigns/{id}/stats")
        assert stats["campaign"]["id"] == c["id"] and stats["campaign"]["name"] == c["name"]
        assert stats["totals"]["recipients"] == c["stats"]["total_leads"]
        assert stats["totals"]["sent"] == c["stats"]["sent"]
        for name, rate in stats["rates"].items():
            assert 0 <= rate <= 100, f"rates are percentages: {name}={rate}"
        for v in stats["variants"]:
            assert_shape(v, VARIANT_SHAPE, "stats variant")
            assert 0 <= v["reply_rate"] <= 100, f"variant reply_rate is a percentage: {v['reply_rate']}"
        indexes = [v["index"] for v in stats["variants"]]
        assert sorted(indexes) == list(range(len(indexes))), "variant index is zero-based and dense"
        for v in stats["variants"]:
            assert v["subject"] == c["subject_lines"][v["index"]], "variant subject is subject_lines[index]"
        for d in stats["daily"]:
            assert_shape(d, DAILY_SHAPE, "stats daily item")
        days = sorted(date.fromisoformat(d["date"]) for d in stats["daily"])
        assert len(days) == 14, f"part 2/8: daily covers the last 14 days, got {len(days)} items"
        assert all(b - a == timedelta(days=1) for a, b in pairwise(days)), "daily dates are 14 consecutive days"


# ---------------------------------------------------------------- replies


@pytest.fixture(scope="module")
def replies(client: httpx.Client) -> list[dict[str, Any]]:
    return [r for page in all_pages(client, "/replies", 100) for r in page]


def test_replies_shape_order_and_no_body(replies: list[dict[str, Any]]) -> None:
    assert len(replies) > 100, "small scale has ~600 replies"
    for r in replies:
        assert_shape(r, REPLY_SHAPE, "reply list item")
        assert "body" not in r, "part 2: body is not in list items"
    received = [parse_timestamp(r["received_at"]) for r in replies]
    assert received == sorted(received, reverse=True), "part 4: GET /replies is newest first"
    assert len({r["id"] for r in replies}) == len(replies)


def test_replies_per_page_default_and_max(client: httpx.Client, replies: list[dict[str, Any]]) -> None:
    data, meta = paged(client.get("/replies"))
    assert meta["total"] == len(replies)
    assert len(data) == 25 and meta["last_page"] == math.ceil(len(replies) / 25), "default per_page is 25"
    data, meta = paged(client.get("/replies", params={"per_page": 100, "page": 2}))
    assert len(data) == 100 and meta["current_page"] == 2
    assert [r["id"] for r in data] == [r["id"] for r in replies[100:200]]
    resp = client.get("/replies", params={"per_page": 101})
    if resp.status_code == 200:
        data, meta = paged(resp)
        assert len(data) == 100 and meta["last_page"] == math.ceil(len(replies) / 100), "per_page max is 100"
    else:
        assert resp.status_code == 422 and "per_page" in resp.json().get("errors", {}), resp.text[:300]


def test_replies_filters(client: httpx.Client, replies: list[dict[str, Any]]) -> None:
    cid = replies[0]["campaign_id"]
    by_campaign = [r for page in all_pages(client, "/replies", 100, campaign_id=cid) for r in page]
    assert by_campaign and all(r["campaign_id"] == cid for r in by_campaign)
    assert {r["id"] for r in by_campaign} == {r["id"] for r in replies if r["campaign_id"] == cid}
    unread = [r for page in all_pages(client, "/replies", 100, unread="true") for r in page]
    assert all(r["is_read"] is False for r in unread)
    assert {r["id"] for r in unread} == {r["id"] for r in replies if not r["is_read"]}
    assert 0 < len(unread) < len(replies), "seeded replies should mix read and unread"
    everything = [r for page in all_pages(client, "/replies", 100, unread="false") for r in page]
    assert len(everything) == len(replies), "unread=false does not filter (only unread when true)"


def test_reply_detail_has_body(client: httpx.Client, replies: list[dict[str, Any]]) -> None:
    for listed in replies[:3]:
        detail = ok_data(client.get(f"/replies/{listed['id']}"))
        assert_shape(detail, REPLY_SHAPE, "GET /replies/{id}")
        assert is_str(detail.get("body")) and detail["body"], "part 2: body present when a single reply is fetched"
        assert {k: v for k, v in detail.items() if k != "body"} == listed


def test_reply_types_are_varied(replies: list[dict[str, Any]]) -> None:
    assert len({r["reply_type"] for r in replies}) >= 3, "AI classification should vary"


# ---------------------------------------------------------------- mailboxes


def test_email_accounts_shape_and_active_filter(client: httpx.Client) -> None:
    resp = client.get("/email-accounts")
    mailboxes = ok_data(resp)
    assert "meta" not in resp.json(), "part 4: GET /email-accounts has no meta"
    assert isinstance(mailboxes, list) and mailboxes
    for m in mailboxes:
        assert_shape(m, MAILBOX_SHAPE, "mailbox")
    active = ok_data(client.get("/email-accounts", params={"active": "true"}))
    paused = ok_data(client.get("/email-accounts", params={"active": "false"}))
    assert all(m["is_active"] for m in active) and not any(m["is_active"] for m in paused)
    assert {m["id"] for m in active} | {m["id"] for m in paused} == {m["id"] for m in mailboxes}
    detail = ok_data(client.get(f"/email-accounts/{mailboxes[0]['id']}"))
    assert detail == mailboxes[0]


# ---------------------------------------------------------------- search


def _no_contact_details(item: dict[str, Any]) -> bool:
    banned = ("email", "phone", "mobile", "linkedin")
    return not any(b in k.lower() for k in item if k != "has_email" for b in banned)


def test_search_people_shape(client: httpx.Client) -> None:
    result = ok_data(client.get("/search/people"))
    assert set(result) >= {"total", "preview"} and isinstance(result["total"], int)
    preview = result["preview"]
    assert isinstance(preview, list) and len(preview) == min(25, result["total"]), "count plus a 25-row preview"
    for p in preview:
        assert_shape(p, PERSON_PREVIEW_SHAPE, "person preview")
        assert _no_contact_details(p), f"part 1: preview without contact details, got keys {sorted(p)}"


def test_search_people_filters(client: httpx.Client) -> None:
    everyone = ok_data(client.get("/search/people"))
    sample = everyone["preview"][0]
    by_title = ok_data(client.get("/search/people", params=[("titles[]", sample["job_title"])]))
    assert 1 <= by_title["total"] <= everyone["total"]
    assert all(sample["job_title"].lower() in p["job_title"].lower() for p in by_title["preview"])
    by_company = ok_data(
        client.get("/search/people", params=[("companies[]", sample["company"]), ("company_mode", "current")])
    )
    assert by_company["total"] >= 1 and all(p["company"] == sample["company"] for p in by_company["preview"])
    by_q = ok_data(client.get("/search/people", params={"q": sample["last_name"]}))
    assert by_q["total"] >= 1
    senior = ok_data(client.get("/search/people", params=[("seniorities[]", "vp"), ("seniorities[]", "director")]))
    assert senior["total"] < everyone["total"], "a seniority filter narrows the search"
    twelve = [("titles[]", f"Title {i}") for i in range(12)]
    assert client.get("/search/people", params=twelve).status_code == 200, "up to 12 titles are allowed"
    companies = [("companies[]", f"company{i}.example") for i in range(25)]
    assert client.get("/search/people", params=companies).status_code == 200, "up to 25 companies are allowed"


def test_search_companies_shape_and_filters(client: httpx.Client) -> None:
    result = ok_data(client.get("/search/companies"))
    assert isinstance(result["total"], int) and len(result["preview"]) == min(25, result["total"])
    for c in result["preview"]:
        assert_shape(c, COMPANY_PREVIEW_SHAPE, "company preview")
        assert c["size"] in COMPANY_SIZES, f"size is an employee band of part 4, got {c['size']!r}"
    band = result["preview"][0]["size"]
    sized = ok_data(client.get("/search/companies", params=[("sizes[]", band)]))
    assert 1 <= sized["total"] <= result["total"] and all(c["size"] == band for c in sized["preview"])
    name = result["preview"][0]["name"]
    by_q = ok_data(client.get("/search/companies", params={"q": name}))
    assert any(c["name"] == name for c in by_q["preview"])


# ---------------------------------------------------------------- hooks (read-only part)


def test_hook_events_are_the_six_of_part_6(client: httpx.Client) -> None:
    events = ok_data(client.get("/hooks/events"))
    assert isinstance(events, list)
    assert sorted(e["key"] for e in events) == sorted(EVENT_KEYS)
    assert all(set(e) >= {"key", "label"} and is_str(e["label"]) and e["label"] for e in events)


@pytest.mark.parametrize("event", [None, "lead.opened", "campaign.completed"])
def test_hook_sample(client: httpx.Client, event: str | None) -> None:
    params = {} if event is None else {"event": event}
    sample = ok_data(client.get("/hooks/sample", params=params))
    assert isinstance(sample, list) and len(sample) >= 1, "part 4: data = array holding an example delivery"
    item = sample[0]
    assert item["event"] == (event or "lead.replied"), "default event is lead.replied"
    assert set(item) >= {"event", "created_at", "data"}
    assert isinstance(item["created_at"], str) and parse_timestamp(item["created_at"]).utcoffset() is not None
    assert isinstance(item["data"], dict)
    assert set(item["data"]) >= {"lead_id", "email", "first_name", "company"}


# ---------------------------------------------------------------- key levels on reads


def _any_read_paths(campaign_id: str) -> list[str]:
    return [
        "/campaigns",
        f"/campaigns/{campaign_id}",
        f"/campaigns/{campaign_id}/leads",
        f"/campaigns/{campaign_id}/stats",
        "/search/people",
        "/search/companies",
        "/hooks/events",
        "/hooks/sample",
    ]


@pytest.mark.parametrize("which", ["a_read", "a_former_admin", "a_rw"])
def test_any_key_reads_operations_marked_any(
    shared_small_sandbox: Any, keys: Keys, campaigns: list[dict[str, Any]], which: str
) -> None:
    with api(shared_small_sandbox, getattr(keys, which)) as c:
        for path in _any_read_paths(campaigns[0]["id"]):
            ok_data(c.get(path))
