"""Nothing lost between saving an incident and notifying it: a target that refuses leaves the notification owed
and a later evaluation delivers it exactly once; a target that took it never gets it twice; an evaluation
killed (SIGKILL, a real subprocess) while the notification is in flight leaves it owed, and the next run sends
it once. `outreach alerts` shows what is owed and why. On the small warehouse of test_alerts_rules.py, in
DuckDB and in a real PostgreSQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_alerts_rules import MB, SCHEMA, T0, WS
from typer.testing import CliRunner

from alerts import evaluate, resolve_alert_settings
from alerts.db import connect
from alerts.outbox import INTERRUPTED, owed, status
from alerts.store import DDL, TABLE, incident_id, list_incidents
from flows.cli import app
from pipelines.warehouse.destination import warehouse_target
from tests.alerts_support import Sink, sink

ROOT = Path(__file__).resolve().parents[2]
RULE = "warmup_health_low"
IID = incident_id(RULE, MB)
#: one evaluation of warmup_health_low in a process of its own: argv = DuckDB file or "postgres", service clock
EVALUATE = (
    "import sys; from datetime import datetime; from alerts import evaluate; "
    "from pipelines.warehouse.destination import warehouse_target; "
    "where = sys.argv[1]; w = warehouse_target(destination='postgres') if where == 'postgres' "
    "else warehouse_target(duckdb_path=where); "
    "run = evaluate(w, only=['warmup_health_low'], now=datetime.fromisoformat(sys.argv[2])); print(run.summary())"
)


class World:
    """The small warehouse of test_alerts_rules.py on one engine, where warmup_health_low finds mailbox MB."""

    def __init__(self, engine: str, tmp_path: Path) -> None:
        self.engine = engine
        self.path = tmp_path / "w.duckdb"
        if engine == "duckdb":
            duckdb.connect(str(self.path)).close()
            self.warehouse = warehouse_target(duckdb_path=self.path)
            self.where = str(self.path)
            self.option = ["--duckdb", str(self.path)]
        else:
            self.warehouse = warehouse_target(destination="postgres")
            self.where = "postgres"
            self.option = ["--destination", "postgres"]
        with connect(self.warehouse) as db:
            db.execute(SCHEMA.replace(" double,", f" {db.dialect.double},"))
            db.execute("insert into outreach.workspaces values (?, 'Acme', ?)", [WS, T0])
            db.execute(
                "insert into reporting.stg_email_account_history values (?, ?, 'ann@acme.test', 50, 10, 90, 70, "
                "true, true, ?, null)",
                [MB, WS, T0 - timedelta(days=1)],
            )

    def health(self, value: float) -> None:
        with connect(self.warehouse) as db:
            db.execute("update reporting.stg_email_account_history set warmup_health_score = ?", [value])

    def run(self, *targets: Sink) -> Any:
        settings = resolve_alert_settings(targets=[t.url for t in targets], notify_retries=0, notify_timeout_s=5.0)
        return evaluate(self.warehouse, settings=settings, only=[RULE], now=T0)

    def row(self) -> dict[str, Any]:
        with connect(self.warehouse) as db:
            (found,) = db.dicts("select * from reporting.alert_incidents where incident_id = ?", [IID])
        return found

    def listed(self) -> str:
        result = CliRunner().invoke(app, ["alerts", "--all", *self.option])
        assert result.exit_code == 0, result.output
        (line,) = [line for line in result.output.splitlines() if line.startswith(IID)]
        return line


@pytest.fixture(params=["duckdb", "postgres"])
def world(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    for name in [k for k in os.environ if k.startswith("ALERTS__")]:
        monkeypatch.delenv(name)
    if request.param == "postgres":
        monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", request.getfixturevalue("pg_credentials"))
    return World(request.param, tmp_path)


def test_a_refused_open_notification_is_owed_and_the_next_evaluation_delivers_it_once(world: World) -> None:
    with sink() as hook:
        hook.status = 500
        first = world.run(hook)
        assert len(first.opened) == 1 and (first.notified, first.owed) == (0, 1)
        assert hook.received == [] and hook.refused == 1
        row = world.row()
        assert row["notified_open_at"] is None and row["notify_attempts"] == 1
        assert row["notify_error"].startswith(f"json://127.0.0.1:{hook.port}/…: failed after 1 attempt(s)")
        assert "notification(s) owed" in first.summary()
        assert f"notified: no (1 attempt: json://127.0.0.1:{hook.port}/…: failed" in world.listed()

        hook.status = 200
        second = world.run(hook)  # the rule finds nothing new: the owed notification goes out
        assert second.opened == [] and (second.notified, second.owed) == (1, 0)
        assert hook.titles() == [f"[outreach] OPEN {RULE}: mailbox ann@acme.test"]
        assert world.row()["notified_open_at"] is not None and world.listed().endswith("notified: yes")
        listed = json.loads(CliRunner().invoke(app, ["alerts", "--json", *world.option]).output)
        assert [i["notified"] for i in listed] == ["yes"]

        third = world.run(hook)
        assert (third.notified, third.owed) == (0, 0) and len(hook.received) == 1


def test_a_target_that_took_it_never_gets_it_again_and_an_owed_open_goes_out_before_its_resolve(
    world: World,
) -> None:
    with sink() as good, sink() as flaky:
        flaky.status = 503
        assert world.run(good, flaky).owed == 1
        assert len(good.received) == 1 and flaky.refused == 1 and world.row()["notify_done"]
        world.health(95)  # the incident resolves while its open notification is still owed to `flaky`
        resolved = world.run(good, flaky)
        assert [i["incident_id"] for i in resolved.resolved] == [IID] and resolved.owed == 1
        assert good.titles() == [f"[outreach] OPEN {RULE}: mailbox ann@acme.test"]  # not sent there twice
        assert flaky.refused == 2  # tried once in that run; the resolve waits for the open
        assert world.listed().endswith("(2 attempts: " + world.row()["notify_error"] + ")")

        flaky.status = 200
        done = world.run(good, flaky)
        assert (done.notified, done.owed) == (2, 0)
        assert [t.split(":")[0] for t in flaky.titles()] == [
            "[outreach] OPEN warmup_health_low",
            "[outreach] RESOLVED warmup_health_low",
        ]
        assert good.titles("RESOLVED") == [f"[outreach] RESOLVED {RULE}: mailbox ann@acme.test"]
        assert len(good.received) == 2
        row = world.row()
        assert row["notified_open_at"] is not None and row["notified_resolved_at"] is not None
        assert world.run(good, flaky).notified == 0 and (len(good.received), len(flaky.received)) == (2, 2)


def test_a_killed_evaluation_leaves_its_notification_owed_and_the_next_run_sends_it_exactly_once(
    world: World,
) -> None:
    with sink() as hook:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ALERTS__", "PREFECT_API_URL"))}
        env.update({"ALERTS__TARGETS": json.dumps([hook.url]), "ALERTS__NOTIFY_RETRIES": "0"})
        env["ALERTS__NOTIFY_TIMEOUT_S"] = "120"
        argv = [sys.executable, "-c", EVALUATE, world.where, T0.isoformat()]
        hook.hold()  # the sink takes the request and never answers: delivery cannot complete
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert hook.holding.wait(120), "the evaluation never sent its notification"
            os.kill(proc.pid, signal.SIGKILL)  # after the save (the request is in flight), before an answer
        finally:
            proc.wait(30)
        hook.release()
        assert proc.returncode == -signal.SIGKILL and hook.received == []

        row = world.row()  # saved before anything was sent, and owed
        assert (row["state"], row["notified_open_at"], row["notify_attempts"]) == ("open", None, 1)
        assert row["notify_error"] == INTERRUPTED
        assert world.listed().endswith(f"notified: no (1 attempt: {INTERRUPTED})")

        again = world.run(hook)  # the next evaluation (here: only the kill needed a process of its own)
        assert again.opened == [] and (again.notified, again.owed) == (1, 0)  # only the owed notification
        assert hook.titles() == [f"[outreach] OPEN {RULE}: mailbox ann@acme.test"]
        assert world.row()["notified_open_at"] is not None and world.row()["notify_attempts"] == 2
        assert world.run(hook).notified == 0 and len(hook.received) == 1


def test_a_table_an_older_release_wrote_gains_the_outbox_and_only_what_it_never_notified_is_owed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create schema reporting")
        con.execute(DDL.format(outbox="", double="double", ts="timestamp"))  # the table without the outbox
        insert = (
            f"insert into {TABLE} (incident_id, rule, subject_type, subject_id, state, opened_at, updated_at, "
            "notified_open) values (?, 'sync_stale', 'workspace', ?, 'open', ?, ?, ?)"
        )
        con.execute(insert, ["told", "ws-1", T0, T0, "json://x/…: sent"])
        con.execute(insert, ["lost", "ws-2", T0, T0, None])  # saved, then the old release crashed
    with connect(warehouse_target(duckdb_path=path)) as db:
        rows = {r["incident_id"]: r for r in list_incidents(db)}
        assert {c for c in rows["told"] if c.startswith("notif")} >= {"notified_open_at", "notify_error"}
        assert [r["incident_id"] for r in owed(db)] == ["lost"]
    assert status(rows["told"]) == "notified: yes" and status(rows["lost"]) == "notified: no (not tried yet)"


def test_an_incident_settled_with_no_target_says_nobody_was_notified(world: World) -> None:
    """With no target set, the notification is settled (a target set later replays nothing), but nobody was told:
    `outreach alerts` said `notified: yes` (and --json `"notified": "yes"`)."""
    first = world.run()
    assert len(first.opened) == 1 and (first.notified, first.owed, first.untold) == (0, 0, 1)
    assert first.summary().endswith("; 1 notification(s) sent nowhere: no targets are set ([alerts] targets)")
    assert world.row()["notified_open"] == "no targets"
    said = "no (no targets were set: [alerts] targets; one set later is not sent this)"
    assert world.listed().endswith(f"notified: {said}")
    listed = json.loads(CliRunner().invoke(app, ["alerts", "--json", *world.option]).output)
    assert [i["notified"] for i in listed] == [said]
    with sink() as hook:  # a target set later: the settled notification is not sent, the line says so still
        assert world.run(hook).notified == 0 and hook.received == []
    assert world.listed().endswith(f"notified: {said}")
