"""The warehouse `outreach alerts` opens: a file that is not a DuckDB database is refused in one line. DuckDB
attaches a CSV file as a catalog of its rows, so `--duckdb notes.csv` said "no open incidents" (exit 0): a list
of no incidents from a file that holds none of our tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

OUTREACH = str(Path(sys.executable).with_name("outreach"))


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("csv", "{path} is not a DuckDB database file: pass the warehouse the sync writes (--duckdb PATH), or move "
                "this file away and run `outreach sync`"),
        ("directory", "warehouse {path} is a directory: pass the DuckDB file (--duckdb PATH)"),
    ],
)  # fmt: skip
def test_a_path_that_is_not_a_duckdb_file_is_refused(kind: str, said: str, tmp_path: Path) -> None:
    path = tmp_path / "notes.csv"
    if kind == "csv":
        path.write_text("id,name\n1,hello\n")
    else:
        path.mkdir()
    for args in (["alerts"], ["alerts", "--all", "--json"], ["alerts", "ack", "no-such-id"]):
        done = subprocess.run(
            [OUTREACH, *args, "--duckdb", str(path)], capture_output=True, text=True, timeout=120, check=False
        )
        assert (done.returncode, done.stdout) == (1, ""), (args, done)
        assert done.stderr.splitlines() == ["error: " + said.format(path=path)], args
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.csv"]
    if kind == "csv":
        assert path.read_text() == "id,name\n1,hello\n"


def test_a_spool_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """Read as "no spool yet", its events were never loaded and the rule ran on what the warehouse had."""
    spool = tmp_path / "spool.txt"
    spool.write_text("not a spool")
    done = subprocess.run(
        [OUTREACH, "alerts", "replies", "--spool", str(spool), "--duckdb", str(tmp_path / "w.duckdb")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"error: the webhook spool {spool} is a file, not a directory: set spool_dir (--spool) to the directory "
        "`outreach hooks listen` writes"
    ]


def test_rules_that_never_ran_are_not_said_to_have_found_nothing(tmp_path: Path) -> None:
    """Before the first model build there is no incident table: the list said "no open incidents", as if the rules
    had run and found nothing."""
    import duckdb

    from alerts.db import connect
    from alerts.store import ensure_table
    from pipelines.warehouse.destination import Warehouse

    warehouse = tmp_path / "w.duckdb"
    duckdb.connect(str(warehouse)).close()

    def listed(*args: str) -> str:
        done = subprocess.run([OUTREACH, "alerts", *args, "--duckdb", str(warehouse)], capture_output=True, text=True,
                              timeout=120, check=False)  # fmt: skip
        assert (done.returncode, done.stderr) == (0, ""), done
        return done.stdout

    assert listed() == listed("--all") == "no incidents yet: the rules run after each model build (`outreach models`)\n"
    assert listed("--json") == "[]\n"
    with connect(Warehouse("duckdb", warehouse)) as db:
        ensure_table(db)
    assert (listed(), listed("--all")) == ("no open incidents\n", "no incidents\n")


def test_an_acknowledgement_waits_for_a_running_sync(tmp_path: Path) -> None:
    """`alerts ack` wrote beside a running sync or build: DuckDB's lock error ("Could not set lock on file"), or,
    in a gap of the build's, a write that the build's evaluation of the rules could write over."""
    import threading
    import time

    import duckdb

    from pipelines.warehouse.destination import Warehouse
    from pipelines.warehouse.lock import warehouse_writer

    warehouse = tmp_path / "w.duckdb"
    duckdb.connect(str(warehouse)).close()
    held, release = threading.Event(), threading.Event()

    def sync() -> None:
        with warehouse_writer(Warehouse("duckdb", warehouse), what="sync"):
            held.set()
            release.wait(60)

    holder = threading.Thread(target=sync)
    holder.start()
    try:
        assert held.wait(30)
        threading.Timer(3.0, release.set).start()
        started = time.monotonic()
        done = subprocess.run([OUTREACH, "alerts", "ack", "nope", "--duckdb", str(warehouse)], capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
    finally:
        release.set()
        holder.join(30)
    lines = done.stderr.splitlines()
    assert done.returncode == 1 and len(lines) == 2, done
    assert lines[0].startswith("waiting for the sync started at ") and time.monotonic() - started >= 3.0
    assert lines[1] == "error: no incident nope: `outreach alerts --all` lists them"


def test_the_speed_to_lead_check_before_a_build_fails_saying_to_build_and_says_it_once(tmp_path: Path) -> None:
    """Its one rule could not run (no reporting tables yet): it said so in DuckDB's words ("CatalogException: ...
    stg_replies does not exist"), a second time as a log line, and exited 0, so a scheduler saw nothing wrong."""
    from devtools.synthetic import make_raw_warehouse

    warehouse = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    (tmp_path / "spool").mkdir()
    done = subprocess.run(
        [OUTREACH, "alerts", "replies", "--spool", str(tmp_path / "spool"), "--duckdb", str(warehouse)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (1, ""), done
    assert done.stdout.splitlines() == [
        "0 event(s) loaded; alerts: 0 opened, 0 resolved, 0 in breach (0 rules); rules that failed: "
        "positive_reply_waiting: no reporting.stg_replies here yet: build the models first (`outreach models`)"
    ]


def test_the_warehouse_given_before_a_command_is_the_one_it_acts_on(tmp_path: Path, monkeypatch: Any) -> None:
    """`outreach alerts --duckdb W ack ID`: the command read only its own --duckdb, so it acted on the default
    warehouse (the guard paused on another warehouse's incidents); --json and --all did nothing, unsaid. And
    `alerts replies` made its lock file (and the folders to it) beside any path before it read it."""
    from typer.testing import CliRunner

    from flows.cli import app

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "notes.csv"
    path.write_text("id,name\n1,hello\n")
    said = (
        f"error: {path} is not a DuckDB database file: pass the warehouse the sync writes (--duckdb PATH), or move "
        "this file away and run `outreach sync`"
    )
    for command in (["ack", "no-such-id"], ["guard", "--dry-run"], ["replies"]):
        done = CliRunner().invoke(app, ["alerts", "--duckdb", str(path), *command])
        assert (done.exit_code, done.stdout) == (1, ""), (command, done.output)
        assert done.stderr.splitlines() == [said], command
    # nor a lock file (nor its folder) beside a path that holds no warehouse, as every other command leaves none
    missing = tmp_path / "sub" / "none.duckdb"
    done = CliRunner().invoke(app, ["alerts", "replies", "--duckdb", str(missing)])
    assert done.exit_code == 1 and done.stderr.splitlines() == [
        f"error: warehouse {missing} does not exist: run `outreach sync` first (or pass --duckdb PATH)"
    ]
    done = CliRunner().invoke(app, ["alerts", "--json", "ack", "no-such-id"])
    assert done.exit_code == 1 and done.stderr.splitlines() == [
        "error: --json and --all list incidents: leave them out of `outreach alerts ack`"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.csv"]


def test_the_guard_pauses_the_object_its_incident_names_and_no_other(make_sandbox: Any, tmp_path: Path) -> None:
    """The subject's id went into the request's path as it was: a `/` or `..` in it (an id the API sent malformed)
    named another object, and `POST /campaigns/../email-accounts/<id>/pause` paused a mailbox."""
    from datetime import UTC, datetime

    import duckdb
    import httpx

    from alerts.db import connect
    from alerts.store import TABLE, ensure_table
    from pipelines.warehouse.destination import Warehouse

    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    admin = next(k for k in sb.keys() if k["level"] == "rw" and k["role"] == "admin")
    auth = {"Authorization": f"Bearer {admin['key']}"}
    mailbox = httpx.get(f"{sb.base_url}/email-accounts", headers=auth).json()["data"][0]["id"]
    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("create schema outreach")  # the sync's, where the guard records its actions
    now = datetime.now(UTC)
    with connect(Warehouse("duckdb", warehouse)) as db:
        ensure_table(db)
        db.execute(
            f"insert into {TABLE} (incident_id, rule, workspace_id, subject_type, subject_id, state, opened_at, value, "
            "threshold) values ('i1', 'campaign_bounce_rate', ?, 'campaign', ?, 'open', ?, 0.2, 0.02)",
            [admin["workspace_id"], f"../email-accounts/{mailbox}", now],
        )
    sb.reset_metrics()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__OUTREACH__", "ALERTS__"))}
    done = subprocess.run(
        [OUTREACH, "alerts", "guard", "--duckdb", str(warehouse)], capture_output=True, text=True, timeout=120,
        env={**env, "ALERTS__AUTO_PAUSE": "true", "SOURCES__OUTREACH__BASE_URL": sb.base_url,
             "SOURCES__OUTREACH__API_KEY": admin["key"]},
        check=False,
    )  # fmt: skip
    routes = sb.metrics()["by_route"]
    assert routes.get("GET /account") == 1 and "(404)" in done.stdout, (routes, done.stdout, done.stderr)  # it asked
    assert "POST /email-accounts/{id}/pause" not in routes, (routes, done.stdout, done.stderr)
    assert httpx.get(f"{sb.base_url}/email-accounts/{mailbox}", headers=auth).json()["data"]["is_active"] is True


def test_a_name_from_the_service_is_shown_on_one_line_that_moves_nothing(tmp_path: Path) -> None:
    """Names are the service's: a campaign named with a newline and an escape sequence printed a line of its own
    and cleared the terminal in `outreach alerts`. The warehouse keeps the name as it came."""
    import duckdb

    from alerts.db import connect
    from alerts.store import TABLE, ensure_table
    from pipelines.warehouse.destination import Warehouse

    warehouse = tmp_path / "w.duckdb"
    duckdb.connect(str(warehouse)).close()
    name = "Q1\n0badc0ffee  open  all clear\x1b[2J\x1b]0;pwned\x07 — café"
    with connect(Warehouse("duckdb", warehouse)) as db:
        ensure_table(db)
        db.execute(
            f"insert into {TABLE} (incident_id, rule, workspace_id, subject_type, subject_id, subject_label, state, "
            "value, threshold, opened_at) values ('i1', 'campaign_bounce_rate', 'w', 'campaign', 'c', ?, 'open', "
            "0.2, 0.02, now())",
            [name],
        )
    done = subprocess.run([OUTREACH, "alerts", "--duckdb", str(warehouse)], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1, done.stdout
    assert "campaign Q1\\x0a0badc0ffee  open  all clear\\x1b[2J\\x1b]0;pwned\\x07 — café: " in done.stdout
    assert "\x1b" not in done.stdout
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute(f"select subject_label from {TABLE}").fetchone() == (name,)
