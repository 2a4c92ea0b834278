"""Damaged files: a garbage dlt state file, a truncated or garbage warehouse. Each gets one line naming the
path, what is wrong and the fix, from `sync`, `status` and `check`; `sync --reset-state` recovers from the
first keeping the data."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_sync_support import admin_keys, api_truth, assert_no_duplicates, assert_warehouse_equals_api, query
from typer.testing import CliRunner

from flows.cli import app
from pipelines.commands.check import run_check
from pipelines.core.errors import OutreachError, WarehousePathError
from pipelines.sync.edge import run_sync


def _sync(sb: Any, keys: list[str], db: Path, tmp: Path, **extra: Any) -> Any:
    return run_sync(
        mode="full",
        api_keys=keys,
        base_url=sb.base_url,
        duckdb_path=db,
        pipelines_dir=tmp / "p",
        spool_dir=tmp / "none",
        progress=False,
        rate_limit_per_minute=0,
        **extra,
    )


def test_a_garbage_dlt_state_file_is_named_and_reset_state_recovers(
    make_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    db = tmp_path / "w.duckdb"
    _sync(sb, keys, db, tmp_path)
    before = query(db, "select count(*) from outreach.campaign_recipients")[0][0]
    states = sorted((tmp_path / "p").glob("outreach_*/state.json"))
    assert states
    states[0].write_bytes(os.urandom(400) + b"\xff\xfe")

    with pytest.raises(OutreachError) as caught:
        _sync(sb, keys, db, tmp_path)
    line = str(caught.value)
    assert str(states[0]) in line and "damaged" in line and "outreach sync --reset-state" in line, line
    assert "\n" not in line

    monkeypatch.setenv("SOURCES__OUTREACH__PIPELINES_DIR", str(tmp_path / "p"))
    checked = run_check(duckdb_path=db)
    assert any(str(states[0]) in problem for problem in checked.problems), checked.lines

    _sync(sb, keys, db, tmp_path, reset_state=True)
    assert query(db, "select count(*) from outreach.campaign_recipients")[0][0] == before
    assert_no_duplicates(db)
    assert_warehouse_equals_api(db, api_truth(sb.base_url, keys[0]))
    assert not [p for p in run_check(duckdb_path=db).problems if "dlt state" in p]


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_warehouse_is_named_by_sync_status_and_check(make_sandbox: Any, tmp_path: Path, damage: str) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    keys = admin_keys(sb)[:1]
    good = tmp_path / "good.duckdb"
    _sync(sb, keys, good, tmp_path)
    db = tmp_path / "w.duckdb"
    data = good.read_bytes()
    db.write_bytes(data[: len(data) // 2] if damage == "truncated" else os.urandom(len(data)))
    shutil.rmtree(tmp_path / "p")

    with pytest.raises(OutreachError) as caught:
        _sync(sb, keys, db, tmp_path)
    line = str(caught.value)
    assert str(db) in line and ("damaged" in line or "not a valid DuckDB" in line), line
    assert "another process" not in line and "\n" not in line
    if damage == "truncated":  # DuckDB's own line, whole: it was cut at 120 characters, "from location )"
        with pytest.raises(duckdb.Error) as read:
            duckdb.connect(str(db), read_only=True)
        assert str(read.value) in line, line
    assert isinstance(caught.value, WarehousePathError)  # no retry mends it: a flow's sync task fails at once

    result = CliRunner().invoke(app, ["status", "--duckdb", str(db)])
    assert result.exit_code == 1, result.output
    out = result.output.strip()
    assert out.startswith("error: ") and str(db) in out and len(out.splitlines()) == 1, out
    assert "open for writing" not in out

    assert any(str(db) in problem for problem in run_check(duckdb_path=db).problems)
