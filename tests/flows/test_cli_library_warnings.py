"""No library warning reaches a user: `outreach sync`, `models`, `status` and `check` run as a new user would,
with a HOME where Prefect cannot create its home (cron, a container's read-only HOME): importing Prefect
there prints "UserWarning: Failed to create the Prefect home directory", so nothing imports it without a
Prefect API to talk to."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys


def _library_warnings(text: str) -> list[str]:
    # a library's warning, shown by Python ("UserWarning: ...") or through logging ("py.warnings"); our own
    # lines ("warning: ...") say what to do and are not these
    return [line for line in text.splitlines() if "Warning" in line or "py.warnings" in line]


@pytest.mark.timeout(900)  # four commands in processes of their own, `models` a whole dbt build
def test_commands_print_no_library_warning(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    keys = admin_keys(sb)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__OUTREACH__", "PREFECT_", "PYTHONWARN"))}
    env.update(HOME=str(tmp_path / "no-such-dir" / "home"), SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0")
    db = str(tmp_path / "w.duckdb")
    api = ["--base-url", sb.base_url, *(arg for key in keys for arg in ("--api-key", key))]
    commands = {
        "sync": ["sync", "--duckdb", db, "--no-progress", *api],
        "models": ["models", "--duckdb", db],
        "status": ["status", "--duckdb", db],
        "check": ["check", "--duckdb", db, *api],
    }
    work = tmp_path / "work"
    work.mkdir()
    for name, args in commands.items():
        done = subprocess.run(
            [sys.executable, "-m", "flows.cli", *args], env=env, capture_output=True, text=True, cwd=work, timeout=600
        )
        assert done.returncode == 0, (name, done.stderr[-2000:])
        assert _library_warnings(done.stdout + done.stderr) == [], (name, done.stderr[-2000:])
    assert not (tmp_path / "no-such-dir").exists()


def test_a_warning_is_said_once_in_the_commands_words_after_dbt_is_imported(tmp_path: Path) -> None:
    """Importing dbt imports its telemetry client, which calls `logging.basicConfig()`: every warning logged after
    it reached the terminal as `WARNING:<logger>:<message>`. `outreach models` with an alert setting out of range
    said its line twice, once so."""
    from devtools.synthetic import make_raw_warehouse

    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__OUTREACH__", "ALERTS__"))}
    done = subprocess.run(
        [sys.executable, "-m", "flows.cli", "models", "--duckdb", str(path), "--no-progress"],
        env={**env, "ALERTS__MAILBOX_BOUNCE_RATE": "-1"}, capture_output=True, text=True, cwd=tmp_path, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    said = [line for line in done.stderr.splitlines() if "mailbox_bounce_rate" in line]
    assert said == [
        "alerts: not evaluated: alerts.mailbox_bounce_rate must be a fraction above 0 and at most 1 (0.02 is 2%), "
        "got -1.0"
    ], done.stderr
    assert not [line for line in done.stderr.splitlines() if line.startswith(("WARNING:", "INFO:", "ERROR:"))]
