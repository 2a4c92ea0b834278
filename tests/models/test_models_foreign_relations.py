"""Relations in `reporting` that no build made: an analyst's own table or view stays across builds. The swap dropped
every relation no model builds (meant for a removed model's table), so a build deleted them, rows and all; now it
drops only what an earlier build made (the record `reporting_inputs.built_relations`). On DuckDB and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.pg_copy import copy_raw_tables
from devtools.synthetic import make_raw_warehouse
from models.build import build
from pipelines.warehouse.destination import Warehouse
from tests.duckdb_sql import run_pg_sql, run_sql

pytestmark = pytest.mark.timeout(600)

ANALYSTS = [
    "create table reporting.my_notes as select 42 as answer",
    # of the analyst's own table: on PostgreSQL a view of a mart goes with the mart's old table (models/README.md)
    "create view reporting.my_view as select answer * 2 as doubled from reporting.my_notes",
]
#: a table a build made, of a model since removed: its name in the record, as the build that made it left it
REMOVED_MODEL = [
    "create table reporting.old_mart as select 1 as x",
    "insert into reporting_inputs.built_relations (name) values ('old_mart')",
]
LISTED = (
    "select table_name from information_schema.tables where table_schema = 'reporting' "
    "and table_name in ('my_notes', 'my_view', 'old_mart', 'campaign_performance') order by 1"
)


def _scenario(run: Callable[[str], list[tuple[Any, ...]]], target: Warehouse | Path) -> None:
    assert build(target, publish=False).passed
    made = {name for (name,) in run("select name from reporting_inputs.built_relations")}
    assert "campaign_performance" in made and "alert_incidents" not in made and len(made) > 20
    for statement in ANALYSTS + REMOVED_MODEL:
        run(statement)
    assert build(target, publish=False).passed
    assert run(LISTED) == [("campaign_performance",), ("my_notes",), ("my_view",)]
    assert run("select answer from reporting.my_notes") == [(42,)]
    assert run("select doubled from reporting.my_view") == [(84,)]
    assert {name for (name,) in run("select name from reporting_inputs.built_relations")} == made


def test_an_analysts_relations_stay_and_a_removed_models_table_goes_on_duckdb(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    _scenario(lambda sql: run_sql(path, sql), path)


def test_the_same_on_postgres(
    tmp_path: Path, pg_dsn: str, pg_credentials: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_raw_tables(make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000), pg_dsn)
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    _scenario(lambda sql: run_pg_sql(pg_dsn, sql), Warehouse("postgres", None))
