"""A warehouse synced from a service whose clock went ahead (a demo), then from a fresh service with the same
data whose clock is behind it: history never churns, no version is removed as a duplicate, and every
(id, _dlt_valid_from) stays unique."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, query

from pipelines.sync.edge import run_sync

HISTORY = {"workspace_history": "id", "campaigns": "id", "email_accounts": "id"}


def _sync(sb: Any, db: Path, tmp: Path) -> None:
    run_sync(
        mode="full",
        api_keys=admin_keys(sb),
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp / "p",
        spool_dir=tmp / "none",
        progress=False,
        rate_limit_per_minute=0,
    )


def _history(db: Path) -> dict[str, int]:
    return {table: query(db, f"select count(*) from outreach.{table}")[0][0] for table in HISTORY}


def test_a_fresh_service_behind_the_warehouse_clock_never_churns_history(
    make_sandbox: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "w.duckdb"
    demo = make_sandbox(scale="tiny", rate_limit=0, seed=7)
    _sync(demo, db, tmp_path)
    demo.advance(3 * 86400)  # the demo's service lives on: campaigns send, versions change
    _sync(demo, db, tmp_path)
    demo.stop()

    fresh = make_sandbox(scale="tiny", rate_limit=0, seed=7)  # the same data, its clock back at the start
    caplog.set_level(logging.WARNING)
    _sync(fresh, db, tmp_path)
    after_first = _history(db)
    for _ in range(2):
        _sync(fresh, db, tmp_path)
        assert _history(db) == after_first, "a sync of an unchanged service added history versions"
    assert not [r for r in caplog.records if "duplicate history" in r.getMessage()]
    for table, key in HISTORY.items():
        dups = query(
            db,
            f"select count(*) from (select {key}, _dlt_valid_from from outreach.{table} "
            f"group by all having count(*) > 1)",
        )[0][0]
        assert dups == 0, f"{table}: {dups} (id, _dlt_valid_from) pairs twice"
        current = query(
            db, f"select count(*) - count(distinct {key}) from outreach.{table} where _dlt_valid_to is null"
        )[0][0]
        assert current == 0, f"{table}: an id with two current versions"
