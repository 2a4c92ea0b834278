"""Nothing lost between saving an incident and notifying it: a target that refuses leaves the notification owed
and a later evaluation delivers it exactly once; a target that took it never gets it twice; an evaluation
killed (SIGKILL, a real subprocess) while the notification is in flight leaves it owed, and the next run sends
it once. `outreach alerts` shows what is owed and why. On the small DuckDB warehouse of test_alerts_rules.py."""

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
from typer.testing import CliRunner

from alerts import evaluate, resolve_alert_settings
from alerts.outbox import INTERRUPTED
from alerts.store import incident_id
from flows.cli import app
from pipelines.destination import warehouse_target
from tests.alerts_support import Sink, sink
from tests.test_alerts_rules import MB, SCHEMA, T0, WS

ROOT = Path(__file__).resolve().parents[1]
RULE = "warmup_health_low"
IID = incident_id(RULE, MB)
#: one evaluation of warmup_health_low in a process of its own: argv = warehouse, service clock
EVALUATE = (
    "import sys; from datetime import datetime; from alerts import evaluate; "
    "from pipelines.destination import warehouse_target; "
    "run = evaluate(warehouse_target(duckdb_path=sys.argv[1]), only=['warmup_health_low'], "
    "now=datetime.fromisoformat(sys.argv[2])); print(run.summary())"
)


def _warehouse(tmp_path: Path, health: float = 70) -> Path:
    """A warehouse where warmup_health_low finds mailbox MB (health below 80)."""
    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("set TimeZone = 'UTC'")
        con.execute(SCHEMA)
        con.execute("insert into outreach.workspaces values (?, 'Acme', ?)", [WS, T0])
        con.execute(
            "insert into reporting.stg_email_account_history values (?, ?, 'ann@acme.test', 50, 10, 90, ?, true, "
            "true, ?, null)",
            [MB, WS, health, T0 - timedelta(days=1)],
        )
    return path


def _health(path: Path, value: float) -> None:
    with duckdb.connect(str(path)) as con:
        con.execute("update reporting.stg_email_account_history set warmup_health_score = ?", [value])


def _run(path: Path, *targets: Sink) -> Any:
    settings = resolve_alert_settings(targets=[t.url for t in targets], notify_retries=0, notify_timeout_s=5.0)
    return evaluate(warehouse_target(duckdb_path=path), settings=settings, only=[RULE], now=T0)


def _row(path: Path) -> dict[str, Any]:
    with duckdb.connect(str(path)) as con:
        cur = con.execute("select * from reporting.alert_incidents where incident_id = ?", [IID])
        names = [d[0] for d in cur.description]
        return dict(zip(names, cur.fetchone() or (), strict=True))


def _listed(path: Path) -> str:
    result = CliRunner().invoke(app, ["alerts", "--all", "--duckdb", str(path)])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith(IID)]
    return line


def test_a_refused_open_notification_is_owed_and_the_next_evaluation_delivers_it_once(tmp_path: Path) -> None:
    path = _warehouse(tmp_path)
    with sink() as hook:
        hook.status = 500
        first = _run(path, hook)
        assert len(first.opened) == 1 and (first.notified, first.owed) == (0, 1)
        assert hook.received == [] and hook.refused == 1
        row = _row(path)
        assert row["notified_open_at"] is None and row["notify_attempts"] == 1
        assert row["notify_error"].startswith(f"json://127.0.0.1:{hook.port}/…: failed after 1 attempt(s)")
        assert "notification(s) owed" in first.summary()
        assert f"notified: no (1 attempt: json://127.0.0.1:{hook.port}/…: failed" in _listed(path)

        hook.status = 200
        second = _run(path, hook)  # the rule finds nothing new: the owed notification goes out
        assert second.opened == [] and (second.notified, second.owed) == (1, 0)
        assert hook.titles() == [f"[outreach] OPEN {RULE}: mailbox ann@acme.test"]
        assert _row(path)["notified_open_at"] is not None and _listed(path).endswith("notified: yes")
        listed = json.loads(CliRunner().invoke(app, ["alerts", "--json", "--duckdb", str(path)]).output)
        assert [i["notified"] for i in listed] == ["yes"]

        third = _run(path, hook)
        assert (third.notified, third.owed) == (0, 0) and len(hook.received) == 1


def test_a_target_that_took_it_never_gets_it_again_and_an_owed_open_goes_out_before_its_resolve(
    tmp_path: Path,
) -> None:
    path = _warehouse(tmp_path)
    with sink() as good, sink() as flaky:
        flaky.status = 503
        assert _run(path, good, flaky).owed == 1
        assert len(good.received) == 1 and flaky.refused == 1 and _row(path)["notify_done"]
        _health(path, 95)  # the incident resolves while its open notification is still owed to `flaky`
        resolved = _run(path, good, flaky)
        assert [i["incident_id"] for i in resolved.resolved] == [IID] and resolved.owed == 1
        assert good.titles() == [f"[outreach] OPEN {RULE}: mailbox ann@acme.test"]  # not sent there twice
        assert flaky.refused == 2  # tried once in that run; the resolve waits for the open
        assert _listed(path).endswith("(2 attempts: " + _row(path)["notify_error"] + ")")

        flaky.status = 200
        done = _run(path, good, flaky)
        assert (done.notified, done.owed) == (2, 0)
        assert [t.split(":")[0] for t in flaky.titles()] == [
            "[outreach] OPEN warmup_health_low",
            "[outreach] RESOLVED warmup_health_low",
        ]
        assert good.titles("RESOLVED") == [f"[outreach] RESOLVED {RULE}: mailbox ann@acme.test"]
        assert len(good.received) == 2
        row = _row(path)
        assert row["notified_open_at"] is not None and row["notified_resolved_at"] is not None
        assert _run(path, good, flaky).notified == 0 and (len(good.received), len(flaky.received)) == (2, 2)


def test_a_killed_evaluation_leaves_its_notification_owed_and_the_next_run_sends_it_exactly_once(
    tmp_path: Path,
) -> None:
    path = _warehouse(tmp_path)
    with sink() as hook:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ALERTS__", "PREFECT_API_URL"))}
        env.update({"ALERTS__TARGETS": json.dumps([hook.url]), "ALERTS__NOTIFY_RETRIES": "0"})
        env["ALERTS__NOTIFY_TIMEOUT_S"] = "120"
        argv = [sys.executable, "-c", EVALUATE, str(path), T0.isoformat()]
        hook.hold()  # the sink takes the request and never answers: delivery cannot complete
        proc = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            assert hook.holding.wait(120), "the evaluation never sent its notification"
            os.kill(proc.pid, signal.SIGKILL)  # after the save (the request is in flight), before an answer
        finally:
            proc.wait(30)
        hook.release()
        assert proc.returncode == -signal.SIGKILL and hook.received == []

        row = _row(path)  # saved before anything was sent, and owed
        assert (row["state"], row["notified_open_at"], row["notify_attempts"]) == ("open", None, 1)
        assert row["notify_error"] == INTERRUPTED
        assert _listed(path).endswith(f"notified: no (1 attempt: {INTERRUPTED})")

        again = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert "0 opened" in again.stdout  # the incident was already open: only its owed notification went out
        assert hook.titles() == [f"[outreach] OPEN {RULE}: mailbox ann@acme.test"]
        assert _row(path)["notified_open_at"] is not None and _row(path)["notify_attempts"] == 2
        assert subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, timeout=300).returncode == 0
        assert len(hook.received) == 1
