"""Independent spec-conformance check of the sandbox: changes and state transitions (parts 3 and 4).

Written from the API's interface description (version 1.0) alone. Each test starts its own tiny sandbox.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from test_spec_conformance_support import (
    CAMPAIGN_SHAPE,
    COMPANY_IMPORT_SHAPE,
    DAYS,
    MAILBOX_SHAPE,
    PEOPLE_IMPORT_SHAPE,
    REPLY_SHAPE,
    Keys,
    advance,
    all_pages,
    api,
    assert_shape,
    body_of,
    fetch_keys,
    is_int,
    is_str,
    is_uuid,
    ok_data,
    paged,
    parse_timestamp,
    valid_campaign_body,
)


@pytest.fixture
def tiny(make_sandbox: Callable[..., Any]) -> Any:
    return make_sandbox(scale="tiny", rate_limit=0)


@pytest.fixture
def rw(tiny: Any) -> Iterator[httpx.Client]:
    keys: Keys = fetch_keys(tiny)
    with api(tiny, keys.a_rw) as c:
        yield c


def _message_and_data(resp: httpx.Response) -> Any:
    """Part 4: launch/pause/resume/read/mailbox actions answer 200 {message, data}."""
    data = ok_data(resp)
    message = resp.json().get("message")
    assert isinstance(message, str) and message, f"{resp.request.url.path}: 200 without a `message`"
    return data


# ---------------------------------------------------------------- create and patch


def test_create_is_a_draft_with_nested_settings(rw: httpx.Client) -> None:
    before = ok_data(rw.get("/account"))["counts"]["campaigns"]
    mailbox = ok_data(rw.get("/email-accounts"))[0]["id"]
    body = valid_campaign_body(
        name="Nested settings",
        subject_lines=["A {{first_name|there}}", "B for {{company}}"],
        email_bodies=["Body A", "Body B"],
        timezone="Europe/Berlin",
        send_days=["mon", "wed", "fri"],
        send_window_start="08:30",
        send_window_end="17:45",
        delay_between_emails=120,
        follow_up_enabled=True,
        follow_up_delay_days=3,
        max_follow_ups=2,
        track_opens=True,
        email_account_ids=[mailbox],
    )
    created = ok_data(rw.post("/campaigns", json=body), 201)
    assert_shape(created, CAMPAIGN_SHAPE, "POST /campaigns result")
    assert created["status"] == "draft", "part 3: a campaign is always created as a draft"
    assert created["name"] == "Nested settings"
    assert created["subject_lines"] == body["subject_lines"] and created["email_bodies"] == body["email_bodies"]
    assert created["send_window"] == {
        "start": "08:30",
        "end": "17:45",
        "days": ["mon", "wed", "fri"],
        "timezone": "Europe/Berlin",
    }
    assert created["follow_up"] == {"enabled": True, "delay_days": 3, "max": 2}
    assert created["stats"]["total_leads"] == 0 and created["stats"]["sent"] == 0
    assert ok_data(rw.get(f"/campaigns/{created['id']}")) == created
    newest = ok_data(rw.get("/campaigns", params={"per_page": 1}))[0]
    assert newest["id"] == created["id"], "newest first: the new campaign leads the list"
    drafts = ok_data(rw.get("/campaigns", params={"status": "draft", "per_page": 100}))
    assert created["id"] in {c["id"] for c in drafts}
    assert ok_data(rw.get("/account"))["counts"]["campaigns"] == before + 1


_INCLUSIVE_LIMITS: dict[str, dict[str, Any]] = {
    "lower bounds": {"delay_between_emails": 30, "follow_up_delay_days": 1, "max_follow_ups": 0},
    "upper bounds": {"delay_between_emails": 3600, "follow_up_delay_days": 60, "max_follow_ups": 5},
    "5 variants": {"subject_lines": [f"s{i}" for i in range(5)], "email_bodies": [f"b{i}" for i in range(5)]},
    "all days": {"send_days": list(DAYS), "timezone": "America/New_York"},
}


def test_create_accepts_the_limits_inclusive(rw: httpx.Client, subtests: Any) -> None:
    for label, overrides in _INCLUSIVE_LIMITS.items():
        with subtests.test(msg=label):
            created = ok_data(rw.post("/campaigns", json=valid_campaign_body(**overrides)), 201)
            assert created["status"] == "draft"
            if "max_follow_ups" in overrides:
                assert created["follow_up"]["max"] == overrides["max_follow_ups"]
                assert created["follow_up"]["delay_days"] == overrides["follow_up_delay_days"]
            if "subject_lines" in overrides:
                assert len(created["subject_lines"]) == 5 and len(created["email_bodies"]) == 5
            if "send_days" in overrides:
                assert sorted(created["send_window"]["days"], key=DAYS.index) == list(DAYS)


def test_patch_changes_only_the_fields_sent(rw: httpx.Client) -> None:
    created = ok_data(rw.post("/campaigns", json=valid_campaign_body(name="Before")), 201)
    cid = created["id"]
    patched = ok_data(rw.patch(f"/campaigns/{cid}", json={"name": "After"}))
    assert patched["name"] == "After"
    assert {k: v for k, v in patched.items() if k != "name"} == {k: v for k, v in created.items() if k != "name"}
    patched = ok_data(
        rw.patch(
            f"/campaigns/{cid}",
            json={"subject_lines": ["New one", "New two"], "send_window_start": "07:15", "send_window_end": "18:05"},
        )
    )
    assert patched["subject_lines"] == ["New one", "New two"], "subject_lines replaces the subject lines"
    assert patched["email_bodies"] == created["email_bodies"], "bodies untouched when not sent"
    assert (patched["send_window"]["start"], patched["send_window"]["end"]) == ("07:15", "18:05")
    patched = ok_data(
        rw.patch(
            f"/campaigns/{cid}",
            json={
                "email_bodies": ["Only body"],
                "max_follow_ups": 4,
                "follow_up_delay_days": 7,
                "timezone": "Asia/Tokyo",
            },
        )
    )
    assert patched["email_bodies"] == ["Only body"]
    assert patched["follow_up"]["max"] == 4 and patched["follow_up"]["delay_days"] == 7
    assert patched["send_window"]["timezone"] == "Asia/Tokyo"
    assert ok_data(rw.get(f"/campaigns/{cid}")) == patched
    assert patched["status"] == "draft"


# ---------------------------------------------------------------- recipients and the campaign lifecycle


def _import_people(rw: httpx.Client, name: str, total: int) -> dict[str, Any]:
    result = ok_data(rw.post("/search/people/import", json={"list_name": name, "total": total}), 201)
    assert_shape(result, PEOPLE_IMPORT_SHAPE, "people import result")
    return result


def _stats_sent(rw: httpx.Client, cid: str) -> int:
    return int(ok_data(rw.get(f"/campaigns/{cid}"))["stats"]["sent"])


def _advance_until_sent_exceeds(sb: Any, rw: httpx.Client, cid: str, floor: int, hours: int = 48) -> int:
    for _ in range(hours):
        advance(sb, 3600)
        sent = _stats_sent(rw, cid)
        if sent > floor:
            return sent
    raise AssertionError(f"campaign {cid} sent nothing beyond {floor} in {hours} simulated hours while active")


def test_launch_refused_with_blockers(rw: httpx.Client) -> None:
    empty = ok_data(rw.post("/campaigns", json=valid_campaign_body(email_account_ids=[])), 201)
    resp = rw.post(f"/campaigns/{empty['id']}/launch")
    assert resp.status_code == 422, f"part 3: a campaign that is not ready is refused with 422, got {resp.status_code}"
    body = body_of(resp)
    assert isinstance(body.get("message"), str) and body["message"]
    text = str(body).lower()
    assert "recipient" in text, f"blockers should name 'no recipients': {body}"
    assert "mailbox" in text or "email_account" in text, f"blockers should name 'no mailbox': {body}"
    assert ok_data(rw.get(f"/campaigns/{empty['id']}"))["status"] == "draft", "refused launch leaves it unchanged"


def test_add_leads_then_launch_pause_resume(tiny: Any, rw: httpx.Client) -> None:
    mailboxes = [m["id"] for m in ok_data(rw.get("/email-accounts", params={"active": "true"}))]
    assert mailboxes, "tiny scale needs an active mailbox"
    campaign = ok_data(
        rw.post(
            "/campaigns",
            json=valid_campaign_body(
                name="Lifecycle",
                timezone="UTC",
                send_days=list(DAYS),
                send_window_start="00:00",
                send_window_end="23:59",
                delay_between_emails=3600,
                follow_up_enabled=False,
                email_account_ids=mailboxes,
            ),
        ),
        201,
    )
    cid = campaign["id"]
    people = _import_people(rw, "Lifecycle list", 100)

    none_match = ok_data(
        rw.post(f"/campaigns/{cid}/leads", json={"list_id": people["list_id"], "job_title": "zz-no-such-title-zz"})
    )
    assert none_match["added"] == 0, "job_title filter applies with list_id"
    added = ok_data(rw.post(f"/campaigns/{cid}/leads", json={"list_id": people["list_id"]}))
    assert set(added) >= {"added", "skipped", "cooling", "total_recipients"}
    assert all(is_int(added[k]) for k in ("added", "skipped", "cooling", "total_recipients"))
    assert added["added"] > 0 and added["total_recipients"] == added["added"]
    _, meta = paged(rw.get(f"/campaigns/{cid}/leads"))
    assert meta["total"] == added["total_recipients"]
    again = ok_data(rw.post(f"/campaigns/{cid}/leads", json={"list_id": people["list_id"]}))
    assert again["added"] == 0 and again["total_recipients"] == added["total_recipients"], "duplicates are skipped"
    assert again["skipped"] + again["cooling"] >= added["added"]

    launched = _message_and_data(rw.post(f"/campaigns/{cid}/launch"))
    assert launched["status"] == "active" and launched["id"] == cid, "part 3: draft -> active on launch"
    _advance_until_sent_exceeds(tiny, rw, cid, 0)
    now = parse_timestamp(advance(tiny, 60))
    stats = ok_data(rw.get(f"/campaigns/{cid}/stats"))
    daily = {d["date"]: d["sent"] for d in stats["daily"]}
    assert max(daily) == now.date().isoformat(), "part 2: daily covers the last 14 days, up to today"
    assert sum(daily.values()) == stats["totals"]["sent"], "all sends of a new campaign fall in the 14-day series"
    assert sum(v["sent"] for v in stats["variants"]) == stats["totals"]["sent"], "variant sends add up to sent"

    second = ok_data(rw.post("/campaigns", json=valid_campaign_body(name="Second touch")), 201)
    cooled = ok_data(rw.post(f"/campaigns/{second['id']}/leads", json={"list_id": people["list_id"]}))
    assert cooled["cooling"] >= 1, "people contacted too recently are skipped as cooling"
    assert cooled["added"] <= added["added"] - cooled["cooling"]

    paused = _message_and_data(rw.post(f"/campaigns/{cid}/pause"))
    assert paused["status"] == "paused", "part 3: active -> paused"
    sent = _stats_sent(rw, cid)
    for _ in range(6):
        advance(tiny, 3600)
    after = ok_data(rw.get(f"/campaigns/{cid}"))
    assert after["status"] == "paused" and after["stats"]["sent"] == sent, "part 3: a paused campaign stops sending"
    assert after["stats"]["total_leads"] == added["total_recipients"], "pausing loses nothing"

    resumed = _message_and_data(rw.post(f"/campaigns/{cid}/resume"))
    assert resumed["status"] == "active", "part 3: paused -> active"
    _advance_until_sent_exceeds(tiny, rw, cid, sent)


def test_paused_mailboxes_send_nothing(tiny: Any, rw: httpx.Client) -> None:
    mailboxes = [m["id"] for m in ok_data(rw.get("/email-accounts", params={"active": "true"}))]
    campaign = ok_data(
        rw.post(
            "/campaigns",
            json=valid_campaign_body(
                name="Mailbox pause",
                timezone="UTC",
                send_days=list(DAYS),
                send_window_start="00:00",
                send_window_end="23:59",
                delay_between_emails=3600,
                email_account_ids=mailboxes,
            ),
        ),
        201,
    )
    cid = campaign["id"]
    people = _import_people(rw, "Mailbox list", 100)
    assert ok_data(rw.post(f"/campaigns/{cid}/leads", json={"list_id": people["list_id"]}))["added"] > 0
    _message_and_data(rw.post(f"/campaigns/{cid}/launch"))
    _advance_until_sent_exceeds(tiny, rw, cid, 0)
    for mid in mailboxes:
        assert _message_and_data(rw.post(f"/email-accounts/{mid}/pause"))["is_active"] is False
    sent = _stats_sent(rw, cid)
    for _ in range(6):
        advance(tiny, 3600)
    assert _stats_sent(rw, cid) == sent, "part 3: a paused mailbox sends no campaign email until resumed"
    for mid in mailboxes:
        assert _message_and_data(rw.post(f"/email-accounts/{mid}/resume"))["is_active"] is True
    _advance_until_sent_exceeds(tiny, rw, cid, sent)


def test_mailbox_pause_and_resume(rw: httpx.Client) -> None:
    mailbox = ok_data(rw.get("/email-accounts", params={"active": "true"}))[0]
    paused = _message_and_data(rw.post(f"/email-accounts/{mailbox['id']}/pause"))
    assert_shape(paused, MAILBOX_SHAPE, "paused mailbox")
    assert paused["id"] == mailbox["id"] and paused["is_active"] is False
    assert mailbox["id"] in {m["id"] for m in ok_data(rw.get("/email-accounts", params={"active": "false"}))}
    assert ok_data(rw.get(f"/email-accounts/{mailbox['id']}"))["is_active"] is False
    resumed = _message_and_data(rw.post(f"/email-accounts/{mailbox['id']}/resume"))
    assert resumed["is_active"] is True
    assert mailbox["id"] in {m["id"] for m in ok_data(rw.get("/email-accounts", params={"active": "true"}))}


# ---------------------------------------------------------------- replies


def test_reply_read_flag(rw: httpx.Client) -> None:
    unread = ok_data(rw.get("/replies", params={"unread": "true", "per_page": 100}))
    assert unread, "tiny scale should hold an unread reply"
    target = unread[0]
    marked = _message_and_data(rw.post(f"/replies/{target['id']}/read"))
    assert_shape(marked, REPLY_SHAPE, "marked reply")
    assert marked["id"] == target["id"] and marked["is_read"] is True, "part 3: is_read false -> true"
    assert "body" not in marked, "part 2: body is not in the mark-read response"
    assert ok_data(rw.get(f"/replies/{target['id']}"))["is_read"] is True
    still_unread = ok_data(rw.get("/replies", params={"unread": "true", "per_page": 100}))
    assert target["id"] not in {r["id"] for r in still_unread}


# ---------------------------------------------------------------- search imports


def test_search_imports(rw: httpx.Client, subtests: Any) -> None:
    with subtests.test(msg="people import"):
        lists_before = ok_data(rw.get("/account"))["counts"]["lists"]
        first = _import_people(rw, "Conformance people", 10)
        assert first["list_name"] == "Conformance people"
        assert 0 < first["imported"] <= 10, "total: people to take"
        assert first["matched"] >= first["imported"]
        assert ok_data(rw.get("/account"))["counts"]["lists"] == lists_before + 1
        second = _import_people(rw, "Conformance people again", 10)
        assert second["list_id"] != first["list_id"]
        assert second["duplicate"] >= 1, "addresses already in the workspace are refused as duplicates"
    with subtests.test(msg="people import: total defaults to 100"):
        default = ok_data(
            rw.post(
                "/search/people/import", json={"list_name": "Default total", "seniorities": ["manager", "director"]}
            ),
            201,
        )
        assert_shape(default, PEOPLE_IMPORT_SHAPE, "people import result")
        assert default["imported"] <= 100
    with subtests.test(msg="total is capped by the plan, not refused"):
        huge = ok_data(
            rw.post(
                "/search/people/import", json={"list_name": "Huge", "total": 10_000_000, "seniorities": ["c_suite"]}
            ),
            201,
        )
        assert 0 < huge["imported"] <= huge["matched"]
    with subtests.test(msg="companies import"):
        result = ok_data(
            rw.post("/search/companies/import", json={"list_name": "Conformance companies", "total": 7}), 201
        )
        assert_shape(result, COMPANY_IMPORT_SHAPE, "company import result")
        assert result["list_name"] == "Conformance companies"
        assert 0 < result["imported"] <= 7 and result["matched"] >= result["imported"]


# ---------------------------------------------------------------- webhook subscriptions


def test_subscribe_and_unsubscribe_are_not_wrapped(rw: httpx.Client) -> None:
    for event in ("lead.replied", "campaign.completed"):
        target = f"https://hooks.example.com/{event}"
        resp = rw.post("/hooks", json={"target_url": target, "event": event})
        assert resp.status_code in (200, 201), f"subscribe: {resp.status_code} {resp.text[:200]}"
        body = body_of(resp)
        assert "data" not in body, "part 4: POST /hooks is not wrapped in `data`"
        assert is_uuid(body.get("id")) and body.get("event") == event and body.get("target") == target
        deleted = rw.delete(f"/hooks/{body['id']}")
        assert deleted.status_code in (200, 202, 204), f"unsubscribe: {deleted.status_code}"
        dbody = body_of(deleted)
        assert "data" not in dbody and is_str(dbody.get("message")), "part 4: DELETE /hooks/{id} -> {message}"
        assert rw.delete(f"/hooks/{body['id']}").status_code == 404, "a deleted subscription is gone"


def test_per_company_and_list_filters_reach_the_recipients(rw: httpx.Client) -> None:
    """per_company caps people per company; company/job_title filters apply with list_id ('containing the text')."""
    people = ok_data(
        rw.post("/search/people/import", json={"list_name": "One per company", "total": 20, "per_company": 1}), 201
    )
    assert 0 < people["imported"] <= 20
    cid = ok_data(rw.post("/campaigns", json=valid_campaign_body(name="Per company")), 201)["id"]
    added = ok_data(rw.post(f"/campaigns/{cid}/leads", json={"list_id": people["list_id"]}))
    recipients = [r for page in all_pages(rw, f"/campaigns/{cid}/leads", 200) for r in page]
    assert len(recipients) == added["added"] > 0
    companies = [r["company"] for r in recipients]
    assert len(set(companies)) == len(companies), "per_company=1: at most one person per company"

    wide = ok_data(rw.post("/search/people/import", json={"list_name": "Wide", "total": 60}), 201)
    unfiltered = ok_data(rw.post("/campaigns", json=valid_campaign_body(name="Unfiltered")), 201)["id"]
    ok_data(rw.post(f"/campaigns/{unfiltered}/leads", json={"list_id": wide["list_id"]}))
    everyone = [r for page in all_pages(rw, f"/campaigns/{unfiltered}/leads", 200) for r in page]
    text = everyone[0]["company"][1:5].upper()
    expected = sum(text.lower() in r["company"].lower() for r in everyone)
    target = ok_data(rw.post("/campaigns", json=valid_campaign_body(name="Filtered")), 201)["id"]
    filtered = ok_data(rw.post(f"/campaigns/{target}/leads", json={"list_id": wide["list_id"], "company": text}))
    got = [r for page in all_pages(rw, f"/campaigns/{target}/leads", 200) for r in page]
    assert len(got) == filtered["added"] == expected >= 1, "company: case-insensitive 'contains' filter on the list"
    assert all(text.lower() in r["company"].lower() for r in got)
