"""POST /_sandbox/drift and the ignore_page fault, over HTTP, against the values sandbox/README.md documents."""

from __future__ import annotations

import copy
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sandbox_fingerprint import workspace_view

from sandbox.server import SandboxServer

# The documented drift (sandbox/README.md, "Drift"), written out here so the test checks the text, not the code.
CAMPAIGN_STATUS = {"draft": "in_review", "active": "running", "paused": "on_hold", "completed": "archived"}
RECIPIENT_STATUS = {
    "pending": "queued",
    "active": "in_progress",
    "sent": "delivered",
    "replied": "engaged",
    "bounced": "hard_bounced",
    "unsubscribed": "opted_out",
    "completed": "finished",
}
PROVIDER = {"google": "google_workspace", "microsoft": "microsoft_365", "smtp": "custom_smtp"}
NEW_FIELDS = {
    "account": {"features"},
    "campaign": {"priority", "owner"},
    "recipient": {"lead_score", "custom_fields"},
    "stats": {"benchmarks"},
    "reply": {"sentiment", "thread_id"},
    "mailbox": {"signature_enabled", "tracking_domain"},
}


def drifts(record_id: str) -> bool:
    return zlib.crc32(record_id.encode()) % 5 == 0


@pytest.fixture(scope="module")
def sb() -> Iterator[SandboxServer]:
    """small with 3 workspaces: some campaign of every status, mailbox and reply type falls in the drifting fifth."""
    with SandboxServer(scale="small", rate_limit=0, workspaces=3) as server:
        yield server


@pytest.fixture(autouse=True)
def _drift_off(sb: SandboxServer) -> Iterator[None]:
    yield
    sb.set_drift()
    sb.set_faults()


@pytest.fixture(scope="module")
def plain(sb: SandboxServer) -> list[dict[str, Any]]:
    return _views(sb)


def _views(sb: SandboxServer) -> list[dict[str, Any]]:
    keys = [k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin"]
    return [workspace_view(sb.base_url, key) for key in keys]


def _records(view: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        "campaign": view["campaigns"],
        "recipient": [r for rows in view["leads"].values() for r in rows],
        "stats": list(view["stats"].values()),
        "reply": view["replies"],
        "mailbox": view["mailboxes"],
        "account": [view["account"]],
    }


def _pairs(
    plain: list[dict[str, Any]], drifted: list[dict[str, Any]]
) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    for before, after in zip(plain, drifted, strict=True):
        a, b = _records(before), _records(after)
        for kind in a:
            assert len(a[kind]) == len(b[kind]), kind
            for x, y in zip(a[kind], b[kind], strict=True):
                yield kind, x, y


def test_new_fields_on_every_record_and_nothing_else_changes(sb: SandboxServer, plain: list[dict[str, Any]]) -> None:
    assert sb.set_drift(new_fields=True) == {"new_fields": True, "unknown_enums": False, "string_numbers": False}
    seen = set()
    for kind, before, after in _pairs(plain, _views(sb)):
        assert set(after) - set(before) == NEW_FIELDS[kind], kind
        if kind == "account":  # and one nested new field
            before = {**before, "workspace": {**before["workspace"], "timezone": "UTC"}}
        assert {k: after[k] for k in before} == before, kind
        seen.add(kind)
    assert seen == set(NEW_FIELDS)


def test_unknown_enum_values_on_a_stable_fifth_of_records(sb: SandboxServer, plain: list[dict[str, Any]]) -> None:
    sb.set_drift(unknown_enums=True)
    fields = {
        "campaign": ("status", CAMPAIGN_STATUS.get),
        "recipient": ("status", RECIPIENT_STATUS.get),
        "reply": ("reply_type", lambda v: v + "_v2"),
        "mailbox": ("provider", PROVIDER.get),
    }
    shown: dict[str, set[str]] = {kind: set() for kind in fields}
    count = {"recipient": 0, "drifted": 0}
    for kind, before, after in _pairs(plain, _views(sb)):
        if kind == "stats":  # the stats' campaign status drifts with its campaign
            camp = before["campaign"]
            want = CAMPAIGN_STATUS[camp["status"]] if drifts(camp["id"]) else camp["status"]
            assert after == {**before, "campaign": {**camp, "status": want}}
            continue
        if kind not in fields:
            assert after == before
            continue
        name, mapped = fields[kind]
        want = mapped(before[name]) if drifts(before["id"]) else before[name]
        assert after == {**before, name: want}, (kind, before["id"])
        if want != before[name]:
            shown[kind].add(want)
        if kind == "recipient":
            count["recipient"] += 1
            count["drifted"] += want != before[name]
    assert {"archived", "running"} <= shown["campaign"]
    assert {"hard_bounced", "engaged", "queued"} <= shown["recipient"]
    assert {"out_of_office_v2", "interested_v2"} <= shown["reply"]
    assert shown["mailbox"] == {"google_workspace"}
    assert 0.15 < count["drifted"] / count["recipient"] < 0.25
    again = _views(sb)  # the same records every time
    assert _views(sb) == again


def test_string_numbers_in_stats_totals_current_step_and_daily_limit(
    sb: SandboxServer, plain: list[dict[str, Any]]
) -> None:
    sb.set_drift(string_numbers=True)
    for kind, before, after in _pairs(plain, _views(sb)):
        expected = copy.deepcopy(before)
        if kind == "campaign":
            expected["stats"] = {k: str(v) for k, v in before["stats"].items()}
            assert all(isinstance(v, int) for v in before["stats"].values())
        elif kind == "stats":
            expected["totals"] = {k: str(v) for k, v in before["totals"].items()}
        elif kind == "recipient":
            expected["current_step"] = str(before["current_step"])
        elif kind == "mailbox":
            expected["daily_send_limit"] = str(before["daily_send_limit"])
        assert after == expected, kind
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {sb.keys()[0]['key']}"}) as c:
        meta = c.get("/campaigns", params={"per_page": 2}).json()["meta"]
    assert all(isinstance(v, int) for v in meta.values())  # paging stays numeric


def test_all_drift_together_then_off_gives_the_plain_responses(sb: SandboxServer, plain: list[dict[str, Any]]) -> None:
    sb.set_drift(new_fields=True, unknown_enums=True, string_numbers=True)
    drifted = _views(sb)
    assert drifted != plain
    assert drifted[0]["campaigns"][0]["stats"]["sent"] == str(plain[0]["campaigns"][0]["stats"]["sent"])
    assert sb.set_drift() == {"new_fields": False, "unknown_enums": False, "string_numbers": False}
    assert _views(sb) == plain
    assert httpx.get(sb.url + "/_sandbox/drift").json()["data"]["new_fields"] is False


def test_drift_settings_are_validated(sb: SandboxServer) -> None:
    bad = httpx.post(sb.url + "/_sandbox/drift", json={"new_fields": "yes", "string_number": True})
    assert bad.status_code == 422
    assert set(bad.json()["errors"]) == {"new_fields", "string_number"}
    assert httpx.get(sb.url + "/_sandbox/drift").json()["data"] == {
        "new_fields": False,
        "unknown_enums": False,
        "string_numbers": False,
    }


def test_drift_reaches_write_responses_too(make_sandbox: Any) -> None:
    tiny = make_sandbox(scale="tiny", rate_limit=0)
    tiny.set_drift(string_numbers=True, new_fields=True)
    key = next(k["key"] for k in tiny.keys() if k["level"] == "rw" and k["role"] == "admin")
    with httpx.Client(base_url=tiny.base_url, headers={"Authorization": f"Bearer {key}"}) as c:
        made = c.post("/campaigns", json={"name": "Drift", "subject_lines": ["Hi"], "email_bodies": ["Hello"]})
        assert made.status_code == 201
        data = made.json()["data"]
        assert data["stats"]["total_leads"] == "0" and "owner" in data
        refused = c.post(f"/campaigns/{data['id']}/launch")  # errors keep their documented body
        assert refused.status_code == 422 and set(refused.json()) == {"message", "errors", "blockers"}


def test_ignore_page_answers_page_one_whatever_page_asks(sb: SandboxServer) -> None:
    key = next(k["key"] for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {key}"}) as c:
        campaign = c.get("/campaigns", params={"per_page": 100}).json()["data"][0]["id"]
        paths = {"/campaigns": 2, f"/campaigns/{campaign}/leads": 10, "/replies": 10}
        normal = {
            p: [c.get(p, params={"per_page": n, "page": page}).json() for page in (1, 2)] for p, n in paths.items()
        }
        for first, second in normal.values():
            assert second["meta"]["current_page"] == 2 and second["data"] != first["data"]
        assert sb.set_faults(ignore_page=True)["ignore_page"] is True
        assert httpx.get(sb.url + "/_sandbox/faults").json()["data"]["ignore_page"] is True
        for path, n in paths.items():
            for page in (2, 3, 99):
                got = c.get(path, params={"per_page": n, "page": page}).json()
                assert got == normal[path][0], (path, page)  # page 1's data and meta (current_page 1)
        sb.set_faults()
        assert c.get("/campaigns", params={"per_page": 2, "page": 2}).json() == normal["/campaigns"][1]
    bad = httpx.post(sb.url + "/_sandbox/faults", json={"ignore_page": "yes"})
    assert bad.status_code == 422 and "ignore_page" in bad.json()["errors"]
