"""The README's block for dlt users (`from pipelines import outreach`), run as written against a sandbox:
into a DuckDB file and into parquet files, twice each, the second run of each reading only what changed.
The rest of the source's tests are in test_source_public.py."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
from doc_blocks import as_run_here, doc_block
from test_source_public import user_env
from test_sync_support import admin_keys

BIN = Path(sys.executable).parent
SERVICE_URL = "https://<your-service>/api/v1"
REQUESTS_LINE = re.compile(r"^outreach: workspace .*, (quick|full) sync: (\d+) requests, (\d+) rows read$", re.M)

__all__ = ["user_env"]  # the fixture


def test_readme_block_runs_into_duckdb_and_parquet_and_the_second_run_is_incremental(
    make_sandbox: Callable[..., Any], tmp_path: Path, user_env: dict[str, str]
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb, level="read")[0]
    script = as_run_here(doc_block("pipelines/README.md", "dlt-source"), BIN, {SERVICE_URL: sb.base_url, "<key>": key})
    sb.reset_metrics()
    done = subprocess.run(
        ["bash", "-e", "-c", script], cwd=tmp_path, env=user_env, capture_output=True, text=True, timeout=300
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]

    runs = [(mode, int(requests), int(rows)) for mode, requests, rows in REQUESTS_LINE.findall(output)]
    assert [mode for mode, _, _ in runs] == ["quick"] * 4, output[-4000:]
    # the logged counts are the service's: the sandbox counted exactly these requests
    assert sum(requests for _, requests, _ in runs) == sb.metrics()["requests"]
    for first, second in (runs[0:2], runs[2:4]):  # duckdb, then parquet
        assert first[1] >= 40 and second[1] <= 5, runs  # tiny: 58 requests, then 4 (nothing changed)
        assert first[2] > 250 and second[2] < 10, runs
    assert key not in output

    with duckdb.connect(str(tmp_path / "outreach_duckdb.duckdb"), read_only=True) as con:
        recipients = con.execute("select count(*) from outreach.campaign_recipients").fetchone()
        loads = con.execute("select count(*) from outreach._dlt_loads where status = 0").fetchone()
    assert recipients is not None and recipients[0] == 200 and loads == (2,)
    parquet = tmp_path / "data" / "files" / "outreach" / "campaign_recipients"
    files = sorted(parquet.glob("*.parquet"))
    assert len(files) == 1  # the second run read no recipient: no second file
    with duckdb.connect() as con:
        assert con.execute(f"select count(*) from read_parquet('{files[0]}')").fetchone() == (200,)
