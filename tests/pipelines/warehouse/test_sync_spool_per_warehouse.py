"""The default webhook spool belongs to one warehouse: events spooled for warehouse A load into A, never into
B synced on the same machine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_hooks_support import payload
from test_sync_support import admin_keys, query

from pipelines.core.config import resolve_settings
from pipelines.events import spool
from pipelines.sync.edge import run_sync


def _sync(sb: Any, db: Path, tmp: Path) -> Any:
    return run_sync(
        mode="quick",
        api_keys=admin_keys(sb)[:1],
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp / f"p_{db.stem}",
        progress=False,
        rate_limit_per_minute=0,
    )


def test_events_spooled_for_one_warehouse_load_only_into_it(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SOURCES__OUTREACH__SPOOL_DIR", raising=False)
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    own = resolve_settings(duckdb_path=a).spool_location()
    assert own == tmp_path / "a_spool"
    assert resolve_settings(duckdb_path=b).spool_location() == tmp_path / "b_spool"
    writer = spool.SpoolWriter(own)
    writer.append(spool.make_record(payload("lead.replied"), workspace_id=None))
    writer.close()

    sb = make_sandbox(scale="tiny", rate_limit=0)
    assert _sync(sb, b, tmp_path).events_loaded == 0
    assert "events" not in {r[0] for r in query(b, "select table_name from duckdb_tables()")}
    assert _sync(sb, a, tmp_path).events_loaded == 1
    assert query(a, "select count(*) from outreach.events")[0][0] == 1
