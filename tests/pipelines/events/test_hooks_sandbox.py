"""Real signed deliveries from a sandbox to the running receiver, and the `outreach hooks` CLI."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_hooks_support import event_rows, load, make_pipeline
from typer.testing import CliRunner

from flows.cli import app
from pipelines.events.loading import event_bodies_for, replied_events_from_pipeline, spool
from receiver.server import ReceiverServer

runner = CliRunner()


def _cli(*args: str) -> Any:
    return runner.invoke(app, ["hooks", *args])


def _wait_deliveries(sb: Any, timeout: float = 30.0) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout
    while True:
        body = httpx.get(f"{sb.url}/_sandbox/hooks/deliveries").json()
        if body["pending"] == 0 or time.monotonic() > deadline:
            return list(body["data"])
        time.sleep(0.1)


def _all_replies(sb: Any, key: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {key}"}) as client:
        page = 1
        while True:
            body = client.get("/replies", params={"per_page": 100, "page": page}).json()
            out += body["data"]
            if page >= body["meta"]["last_page"]:
                return out
            page += 1


@pytest.fixture
def world(make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    # subscriptions are recorded beside the configured warehouse: keep that in tmp, not in ./data
    monkeypatch.setenv("SOURCES__OUTREACH__DUCKDB_PATH", str(tmp_path / "outreach.duckdb"))
    sb = make_sandbox(scale="tiny", insecure_hooks=True, rate_limit=0)
    keys = sb.keys()
    admin = next(k for k in keys if k["level"] == "rw" and k["role"] == "admin")
    read_only = next(k for k in keys if k["level"] == "read" and k["workspace_id"] == admin["workspace_id"])
    secrets = {admin["workspace_id"]: admin["signing_secret"]}
    with ReceiverServer(signing_secret=secrets, spool_dir=tmp_path / "spool") as receiver:
        yield {"sb": sb, "admin": admin, "read": read_only, "receiver": receiver, "spool": tmp_path / "spool"}


def test_cli_and_real_deliveries_land_exactly_once_with_bodies(world: dict[str, Any], tmp_path: Path) -> None:
    sb, admin, receiver = world["sb"], world["admin"], world["receiver"]
    api = ["--base-url", sb.base_url, "--api-key", admin["key"]]

    listed = _cli("events", *api)
    assert listed.exit_code == 0, listed.output
    assert [line.split("\t")[0] for line in listed.output.splitlines()] == list(spool.EVENT_KEYS)

    subscribed = _cli("subscribe", "--target", receiver.url, *api)
    assert subscribed.exit_code == 0, subscribed.output
    subs = {line.split("\t")[1]: line.split("\t")[0] for line in subscribed.output.splitlines()}
    assert set(subs) == set(spool.EVENT_KEYS)

    sb.advance(6 * 3600)
    deliveries = [d for d in _wait_deliveries(sb) if d["target"] == receiver.url]
    assert deliveries and all(d["status"] == "delivered" for d in deliveries), {d["status"] for d in deliveries}
    assert any(d["event"] == "lead.replied" for d in deliveries)

    assert load(tmp_path, world["spool"]) == len({spool.event_id_for(d["payload"]) for d in deliveries})
    rows = event_rows(tmp_path, "event_id, event, workspace_id")
    assert {r[0] for r in rows} == {spool.event_id_for(d["payload"]) for d in deliveries}
    assert {r[2] for r in rows} == {admin["workspace_id"]}  # the matching secret names the workspace

    # lead.replied events carry the same body GET /replies/{id} returns.
    events = replied_events_from_pipeline(make_pipeline(tmp_path))
    replies = _all_replies(sb, admin["key"])
    bodies = event_bodies_for(replies, events)
    assert len(bodies) == len(events) == sum(d["event"] == "lead.replied" for d in deliveries)
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {admin['key']}"}) as client:
        for reply_id, body in bodies.items():
            assert client.get(f"/replies/{reply_id}").json()["data"]["body"] == body

    # Unsubscribe one event: later activity sends none of it to us.
    gone = _cli("unsubscribe", subs["lead.opened"], *api)
    assert gone.exit_code == 0 and subs["lead.opened"] in gone.output, gone.output
    before = len(deliveries)
    sb.advance(6 * 3600)
    later = [d for d in _wait_deliveries(sb) if d["target"] == receiver.url][before:]
    assert later and "lead.opened" not in {d["event"] for d in later}
    assert all(d["subscription_id"] != subs["lead.opened"] for d in later)


def test_cli_errors_are_one_line_and_non_zero(world: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    sb, receiver = world["sb"], world["receiver"]
    # Without flags, settings come from dlt config (env here), as for `outreach sync`.
    monkeypatch.setenv("SOURCES__OUTREACH__BASE_URL", sb.base_url)
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEY", world["read"]["key"])
    listed = _cli("events")
    assert listed.exit_code == 0 and "lead.replied\tA recipient replied" in listed.output, listed.output
    refused = _cli(
        "subscribe",
        "--target",
        receiver.url,
        "--event",
        "lead.replied",
        "--base-url",
        sb.base_url,
        "--api-key",
        world["read"]["key"],
    )
    assert refused.exit_code != 0
    assert "403" in refused.output and len(refused.output.strip().splitlines()) == 1
    assert world["read"]["key"] not in refused.output
    missing = _cli(
        "unsubscribe",
        "00000000-0000-0000-0000-000000000000",
        "--base-url",
        sb.base_url,
        "--api-key",
        world["admin"]["key"],
    )
    assert missing.exit_code != 0 and "404" in missing.output
    bad_event = _cli(
        "subscribe",
        "--target",
        receiver.url,
        "--event",
        "lead.teleported",
        "--base-url",
        sb.base_url,
        "--api-key",
        world["admin"]["key"],
    )
    # refused against the service's list of events, before any subscription is made
    assert bad_event.exit_code != 0 and bad_event.output.startswith("error: --event lead.teleported: not an event ")
    assert len(bad_event.output.strip().splitlines()) == 1


def test_sync_loads_the_spool_and_takes_reply_bodies_from_events(world: dict[str, Any], tmp_path: Path) -> None:
    from pipelines.sync.edge import run_sync

    sb, admin, receiver = world["sb"], world["admin"], world["receiver"]
    duckdb_path = tmp_path / "sync.duckdb"
    common: dict[str, Any] = {
        "api_keys": [admin["key"]],
        "base_url": sb.base_url,
        "duckdb_path": duckdb_path,
        "spool_dir": world["spool"],
        "progress": False,
        "pipelines_dir": str(tmp_path / "dlt-sync"),
        "rate_limit_per_minute": 0,  # the sandbox has no limit; do not pace
    }
    run_sync(mode="full", **common)  # the baseline: every reply so far, with its body from the API
    subscribed = _cli(
        "subscribe",
        "--target",
        receiver.url,
        "--event",
        "lead.replied",
        "--base-url",
        sb.base_url,
        "--api-key",
        admin["key"],
    )
    assert subscribed.exit_code == 0, subscribed.output
    sb.advance(6 * 3600)
    new = [d for d in _wait_deliveries(sb) if d["target"] == receiver.url]
    assert new and all(d["status"] == "delivered" for d in new)

    sb.reset_metrics()
    report = run_sync(mode="quick", **common)
    assert report.events_loaded == len(new)
    by_route = sb.metrics()["by_route"]
    ws = report.workspaces[0]
    assert ws.bodies_from_events == len(new)
    assert by_route.get("GET /replies/{id}", 0) == ws.bodies_fetched == 0, by_route

    import duckdb

    with duckdb.connect(str(duckdb_path), read_only=True) as con:
        stored = dict(con.execute("select id, body from outreach.replies where body is not null").fetchall())
    with httpx.Client(base_url=sb.base_url, headers={"Authorization": f"Bearer {admin['key']}"}) as client:
        for reply in _all_replies(sb, admin["key"]):
            assert stored.get(reply["id"]) == client.get(f"/replies/{reply['id']}").json()["data"]["body"], reply["id"]
