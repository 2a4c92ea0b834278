"""The BI file given where a warehouse is asked for (`--duckdb w_bi.duckdb`). Each build replaces that copy whole:
a sync wrote into it (the rows gone at the next publish), `alerts ack` acknowledged in it (the acknowledgement
gone the same way), and `models` and `status` answered "run `outreach sync` first" about it. Now every command
refuses it in one line naming the warehouse, before any API request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
from test_sync_support import admin_keys
from warehouse_refusal import assert_every_command_refuses

from pipelines.core.constants import bi_file_problem


def _database(path: Path) -> bytes:
    with duckdb.connect(str(path)) as con:
        con.execute("create schema reporting; create table reporting.t as select 1 as x")
    return path.read_bytes()


def test_every_command_refuses_the_bi_file_of_a_warehouse(make_sandbox: Any, tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="tiny", rate_limit=0, workspaces=1)
    warehouse, bi = tmp_path / "w.duckdb", tmp_path / "w_bi.duckdb"
    _database(warehouse)
    before = _database(bi)
    said = f"{bi} is the BI file of the warehouse {warehouse}, a copy each build replaces: pass --duckdb {warehouse}"
    sandbox.reset_metrics()
    assert_every_command_refuses(bi, said, ["--base-url", sandbox.base_url, "--api-key", admin_keys(sandbox)[0]])
    assert sandbox.metrics()["requests"] <= 2  # `check` asks for the key alone (GET /account, POST /hooks)
    assert bi.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb", "w_bi.duckdb"]


def test_a_bi_file_is_known_by_its_warehouse_beside_it(tmp_path: Path) -> None:
    alone = tmp_path / "mine_bi.duckdb"
    assert bi_file_problem(alone) is None  # a warehouse may be named so
    (tmp_path / "mine.db").touch()  # bi_path_for keeps the stem whatever the suffix
    assert bi_file_problem(alone) == (
        f"{alone} is the BI file of the warehouse {tmp_path / 'mine.db'}, a copy each build replaces: pass --duckdb "
        f"{tmp_path / 'mine.db'}"
    )
    (tmp_path / "[x].duckdb").touch()  # a name glob would read as a pattern
    assert "BI file of the warehouse" in (bi_file_problem(tmp_path / "[x]_bi.duckdb") or "")
    assert bi_file_problem(tmp_path / "mine.duckdb") is None
