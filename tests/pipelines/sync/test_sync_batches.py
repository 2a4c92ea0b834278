"""Batches: several workspaces extracted, normalized and loaded as one dlt load; each workspace's
state does not depend on which batch or pipeline it lands in; many workspaces equal to the API."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_sync_support import (
    admin_keys,
    api_truth,
    assert_no_duplicates,
    assert_warehouse_equals_api,
    query,
    table_snapshot,
)

from pipelines.source.shaping import campaign_fingerprint
from pipelines.sync.edge import run_sync


def _sync(sb: Any, tmp: Path, mode: str, keys: list[str], **kw: Any) -> Any:
    return run_sync(
        mode=mode,
        api_keys=keys,
        base_url=sb.base_url,
        duckdb_path=tmp / "outreach.duckdb",
        pipelines_dir=tmp / "pipelines",
        spool_dir=tmp / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
        reply_body_cap=100_000,
        **kw,
    )


def _staging_schemas(db: Path) -> list[tuple[Any, ...]]:
    """The dlt staging datasets left in the warehouse (each batch's pipeline has its own)."""
    sql = "select schema_name from duckdb_schemas() where database_name = 'wh' and schema_name like '%staging%'"
    return query(db, sql)


def test_state_follows_the_workspace_whatever_batch_or_pipeline_loads_it(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)
    db = tmp_path / "outreach.duckdb"
    full = _sync(sb, tmp_path, "full", keys, batch_size=len(keys))  # one batch, one pipeline, one load
    assert len({w.pipeline_name for w in full.workspaces}) == 1
    assert len({tuple(w.load_ids) for w in full.workspaces}) == 1
    assert _staging_schemas(db) == []  # a good load drops its batch's staging dataset
    truths = [api_truth(sb.base_url, k) for k in keys]

    # now one batch per workspace, on one worker thread: other pipelines, the same state
    before = table_snapshot(db)
    sb.reset_metrics()
    idle = _sync(sb, tmp_path, "quick", keys, batch_size=1, workers=1)
    assert len({w.pipeline_name for w in idle.workspaces}) == len(keys)
    assert sb.metrics()["requests"] == 4 * len(keys), "a workspace's cursors were lost when its batch changed"
    assert table_snapshot(db) == before
    assert _staging_schemas(db) == []  # nor one per batch of this run

    old_fps = {cid: campaign_fingerprint(c) for t in truths for cid, c in t["campaigns"].items()}
    sb.advance(6 * 3600)
    _sync(sb, tmp_path, "quick", keys, batch_size=1, workers=1)
    for key in keys:
        truth = api_truth(sb.base_url, key)
        stale = {cid for cid, c in truth["campaigns"].items() if old_fps.get(cid) == campaign_fingerprint(c)}
        assert_warehouse_equals_api(db, truth, skip_stale_campaigns=stale, check_is_read=False)
    assert_no_duplicates(db)
    # one committed state row per workspace, whichever pipeline wrote it last
    states = query(db, "select workspace_id, count(*) from outreach.sync_state group by 1")
    assert sorted(states) == sorted((t["workspace_id"], 1) for t in truths)


def test_twenty_workspaces_sync_in_batches_equal_to_the_api(make_sandbox: Any, tmp_path: Path) -> None:
    """N = 20 workspaces (the sandbox's --workspaces), batches of 8 on 4 threads: the warehouse equals the API
    for every one, and an idle quick sync costs exactly 4 requests a workspace."""
    sb = make_sandbox(scale="tiny", rate_limit=0, workspaces=20)
    keys = admin_keys(sb)
    assert len(keys) == 20
    report = _sync(sb, tmp_path, "full", keys, batch_size=8, workers=4)
    assert len({w.pipeline_name for w in report.workspaces}) == 3
    db = tmp_path / "outreach.duckdb"
    for key in keys:
        assert_warehouse_equals_api(db, api_truth(sb.base_url, key))
    assert_no_duplicates(db)
    sb.reset_metrics()
    _sync(sb, tmp_path, "quick", keys, batch_size=8, workers=4)
    assert sb.metrics()["requests"] == 4 * 20
