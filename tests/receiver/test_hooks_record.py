"""`outreach hooks subscribe` records what it made, `hooks list` shows it, `unsubscribe` updates it (the
API cannot list subscriptions). Against a real sandbox over HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app
from pipelines.api.hooks_admin import record_path

runner = CliRunner()


def _cli(*args: str) -> Any:
    return runner.invoke(app, ["hooks", *args])


def test_subscriptions_are_recorded_listed_and_marked_deleted(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = sb.keys()
    admin = next(k for k in keys if k["level"] == "rw" and k["role"] == "admin")
    other = next(
        k for k in keys if k["level"] == "rw" and k["role"] == "admin" and k["workspace_id"] != admin["workspace_id"]
    )
    warehouse = tmp_path / "wh" / "team.duckdb"
    record = record_path(warehouse)
    assert record == tmp_path / "wh" / "team_hooks.json"
    target = "https://hooks.example.com/outreach"

    empty = _cli("list", "--duckdb", str(warehouse))
    assert empty.exit_code == 0 and empty.output.startswith(f"no subscriptions recorded in {record}")

    made = _cli(
        "subscribe",
        "--target",
        target,
        "--event",
        "lead.replied",
        "--event",
        "lead.bounced",
        "--base-url",
        sb.base_url,
        "--api-key",
        admin["key"],
        "--duckdb",
        str(warehouse),
    )
    assert made.exit_code == 0, made.output
    ids = {line.split("\t")[1]: line.split("\t")[0] for line in made.output.splitlines()}
    assert set(ids) == {"lead.replied", "lead.bounced"}
    theirs = _cli(
        "subscribe",
        "--target",
        target,
        "--event",
        "lead.opened",
        "--base-url",
        sb.base_url,
        "--api-key",
        other["key"],
        "--duckdb",
        str(warehouse),
    )
    assert theirs.exit_code == 0, theirs.output
    their_id = theirs.output.split("\t")[0]

    stored = json.loads(record.read_text())["subscriptions"]
    assert [(e["subscription_id"], e["event"], e["target"], e["workspace_id"], e["status"]) for e in stored] == [
        (ids["lead.replied"], "lead.replied", target, admin["workspace_id"], "active"),
        (ids["lead.bounced"], "lead.bounced", target, admin["workspace_id"], "active"),
        (their_id, "lead.opened", target, other["workspace_id"], "active"),
    ]
    assert all(e["workspace_name"] and e["created_at"] and e["base_url"] == sb.base_url for e in stored)
    text = record.read_text()
    assert all(k["key"] not in text and k["signing_secret"] not in text for k in keys)

    listed = _cli("list", "--duckdb", str(warehouse))
    assert listed.exit_code == 0
    rows = [line.split("\t") for line in listed.output.splitlines()]
    assert [(r[0], r[1], r[2]) for r in rows] == [(e["subscription_id"], e["event"], e["target"]) for e in stored]
    assert rows[2][3] == f"{stored[2]['workspace_name']} ({other['workspace_id']})"

    gone = _cli(
        "unsubscribe",
        ids["lead.bounced"],
        "--base-url",
        sb.base_url,
        "--api-key",
        admin["key"],
        "--duckdb",
        str(warehouse),
    )
    assert gone.exit_code == 0, gone.output
    listed = _cli("list", "--duckdb", str(warehouse))
    assert ids["lead.bounced"] not in listed.output and ids["lead.replied"] in listed.output
    everything = _cli("list", "--duckdb", str(warehouse), "--all")
    statuses = {line.split("\t")[0]: line.split("\t")[5] for line in everything.output.splitlines()}
    assert statuses == {ids["lead.replied"]: "active", ids["lead.bounced"]: "deleted", their_id: "active"}

    # deleted behind our back (another tool): unsubscribe finds it gone, and the record follows
    import httpx

    httpx.delete(f"{sb.base_url}/hooks/{ids['lead.replied']}", headers={"Authorization": f"Bearer {admin['key']}"})
    again = _cli(
        "unsubscribe",
        ids["lead.replied"],
        "--base-url",
        sb.base_url,
        "--api-key",
        admin["key"],
        "--duckdb",
        str(warehouse),
    )
    assert again.exit_code == 0 and "already gone on the service (404); marked deleted" in again.output
    # an id the record never held is still a one-line 404
    unknown = _cli(
        "unsubscribe",
        ids["lead.replied"],
        "--base-url",
        sb.base_url,
        "--api-key",
        admin["key"],
        "--duckdb",
        str(warehouse),
    )
    assert unknown.exit_code == 1 and "404" in unknown.output and len(unknown.output.strip().splitlines()) == 1
    final = {e["subscription_id"]: e["status"] for e in json.loads(record.read_text())["subscriptions"]}
    assert final == {ids["lead.replied"]: "gone", ids["lead.bounced"]: "deleted", their_id: "active"}


def test_the_record_follows_the_warehouse_setting(make_sandbox: Any, tmp_path: Path, monkeypatch: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    admin = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    monkeypatch.setenv("SOURCES__OUTREACH__DUCKDB_PATH", str(tmp_path / "x" / "outreach.duckdb"))
    monkeypatch.setenv("SOURCES__OUTREACH__BASE_URL", sb.base_url)
    monkeypatch.setenv("SOURCES__OUTREACH__API_KEY", admin["key"])
    made = _cli("subscribe", "--target", "https://h.example.com/w", "--event", "lead.clicked")
    assert made.exit_code == 0, made.output
    assert (tmp_path / "x" / "outreach_hooks.json").is_file()
    listed = _cli("list")
    assert listed.output.split("\t")[0] == made.output.split("\t")[0]


def test_a_refused_subscription_records_nothing(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    read = next(k for k in sb.keys() if k["level"] == "read")
    warehouse = tmp_path / "outreach.duckdb"
    refused = _cli(
        "subscribe",
        "--target",
        "https://h.example.com/w",
        "--base-url",
        sb.base_url,
        "--api-key",
        read["key"],
        "--duckdb",
        str(warehouse),
    )
    assert refused.exit_code == 1 and "403" in refused.output
    assert not record_path(warehouse).exists()


def test_a_misspelt_event_subscribes_none_and_a_repeated_one_once(make_sandbox: Any, tmp_path: Path) -> None:
    """The events given were posted one by one: a misspelt second one was refused by the service after the first was
    made (half a subscription, exit 1); one given twice made two subscriptions, so every delivery came twice."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    admin = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    warehouse = tmp_path / "outreach.duckdb"
    api = ["--base-url", sb.base_url, "--api-key", admin["key"], "--duckdb", str(warehouse)]
    target = ["--target", "https://h.example.com/w"]
    sb.reset_metrics()
    refused = _cli("subscribe", *target, "--event", "lead.replied", "--event", "lead.Opened", *api)
    assert refused.exit_code == 1 and refused.stderr.splitlines() == [
        "error: --event lead.Opened: not an event the service lists (lead.replied, lead.bounced, lead.unsubscribed, "
        "lead.opened, lead.clicked, campaign.completed); nothing was subscribed (`outreach hooks events` lists them)"
    ]
    assert not record_path(warehouse).exists()
    assert "POST /hooks" not in sb.metrics()["by_route"], sb.metrics()
    twice = _cli("subscribe", *target, "--event", "lead.replied", "--event", "lead.replied", *api)
    assert twice.exit_code == 0 and [line.split("\t")[1] for line in twice.output.splitlines()] == ["lead.replied"]


def test_an_id_that_is_no_subscription_id_is_refused_before_the_api_is_asked(make_sandbox: Any, tmp_path: Path) -> None:
    """The id goes into the URL's path: a blank one asked `DELETE /hooks/` and was said to be a wrong base URL (the
    service redirects it), and `../x` asked for another path."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    admin = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    api = ["--base-url", sb.base_url, "--api-key", admin["key"], "--duckdb", str(tmp_path / "outreach.duckdb")]
    sb.reset_metrics()
    for given in ("", "../../campaigns", "a" * 100):
        done = _cli("unsubscribe", given, *api)
        shown = given if len(given) <= 60 else given[:59] + "…"
        assert done.exit_code == 1 and done.stderr.splitlines() == [
            f"error: {shown!r} is not a subscription id (a UUID, as `outreach hooks list` shows them): check it"
        ], done.output
    assert sb.metrics()["requests"] == 0


def test_a_record_that_cannot_be_read_fails_before_the_api_is_asked(make_sandbox: Any, tmp_path: Path) -> None:
    """A record that was not JSON failed after POST /hooks: the subscription was made and nowhere recorded (the API
    cannot list them). JSON of another shape was read as no subscription, and the next one written over it."""
    sb = make_sandbox(scale="tiny", rate_limit=0)
    admin = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    warehouse = tmp_path / "outreach.duckdb"
    api = ["--base-url", sb.base_url, "--api-key", admin["key"], "--duckdb", str(warehouse)]
    path = record_path(warehouse)
    for text, says in (
        ("{broken", "is not valid JSON: fix or move it (it records webhook subscriptions)"),
        ('["mine"]', 'is not a record of webhook subscriptions (an object with a list of them under "subscriptions")'),
        ('{"subscriptions": [1]}', "is not a record of webhook subscriptions"),
    ):
        path.write_text(text)
        sb.reset_metrics()
        for command in (
            ["subscribe", "--target", "https://h.example.com/w", "--event", "lead.clicked"],
            ["unsubscribe", "some-id"],
            ["list"],
        ):
            done = _cli(*command, *(api if command[0] != "list" else api[-2:]))
            assert done.exit_code == 1 and f"{path} {says}" in done.output, (command, done.output)
        assert sb.metrics()["requests"] == 0 and path.read_text() == text


def test_the_record_is_beside_the_warehouse_as_every_command_reads_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`duckdb_path = "~/w.duckdb"` put the record in a folder named `~` beside the command (a subscription made from
    one folder was not listed from another), and `--duckdb "   "` named a file `   _hooks.json`."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("SOURCES__OUTREACH__DUCKDB_PATH", "~/wh/team.duckdb")
    monkeypatch.chdir(tmp_path)
    assert record_path() == tmp_path / "home" / "wh" / "team_hooks.json"
    listed = _cli("list")
    assert listed.exit_code == 0 and f"recorded in {tmp_path / 'home' / 'wh' / 'team_hooks.json'} " in listed.output
    blank = _cli("list", "--duckdb", "   ")
    assert blank.exit_code == 1 and blank.output.startswith("error: --duckdb is blank: give a path")
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing made beside the command
