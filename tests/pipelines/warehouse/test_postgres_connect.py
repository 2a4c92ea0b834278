"""A PostgreSQL warehouse that cannot be connected to: `sync`, `status` and `models` each say so in one line,
with libpq's reason and where to fix it, and never the password; `check` says it as one of its problems, and
of a server it can reach, whether the first sync may create its schema there."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from test_sync_support import admin_keys
from typer.testing import CliRunner

from flows.cli import app

PASSWORD = "s3cret-pw"


def _key_args(sandbox: Any) -> list[str]:
    return ["--api-key", admin_keys(sandbox)[0]]


#: a role the test server asks a password of (its other roles are trusted), and that password
PASSWORD_ROLE, RIGHT_PASSWORD = "pw_user", "the-right-pw"


def _password_role(pg_server: Any) -> str:
    """`PASSWORD_ROLE`, which must give RIGHT_PASSWORD (scram-sha-256) on the session's server."""
    hba = Path(pg_server.data) / "pg_hba.conf"
    line = f"host all {PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\n"
    if line not in hba.read_text():
        hba.write_text(line + hba.read_text())  # the first matching line applies
        pg_server.psql(f"drop role if exists {PASSWORD_ROLE}")
        pg_server.psql(f"create role {PASSWORD_ROLE} login password '{RIGHT_PASSWORD}'")
        pg_server.psql("select pg_reload_conf()")
    dsn = f"postgresql://{PASSWORD_ROLE}:{{}}@127.0.0.1:{pg_server.port}/postgres"
    deadline = time.monotonic() + 10
    while True:  # the server reads the file again after the signal: until then the role is trusted
        try:
            psycopg2.connect(dsn.format(PASSWORD)).close()
        except psycopg2.OperationalError:
            break
        assert time.monotonic() < deadline, "the server never asked the role's password"
        time.sleep(0.1)
    psycopg2.connect(dsn.format(RIGHT_PASSWORD)).close()
    return PASSWORD_ROLE


@pytest.mark.parametrize("case", ["no such database", "nothing listening", "wrong password"])
def test_each_command_names_the_reason_and_the_setting_to_fix(
    case: str, pg_server: Any, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    user, port, database, reason = {
        "no such database": ("postgres", pg_server.port, "no_such_db", 'database "no_such_db" does not exist'),
        "nothing listening": ("postgres", 1, "postgres", "Connection refused"),
        "wrong password": (
            _password_role(pg_server),
            pg_server.port,
            "postgres",
            f'password authentication failed for user "{PASSWORD_ROLE}"',
        ),
    }[case]
    monkeypatch.setenv("SOURCES__OUTREACH__DESTINATION", "postgres")
    monkeypatch.setenv(
        "DESTINATION__POSTGRES__CREDENTIALS", f"postgresql://{user}:{PASSWORD}@127.0.0.1:{port}/{database}"
    )
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    keys = _key_args(sandbox)
    for command in (["sync", "--base-url", sandbox.base_url, "--no-progress", *keys], ["status"], ["models"]):
        result = CliRunner().invoke(app, command)
        out = result.output.strip()
        assert result.exit_code == 1, (command, out)
        assert len(out.splitlines()) == 1 and out.startswith("error: cannot connect to PostgreSQL "), (command, out)
        assert reason in out and "check DESTINATION__POSTGRES__CREDENTIALS" in out, (command, out)
        assert PASSWORD not in out and "Traceback" not in out, (command, out)

    result = CliRunner().invoke(app, ["check", "--base-url", sandbox.base_url, *keys])
    problems = [line for line in result.output.splitlines() if line.startswith("  problem: ")]
    assert result.exit_code == 1 and len(problems) == 1, result.output
    assert problems[0].startswith("  problem: cannot connect to PostgreSQL ") and reason in problems[0], problems
    assert PASSWORD not in result.output


def test_a_url_with_unencoded_characters_in_the_password_is_named_as_such(
    make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was reported as "credentials missing or incomplete", and `check` stopped at it with an `error:` line."""
    monkeypatch.setenv("SOURCES__OUTREACH__DESTINATION", "postgres")
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", "postgresql://pw:p@ss:w/rd#1@127.0.0.1:5432/postgres")
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    keys = _key_args(sandbox)
    said = "DESTINATION__POSTGRES__CREDENTIALS is not a connection URL dlt can read"
    for command in (["sync", "--base-url", sandbox.base_url, "--no-progress", *keys], ["status"], ["models"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 1 and result.output.startswith(f"error: {said} ("), (command, result.output)
        assert len(result.output.strip().splitlines()) == 1 and "percent-encode" in result.output
        assert not any(part in result.output for part in ("p@ss", "ss:w", "rd#1")), result.output

    result = CliRunner().invoke(app, ["check", "--base-url", sandbox.base_url, *keys])
    problems = [line for line in result.output.splitlines() if line.startswith("  problem: ")]
    assert result.exit_code == 1 and len(problems) == 1 and said in problems[0], result.output
    assert result.output.splitlines()[-1] == "1 problem(s): see the lines above"


def test_check_connects_and_tells_whether_the_first_sync_may_create_its_schema(
    pg_server: Any, pg_dsn: str, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    keys = _key_args(sandbox)
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_dsn)
    # the destination as a flag, as every other command that reaches the warehouse takes it (check had no such option)
    result = CliRunner().invoke(app, ["check", "--base-url", sandbox.base_url, *keys, "--destination", "postgres"])
    assert result.exit_code == 0 and "all checks passed" in result.output, result.output
    assert "ok, connected (PostgreSQL 15" in result.output, result.output
    assert "the `outreach` schema is created at the first sync" in result.output, result.output
    assert "  destination              postgres" in result.output and "--destination flag" in result.output
    both = ["check", "--base-url", sandbox.base_url, *keys, "--destination", "postgres", "--duckdb", "w.duckdb"]
    result = CliRunner().invoke(app, both)
    problems = [line for line in result.output.splitlines() if line.startswith("  problem: ")]
    assert problems == ["  problem: --duckdb names a DuckDB file but the destination is postgres: pass one of them"]
    monkeypatch.setenv("SOURCES__OUTREACH__DESTINATION", "postgres")

    pg_server.psql("drop role if exists check_reader; create role check_reader login")
    database = pg_dsn.rsplit("/", 1)[1]
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_dsn.replace("postgres@", "check_reader@"))
    result = CliRunner().invoke(app, ["check", "--base-url", sandbox.base_url, *keys])
    problems = [line for line in result.output.splitlines() if line.startswith("  problem: ")]
    assert result.exit_code == 1 and len(problems) == 1, result.output
    assert f'GRANT CREATE ON DATABASE "{database}" TO "check_reader"' in problems[0], problems


def test_a_user_without_the_create_privilege_is_told_the_grant_and_nothing_is_lost(
    pg_server: Any, pg_dsn: str, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    keys = _key_args(sandbox)
    sync = ["sync", "--base-url", sandbox.base_url, "--no-progress", *keys]
    pg_server.psql("drop role if exists sync_reader; create role sync_reader login")
    reader, database = pg_dsn.replace("postgres@", "sync_reader@"), pg_dsn.rsplit("/", 1)[1]
    monkeypatch.setenv("SOURCES__OUTREACH__DESTINATION", "postgres")
    monkeypatch.setenv("SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE", "0")  # the sandbox's limit is off

    def refused(command: list[str]) -> str:
        monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", reader)
        result = CliRunner().invoke(app, command)
        errors = [line for line in result.output.splitlines() if line.startswith("error: ")]
        assert result.exit_code == 1 and len(errors) == 1 and "Traceback" not in result.output, result.output
        assert "GRANT CREATE ON DATABASE" in errors[0], errors
        return errors[0]

    said = refused(sync)  # the raw schema cannot be created
    assert "permission denied" in said and "the PostgreSQL user lacks that privilege: grant it" in said
    # the owner's next sync finishes the load the refused one left pending: nothing of it is lost
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_dsn)
    assert CliRunner().invoke(app, sync).exit_code == 0
    with psycopg2.connect(pg_dsn) as con, con.cursor() as cur:
        cur.execute("select count(*) from outreach.campaign_recipients")
        row = cur.fetchone()
    assert row is not None and row[0] > 0
    pg_server.psql(
        "grant usage on schema outreach to sync_reader; grant select on all tables in schema outreach to sync_reader",
        database,
    )
    # nor can `reporting`: the build's preflight says so before anything runs
    assert "the user sync_reader may not create schema reporting, which the build writes: grant it" in refused(
        ["models"]
    )
