"""Independent spec-conformance check of the sandbox: errors (part 5 and 7) and limits (part 8).

Written from the API's interface description (version 1.0) alone. Each test starts its own tiny sandbox, because a
sandbox that wrongly accepts a refused request would otherwise change shared state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from test_spec_conformance_support import (
    Key,
    Keys,
    api,
    control_get,
    error_fields,
    fetch_keys,
    ok_data,
    random_uuid,
    valid_campaign_body,
)

Operation = tuple[str, str, dict[str, Any] | None]
# Part 5: "The key level needed for account, reply and mailbox operations: not shown" (reads only;
# a read-only key used for a change is 403 whatever the operation).
_LEVEL_UNSTATED = ("/account", "/replies", "/email-accounts")


def _ids(client: httpx.Client) -> dict[str, str]:
    """Real ids of the key's workspace: a campaign, a reply, a mailbox."""
    campaigns = ok_data(client.get("/campaigns", params={"per_page": 1}))
    if not campaigns:
        campaigns = [ok_data(client.post("/campaigns", json=valid_campaign_body()), 201)]
    replies = ok_data(client.get("/replies", params={"per_page": 1}))
    mailboxes = ok_data(client.get("/email-accounts"))
    return {
        "campaign": campaigns[0]["id"],
        "reply": replies[0]["id"] if replies else random_uuid(),
        "mailbox": mailboxes[0]["id"] if mailboxes else random_uuid(),
    }


def _operations(ids: dict[str, str], list_id: str, hook_id: str) -> list[Operation]:
    """Every endpoint of part 4 with a valid body, so only the key can be at fault."""
    c, r, m = ids["campaign"], ids["reply"], ids["mailbox"]
    return [
        ("GET", "/account", None),
        ("GET", "/campaigns", None),
        ("POST", "/campaigns", valid_campaign_body()),
        ("GET", f"/campaigns/{c}", None),
        ("PATCH", f"/campaigns/{c}", {"name": "renamed by a refused key"}),
        ("POST", f"/campaigns/{c}/launch", None),
        ("POST", f"/campaigns/{c}/pause", None),
        ("POST", f"/campaigns/{c}/resume", None),
        ("GET", f"/campaigns/{c}/leads", None),
        ("POST", f"/campaigns/{c}/leads", {"list_id": list_id}),
        ("GET", f"/campaigns/{c}/stats", None),
        ("GET", "/replies", None),
        ("GET", f"/replies/{r}", None),
        ("POST", f"/replies/{r}/read", None),
        ("GET", "/email-accounts", None),
        ("GET", f"/email-accounts/{m}", None),
        ("POST", f"/email-accounts/{m}/pause", None),
        ("POST", f"/email-accounts/{m}/resume", None),
        ("GET", "/search/people", None),
        ("POST", "/search/people/import", {"list_name": "refused import", "total": 5}),
        ("GET", "/search/companies", None),
        ("POST", "/search/companies/import", {"list_name": "refused import", "total": 5}),
        ("GET", "/hooks/events", None),
        ("GET", "/hooks/sample", None),
        ("POST", "/hooks", {"target_url": "https://example.com/hook", "event": "lead.replied"}),
        ("DELETE", f"/hooks/{hook_id}", None),
    ]


def _send(client: httpx.Client, op: Operation) -> httpx.Response:
    method, path, body = op
    return client.request(method, path, json=body) if body is not None else client.request(method, path)


def _setup(sb: Any) -> tuple[Keys, httpx.Client, dict[str, str], str, str]:
    keys = fetch_keys(sb)
    rw = api(sb, keys.a_rw)
    ids = _ids(rw)
    imported = rw.post("/search/people/import", json={"list_name": "conformance list", "total": 5})
    list_id = imported.json()["data"]["list_id"] if imported.status_code == 201 else random_uuid()
    hook = rw.post("/hooks", json={"target_url": "https://example.com/conformance", "event": "lead.bounced"})
    hook_id = hook.json()["id"] if hook.status_code in (200, 201) else random_uuid()
    return keys, rw, ids, list_id, hook_id


# ---------------------------------------------------------------- 401


def test_401_on_every_operation(make_sandbox: Callable[..., Any], subtests: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    _, rw, ids, list_id, hook_id = _setup(sb)
    before = ok_data(rw.get("/account"))["counts"]
    bad_headers: dict[str, dict[str, str]] = {
        "missing": {},
        "invalid": {"Authorization": "Bearer not-a-real-key"},
        "not bearer": {"Authorization": f"Token {rw.headers['Authorization'].split()[-1]}"},
    }
    clients = {
        label: httpx.Client(base_url=str(sb.base_url).rstrip("/"), headers=headers, timeout=30)
        for label, headers in bad_headers.items()
    }
    for op in _operations(ids, list_id, hook_id):
        for label, c in clients.items():
            with subtests.test(msg=f"{label} key: {op[0]} {op[1]}"):
                resp = _send(c, op)
                assert resp.status_code == 401, f"part 5.3: {label} key gives 401, got {resp.status_code}"
    for c in clients.values():
        c.close()
    assert ok_data(rw.get("/account"))["counts"] == before, "a refused request changed the workspace"
    rw.close()


# ---------------------------------------------------------------- 403


@pytest.mark.parametrize("which", ["a_read", "a_former_admin"])
def test_403_on_every_change(make_sandbox: Callable[..., Any], subtests: Any, which: str) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys, rw, ids, list_id, hook_id = _setup(sb)
    key: Key = getattr(keys, which)
    before_account = ok_data(rw.get("/account"))
    before_campaign = ok_data(rw.get(f"/campaigns/{ids['campaign']}"))
    before_mailbox = ok_data(rw.get(f"/email-accounts/{ids['mailbox']}"))
    with api(sb, key) as c:
        for op in _operations(ids, list_id, hook_id):
            resp = _send(c, op)
            with subtests.test(msg=f"{which}: {op[0]} {op[1]}"):
                if op[0] == "GET":
                    if not op[1].startswith(_LEVEL_UNSTATED):
                        assert resp.status_code == 200, f"`any` reads accept a {which} key: got {resp.status_code}"
                else:
                    assert resp.status_code == 403, (
                        f"part 5.4: {which} key on a change gives 403, got {resp.status_code}"
                    )
    with subtests.test(msg="refused changes left no trace"):
        assert ok_data(rw.get("/account"))["counts"] == before_account["counts"]
        after = ok_data(rw.get(f"/campaigns/{ids['campaign']}"))
        assert (after["name"], after["status"]) == (before_campaign["name"], before_campaign["status"])
        assert ok_data(rw.get(f"/email-accounts/{ids['mailbox']}"))["is_active"] == before_mailbox["is_active"]
        assert rw.delete(f"/hooks/{hook_id}").status_code in (200, 202, 204), "the hook survived the refused delete"
    rw.close()


# ---------------------------------------------------------------- 404


def test_404_for_ids_outside_the_workspace(make_sandbox: Callable[..., Any], subtests: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    with api(sb, keys.b_rw) as b:
        b_ids = _ids(b)
        b_hook = b.post("/hooks", json={"target_url": "https://example.com/b", "event": "lead.opened"})
        b_hook_id = b_hook.json().get("id", random_uuid()) if b_hook.status_code < 300 else random_uuid()
        b_campaign_before = ok_data(b.get(f"/campaigns/{b_ids['campaign']}"))
    c, r, m = b_ids["campaign"], b_ids["reply"], b_ids["mailbox"]
    ops: list[Operation] = [
        ("GET", f"/campaigns/{c}", None),
        ("PATCH", f"/campaigns/{c}", {"name": "cross-workspace"}),
        ("POST", f"/campaigns/{c}/launch", None),
        ("POST", f"/campaigns/{c}/pause", None),
        ("POST", f"/campaigns/{c}/resume", None),
        ("GET", f"/campaigns/{c}/leads", None),
        ("POST", f"/campaigns/{c}/leads", {"lead_ids": [random_uuid()]}),
        ("GET", f"/campaigns/{c}/stats", None),
        ("GET", f"/replies/{r}", None),
        ("POST", f"/replies/{r}/read", None),
        ("GET", f"/email-accounts/{m}", None),
        ("POST", f"/email-accounts/{m}/pause", None),
        ("POST", f"/email-accounts/{m}/resume", None),
        ("DELETE", f"/hooks/{b_hook_id}", None),
        ("GET", f"/campaigns/{random_uuid()}", None),
        ("GET", f"/replies/{random_uuid()}", None),
        ("GET", f"/email-accounts/{random_uuid()}", None),
        ("DELETE", f"/hooks/{random_uuid()}", None),
    ]
    with api(sb, keys.a_rw) as a:
        for op in ops:
            with subtests.test(msg=f"{op[0]} {op[1]}"):
                resp = _send(a, op)
                assert resp.status_code == 404, (
                    f"part 5.5: an id outside the workspace gives 404, got {resp.status_code}"
                )
    with api(sb, keys.b_rw) as b:
        after = ok_data(b.get(f"/campaigns/{c}"))
        assert (after["name"], after["status"]) == (b_campaign_before["name"], b_campaign_before["status"])
        if b_hook.status_code < 300:
            assert b.delete(f"/hooks/{b_hook_id}").status_code < 300, "B's hook should still exist for B"


# ---------------------------------------------------------------- 422


def _validation_cases(campaign_id: str) -> list[tuple[str, str, dict[str, Any] | None, Any, set[str]]]:
    """(label, method, json body, query params, offending fields)."""
    cb = valid_campaign_body
    cid = campaign_id
    return [
        ("empty create", "POST", {}, None, {"name", "subject_lines", "email_bodies"}),
        ("create without name", "POST", {k: v for k, v in cb().items() if k != "name"}, None, {"name"}),
        ("name not a string", "POST", cb(name=42), None, {"name"}),
        ("no subject lines", "POST", cb(subject_lines=[]), None, {"subject_lines"}),
        ("6 subject lines", "POST", cb(subject_lines=[f"s{i}" for i in range(6)]), None, {"subject_lines"}),
        ("no bodies", "POST", cb(email_bodies=[]), None, {"email_bodies"}),
        ("6 bodies", "POST", cb(email_bodies=[f"b{i}" for i in range(6)]), None, {"email_bodies"}),
        ("delay 29", "POST", cb(delay_between_emails=29), None, {"delay_between_emails"}),
        ("delay 3601", "POST", cb(delay_between_emails=3601), None, {"delay_between_emails"}),
        ("follow-up delay 0", "POST", cb(follow_up_delay_days=0), None, {"follow_up_delay_days"}),
        ("follow-up delay 61", "POST", cb(follow_up_delay_days=61), None, {"follow_up_delay_days"}),
        ("max follow-ups -1", "POST", cb(max_follow_ups=-1), None, {"max_follow_ups"}),
        ("max follow-ups 6", "POST", cb(max_follow_ups=6), None, {"max_follow_ups"}),
        ("bad send day", "POST", cb(send_days=["mon", "someday"]), None, {"send_days"}),
        ("bad timezone", "POST", cb(timezone="Mars/Olympus_Mons"), None, {"timezone"}),
        ("bad window start", "POST", cb(send_window_start="25:61"), None, {"send_window_start"}),
        ("bad window end", "POST", cb(send_window_end="5pm"), None, {"send_window_end"}),
        ("mailbox id not a uuid", "POST", cb(email_account_ids=["not-a-uuid"]), None, {"email_account_ids"}),
        (
            "two offending fields",
            "POST",
            cb(subject_lines=[], max_follow_ups=9),
            None,
            {"subject_lines", "max_follow_ups"},
        ),
        ("patch: no subject lines", "PATCH", {"subject_lines": []}, None, {"subject_lines"}),
        ("patch: 6 bodies", "PATCH", {"email_bodies": ["x"] * 6}, None, {"email_bodies"}),
        ("patch: bad window end", "PATCH", {"send_window_end": "7pm"}, None, {"send_window_end"}),
        ("patch: delay 10", "PATCH", {"delay_between_emails": 10}, None, {"delay_between_emails"}),
        ("list: bad status", "GET /campaigns", None, {"status": "archived"}, {"status"}),
        ("list: per_page not int", "GET /campaigns", None, {"per_page": "many"}, {"per_page"}),
        ("leads: bad status", f"GET /campaigns/{cid}/leads", None, {"status": "lost"}, {"status"}),
        ("people: 13 titles", "GET /search/people", None, [("titles[]", f"t{i}") for i in range(13)], {"titles"}),
        (
            "people: 13 countries",
            "GET /search/people",
            None,
            [("countries[]", f"c{i}") for i in range(13)],
            {"countries"},
        ),
        (
            "people: 13 industries",
            "GET /search/people",
            None,
            [("industries[]", f"i{i}") for i in range(13)],
            {"industries"},
        ),
        (
            "people: 26 companies",
            "GET /search/people",
            None,
            [("companies[]", f"c{i}.io") for i in range(26)],
            {"companies"},
        ),
        ("people: bad seniority", "GET /search/people", None, [("seniorities[]", "boss")], {"seniorities"}),
        (
            "people: bad company_mode",
            "GET /search/people",
            None,
            [("companies[]", "acme.io"), ("company_mode", "sometimes")],
            {"company_mode"},
        ),
        ("people: total not int", "GET /search/people", None, {"total": "lots"}, {"total"}),
        ("companies: bad size", "GET /search/companies", None, [("sizes[]", "2-3")], {"sizes"}),
        ("sample: unknown event", "GET /hooks/sample", None, {"event": "lead.sneezed"}, {"event"}),
    ]


def test_422_names_each_offending_field(make_sandbox: Callable[..., Any], subtests: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    with api(sb, keys.a_rw) as c:
        drafts = ok_data(c.get("/campaigns", params={"status": "draft", "per_page": 1}))
        campaign = drafts[0] if drafts else ok_data(c.post("/campaigns", json=valid_campaign_body()), 201)
        cid = campaign["id"]
        for label, method, body, params, fields in _validation_cases(cid):
            with subtests.test(msg=label):
                if method == "POST":
                    resp = c.post("/campaigns", json=body)
                elif method == "PATCH":
                    resp = c.patch(f"/campaigns/{cid}", json=body)
                else:
                    resp = c.get(method.split(" ", 1)[1], params=params)
                assert error_fields(resp) == fields, (
                    f"part 7: one `errors` entry per offending field: {resp.text[:300]}"
                )
        after = ok_data(c.get(f"/campaigns/{cid}"))
        assert after["subject_lines"] == campaign["subject_lines"], "a refused PATCH changed the campaign"


def test_422_on_body_limits_of_leads_search_import_and_hooks(make_sandbox: Callable[..., Any], subtests: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    with api(sb, keys.a_rw) as c:
        cid = ok_data(c.post("/campaigns", json=valid_campaign_body(name="leads target")), 201)["id"]
        imported = ok_data(c.post("/search/people/import", json={"list_name": "l", "total": 5}), 201)
        cases: list[tuple[str, str, dict[str, Any], set[str] | None]] = [
            ("leads: no source", f"/campaigns/{cid}/leads", {}, None),
            (
                "leads: 1001 lead_ids",
                f"/campaigns/{cid}/leads",
                {"lead_ids": [random_uuid() for _ in range(1001)]},
                {"lead_ids"},
            ),
            ("leads: lead_ids not uuids", f"/campaigns/{cid}/leads", {"lead_ids": ["x"]}, {"lead_ids"}),
            (
                "leads: both sources",
                f"/campaigns/{cid}/leads",
                {"list_id": imported["list_id"], "lead_ids": [random_uuid()]},
                None,
            ),
            ("people import: no list_name", "/search/people/import", {"total": 5}, {"list_name"}),
            (
                "people import: 13 titles",
                "/search/people/import",
                {"list_name": "x", "titles": [f"t{i}" for i in range(13)]},
                {"titles"},
            ),
            ("companies import: no list_name", "/search/companies/import", {"total": 5}, {"list_name"}),
            (
                "companies import: bad size",
                "/search/companies/import",
                {"list_name": "x", "sizes": ["huge"]},
                {"sizes"},
            ),
            (
                "hook: http target",
                "/hooks",
                {"target_url": "http://example.com/h", "event": "lead.replied"},
                {"target_url"},
            ),
            (
                "hook: loopback http without insecure hooks",
                "/hooks",
                {"target_url": "http://127.0.0.1:9/h", "event": "lead.replied"},
                {"target_url"},
            ),
            ("hook: not a url", "/hooks", {"target_url": "example", "event": "lead.replied"}, {"target_url"}),
            (
                "hook: unknown event",
                "/hooks",
                {"target_url": "https://example.com/h", "event": "lead.sneezed"},
                {"event"},
            ),
            ("hook: empty body", "/hooks", {}, {"target_url", "event"}),
        ]
        for label, path, body, fields in cases:
            with subtests.test(msg=label):
                got = error_fields(c.post(path, json=body))
                if fields is None:
                    assert got and got <= {"list_id", "lead_ids"}, f"the error names the source fields, got {got}"
                else:
                    assert got == fields, "part 7: one `errors` entry per offending field"
        total = ok_data(c.get(f"/campaigns/{cid}/leads"))
        assert total == [], "refused lead additions added recipients"


def test_malformed_path_id_is_refused(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = fetch_keys(sb)
    with api(sb, keys.a_rw) as c:
        for path in ("/campaigns/not-a-uuid", "/campaigns/not-a-uuid/stats"):
            assert c.get(path).status_code in (404, 422), f"{path}: a non-uuid id is not found or invalid"


# ---------------------------------------------------------------- 429


def _first_429(client: httpx.Client, path: str, limit: int) -> int:
    """Send requests until the first 429; return how many came before it (bounded at 2x limit)."""
    for i in range(2 * limit + 1):
        resp = client.get(path)
        if resp.status_code == 429:
            return i
        assert resp.status_code == 200, f"unexpected {resp.status_code} before the limit"
    raise AssertionError(f"no 429 after {2 * limit + 1} requests with a limit of {limit} a minute")


def test_429_past_a_small_limit(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=5)
    keys = fetch_keys(sb)
    with api(sb, keys.a_rw) as c, api(sb, keys.a_read) as other:
        before = _first_429(c, "/campaigns", 5)
        assert before >= 5, f"part 8: {before} requests allowed, the limit is 5 a minute"
        again = c.post("/campaigns", json=valid_campaign_body())
        assert again.status_code == 429, "429 applies to all operations"
        retry_after = again.headers.get("Retry-After")
        assert retry_after is not None and retry_after.isdigit() and int(retry_after) > 0, (
            "sandbox README: 429 carries Retry-After in seconds"
        )
        assert other.get("/campaigns").status_code == 200, "the limit is per key"
    metrics = control_get(sb, "metrics")["data"]
    assert metrics["by_status"].get("429", 0) >= 2


def test_default_rate_limit_is_120_a_minute(make_sandbox: Callable[..., Any]) -> None:
    sb = make_sandbox(scale="tiny")
    keys = fetch_keys(sb)
    with api(sb, keys.a_rw) as c:
        before = _first_429(c, "/hooks/events", 120)
        assert before >= 120, f"part 8: 120 requests a minute are allowed, got 429 after {before}"
        assert c.get("/account").status_code == 429, "429 applies to all operations"
