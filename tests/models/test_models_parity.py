"""The dbt project keeps the reporting contract: the retired runner's tables, column for column, value for value.

The runner was removed after devtools.runner_parity.RUNNER_REV; the comparison takes it from git history,
builds one copy of a warehouse with it and another with dbt, and compares every table and column it made.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from devtools.runner_parity import run
from devtools.synthetic import make_raw_warehouse
from pipelines.sync.edge import run_sync

pytestmark = pytest.mark.timeout(300)


def test_dbt_equals_the_runner_on_a_synced_sandbox_warehouse(make_sandbox: Callable[..., Any], tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="small", rate_limit=0)
    keys = list({e["workspace_id"]: e["key"] for e in sandbox.keys() if e["level"] == "read"}.values())
    warehouse = tmp_path / "outreach.duckdb"
    for _ in range(2):  # two syncs a simulated day apart: history versions, accumulated daily sends
        run_sync(mode="full", api_keys=keys, base_url=sandbox.base_url, duckdb_path=warehouse, progress=False,
                 rate_limit_per_minute=0, reply_body_cap=20, pipelines_dir=str(tmp_path / "dlt"))  # fmt: skip
        sandbox.advance(86_400)
    parity = run(warehouse)
    assert parity.problems == [], (parity.differing_cells, parity.dbt_warnings)
    # dbt found every raw table the sync made (a table it missed would make its marts read nothing)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        tables = con.execute("select table_name from duckdb_tables() where schema_name = 'outreach'").fetchall()
    raw = [t for (t,) in tables]
    assert "events" not in raw and len(parity.dbt_warnings) == 1, parity.dbt_warnings  # no webhook spool here
    assert not [w for w in parity.dbt_warnings for table in raw if f"outreach.{table} " in w]
    assert parity.tables == 10 and parity.rows > 3000 and parity.float_cells > 100
    assert parity.max_float_diff == 0.0
    assert parity.added_columns["campaign_performance"] == [
        "workspace_name", "count_contacted", "count_human_replied", "auto_reply_count", "unclassified_reply_count",
        "progress_rate", "human_reply_rate", "reply_rate_per_delivered_message",
        "human_reply_rate_per_delivered_message", "is_first_send_observed",
    ]  # fmt: skip
    # the metric dictionary's redefinitions are listed, not compared; every other column still equals the runner's
    assert "reply_rate" in parity.redefined_columns["campaign_performance"]
    assert parity.removed_columns["variant_performance"] == ["compared_reply_rate"]
    assert parity.rows_outside_new_grain > 0  # the runner's all-zero days before a campaign existed
    assert parity.added_columns["reply_outcomes"] == ["reply_class"]


def test_dbt_equals_the_runner_on_a_synthetic_warehouse(tmp_path: Path) -> None:
    """Synthetic data covers what a small sandbox may not: positive types beyond the sandbox's, no-stats campaigns."""
    warehouse = make_raw_warehouse(tmp_path / "outreach.duckdb", recipients=20_000, seed=11)
    parity = run(warehouse)
    assert parity.problems == []
    assert parity.tables == 10 and parity.rows > 20_000
    assert parity.max_float_diff == 0.0
