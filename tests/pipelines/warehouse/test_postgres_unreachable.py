"""A PostgreSQL warehouse that cannot be connected to: `sync`, `status` and `models` each say so in one line,
with libpq's reason and where to fix it, and never the password."""

from __future__ import annotations

from typing import Any

import pytest
from test_sync_support import admin_keys
from typer.testing import CliRunner

from flows.cli import app

PASSWORD = "s3cret-pw"


@pytest.mark.parametrize("case", ["no such database", "nothing listening"])
def test_each_command_names_the_reason_and_the_setting_to_fix(
    case: str, pg_server: Any, make_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    port, database = (pg_server.port, "no_such_db") if case == "no such database" else (1, "postgres")
    monkeypatch.setenv("SOURCES__OUTREACH__DESTINATION", "postgres")
    monkeypatch.setenv(
        "DESTINATION__POSTGRES__CREDENTIALS", f"postgresql://postgres:{PASSWORD}@127.0.0.1:{port}/{database}"
    )
    sandbox = make_sandbox(scale="tiny", rate_limit=0)
    keys = [arg for key in admin_keys(sandbox)[:1] for arg in ("--api-key", key)]
    reason = 'database "no_such_db" does not exist' if case == "no such database" else "Connection refused"
    for command in (["sync", "--base-url", sandbox.base_url, "--no-progress", *keys], ["status"], ["models"]):
        result = CliRunner().invoke(app, command)
        out = result.output.strip()
        assert result.exit_code == 1, (command, out)
        assert len(out.splitlines()) == 1 and out.startswith("error: cannot connect to PostgreSQL "), (command, out)
        assert reason in out and "check DESTINATION__POSTGRES__CREDENTIALS" in out, (command, out)
        assert PASSWORD not in out and "Traceback" not in out, (command, out)
