"""A dlt working directory whose path dlt cannot work in. A single quote: dlt's DuckDB loader puts the load files'
paths into SQL unescaped, so every load failed ("ParserException: unterminated string literal") after every API
request, with dlt's tracebacks on the terminal, and "the pending load resumes on the next run", which it never
did. A percent sign: dlt %-formats its file names from templates holding the path, and the extract failed
("error: TypeError: %x format: an integer is required, not str"). Now the sync refuses before its first request
and says what to change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_sync_support import admin_keys

from pipelines.warehouse.load_dir import working_dir_problem

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def _outreach(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    return subprocess.run(
        [OUTREACH, *args], capture_output=True, text=True, timeout=300, check=False,
        env={**clean, "SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE": "0", **env},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("folder", "why"),
    [
        (
            "it's here",
            "a single quote (') in its path, and dlt's DuckDB loader cannot read load files from such a path",
        ),
        ("100%x", "a percent sign (%) in its path, which dlt's file name templates cannot hold"),
    ],
)
def test_a_path_dlt_cannot_work_in_is_refused_before_the_first_request(
    folder: str, why: str, make_sandbox: Any, tmp_path: Path
) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    sandbox.reset_metrics()
    warehouse = tmp_path / folder / "w.duckdb"
    api = ["--base-url", sandbox.base_url, "--api-key", admin_keys(sandbox)[0]]

    result = _outreach(["sync", "--duckdb", str(warehouse), "--no-progress", *api])
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [
        f"error: dlt's working directory {warehouse.parent}/.w_dlt has {why}: move the warehouse to a path without "
        "one (--duckdb), or set SOURCES__OUTREACH__PIPELINES_DIR to one"
    ]
    assert sandbox.metrics()["requests"] == 0 and not warehouse.exists()

    checked = _outreach(["check", "--duckdb", str(warehouse), *api])
    problems = [line for line in checked.stdout.splitlines() if line.startswith("  problem: ")]
    assert checked.returncode == 1 and len(problems) == 1 and why in problems[0], checked

    # the fix it names: the warehouse itself may keep its path
    loaded = _outreach(
        ["sync", "--duckdb", str(warehouse), "--no-progress", *api],
        SOURCES__OUTREACH__PIPELINES_DIR=str(tmp_path / "dlt"),
    )
    assert loaded.returncode == 0, loaded
    with duckdb.connect(str(warehouse), read_only=True) as con:
        count = con.execute("select count(*) from outreach.campaign_recipients").fetchone()
    assert count is not None and count[0] > 0
    # and every command after the sync puts the path into SQL (ATTACH '...') quoted
    for command in (["models", "--no-progress"], ["status"], ["report"], ["alerts", "--all"]):
        done = _outreach([*command, "--duckdb", str(warehouse)])
        assert done.returncode == 0 and "error" not in done.stderr, (command, done)
    assert (warehouse.parent / "report.html").stat().st_size > 0


def test_a_server_warehouse_minds_only_what_dlt_cannot_hold_in_a_file_name() -> None:
    """PostgreSQL is loaded without file paths in SQL: a quote in its dlt directory is fine, a percent sign not."""
    assert working_dir_problem(None, "/srv/it's dlt") is None
    assert working_dir_problem(None, None) is None  # dlt's own data directory
    assert working_dir_problem(None, "/srv/100%dlt") == (
        "dlt's working directory /srv/100%dlt has a percent sign (%) in its path, which dlt's file name templates "
        "cannot hold: set SOURCES__OUTREACH__PIPELINES_DIR to a path without one"
    )
