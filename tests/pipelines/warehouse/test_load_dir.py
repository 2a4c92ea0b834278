"""A DuckDB warehouse whose dlt working directory has a single quote in its path: dlt's DuckDB loader puts the
load files' paths into SQL unescaped, so every load failed ("ParserException: unterminated string literal"),
after every API request, with dlt's tracebacks on the terminal, and "the pending load resumes on the next run",
which it never did. Now the sync refuses before its first request and says what to change."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
from test_sync_support import admin_keys

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def _outreach(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    return subprocess.run(
        [OUTREACH, *args], capture_output=True, text=True, timeout=300, check=False,
        env={**clean, "SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE": "0", **env},
    )  # fmt: skip


def test_a_quote_in_the_load_directory_is_refused_before_the_first_request(make_sandbox: Any, tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    sandbox.reset_metrics()
    warehouse = tmp_path / "it's here" / "w.duckdb"
    api = ["--base-url", sandbox.base_url, "--api-key", admin_keys(sandbox)[0]]

    result = _outreach(["sync", "--duckdb", str(warehouse), "--no-progress", *api])
    assert (result.returncode, result.stdout) == (1, ""), result
    assert result.stderr.splitlines() == [
        f"error: dlt's working directory {warehouse.parent}/.w_dlt has a single quote (') in its path, and dlt's "
        "DuckDB loader cannot read load files from such a path: move the warehouse to a path without one "
        "(--duckdb), or set SOURCES__OUTREACH__PIPELINES_DIR to one"
    ]
    assert sandbox.metrics()["requests"] == 0 and not warehouse.exists()

    checked = _outreach(["check", "--duckdb", str(warehouse), *api])
    problems = [line for line in checked.stdout.splitlines() if line.startswith("  problem: ")]
    assert checked.returncode == 1 and len(problems) == 1 and "has a single quote (')" in problems[0], checked

    # the fix it names: the warehouse itself may keep its path
    loaded = _outreach(
        ["sync", "--duckdb", str(warehouse), "--no-progress", *api],
        SOURCES__OUTREACH__PIPELINES_DIR=str(tmp_path / "dlt"),
    )
    assert loaded.returncode == 0, loaded
    with duckdb.connect(str(warehouse), read_only=True) as con:
        count = con.execute("select count(*) from outreach.campaign_recipients").fetchone()
    assert count is not None and count[0] > 0
