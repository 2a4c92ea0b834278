"""Relations in `reporting` that no build made: an analyst's own table or view stays across builds. The swap dropped
every relation no model builds (meant for a removed model's table), so a build deleted them, rows and all; now it
drops only what an earlier build made (the record `reporting_inputs.built_relations`). On DuckDB and PostgreSQL.

On PostgreSQL, views that read a mart (in any schema, and the views over them) are made again over the new tables
with their grants and comment, and the grants on a mart are kept: the swap's `drop ... cascade` of the mart's old
table dropped those views at every build, and its new table had none of the old one's grants. A removed model's
table that a view reads stays until nothing reads it: its drop took the view."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devtools.pg_copy import copy_raw_tables
from devtools.pgserver import SUPERUSER
from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.errors import ModelBuildError, WarehouseError
from pipelines.warehouse.destination import Warehouse
from tests.duckdb_sql import run_pg_sql, run_sql

pytestmark = pytest.mark.timeout(600)

ANALYSTS = [
    "create table reporting.my_notes as select 42 as answer",
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


def test_the_same_on_postgres_where_the_views_that_read_a_mart_are_made_again(
    tmp_path: Path, pg_dsn: str, pg_credentials: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy_raw_tables(make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000), pg_dsn)
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    warehouse = Warehouse("postgres", None)

    def run(sql: str) -> list[tuple[Any, ...]]:
        return run_pg_sql(pg_dsn, sql)

    _scenario(run, warehouse)
    for statement in VIEWS_OF_MARTS:
        run(statement)
    assert build(warehouse, publish=False).passed
    assert run(f"select count(*) from ({MART_NAMES}) as mart") == run("select count(*) from analytics.names")
    assert run("select n from analytics.name_count") == run("select count(*) from reporting.campaign_performance")
    assert run("select doubled from reporting.mart_view") == run("select count(*) * 2 from reporting.lead_engagement")
    assert run(
        "select grantee, table_schema || '.' || table_name from information_schema.role_table_grants "
        "where grantee in ('outreach_bi_reader', 'outreach_analyst') and privilege_type = 'SELECT' order by 1, 2"
    ) == [
        ("outreach_analyst", "analytics.name_count"),  # its owner's
        ("outreach_analyst", "analytics.names"),
        ("outreach_bi_reader", "analytics.names"),
        ("outreach_bi_reader", "reporting.campaign_performance"),
    ]
    assert run("select obj_description('analytics.names'::regclass, 'pg_class')") == [("campaign names",)]
    assert run("select viewowner from pg_views where viewname = 'name_count'") == [("outreach_analyst",)]

    # a removed model's table that a view reads stays (its drop with `cascade` took the view), said in a warning,
    # and goes at the first build after nothing reads it
    run("create table reporting.retired_mart as select 7 as x")
    run("insert into reporting_inputs.built_relations (name) values ('retired_mart')")
    run("create view analytics.retired_x as select x from reporting.retired_mart")
    report = build(warehouse, publish=False)
    assert report.passed and run("select x from analytics.retired_x") == [(7,)]
    assert (
        "reporting.retired_mart is no longer built by any model, and is kept: analytics.retired_x read(s) it; drop or "
        "change that, and the next build drops it"
    ) in report.warnings, report.warnings
    run("drop view analytics.retired_x")
    assert build(warehouse, publish=False).passed
    assert run("select count(*) from information_schema.tables where table_name = 'retired_mart'") == [(0,)]

    # a view that reads a column the new tables do not have: the build fails naming it, and nothing changes
    run("alter table reporting.campaign_performance rename column campaign_name to old_name")
    with pytest.raises(ModelBuildError) as failed:
        build(warehouse, publish=False)
    assert "the view analytics.names reads what this build of the models no longer has" in str(failed.value)
    assert run("select count(*) from analytics.name_count") == [(1,)]
    assert run(
        "select count(*) from information_schema.columns where table_schema = 'reporting' "
        "and table_name = 'campaign_performance' and column_name = 'old_name'"
    ) == [(1,)]


def test_a_privilege_the_user_lacks_is_named_with_its_fix(
    tmp_path: Path, pg_server: Any, pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user who may read the raw tables but not write where the build writes. A `reporting` schema of another
    user's failed every model on its own ("Database Error in model ... permission denied for schema reporting
    compiled code at ...", 13 of them) with no fix; no right to create schemas failed the A/B statistics' store."""
    copy_raw_tables(make_raw_warehouse(tmp_path / "w.duckdb", recipients=100), pg_dsn)
    database = pg_dsn.rsplit("/", 1)[1]
    for statement in (
        "do $$ begin create role outreach_reads_only login; exception when duplicate_object then null; end $$",
        "grant usage on schema outreach to outreach_reads_only",
        "grant select on all tables in schema outreach to outreach_reads_only",
    ):
        run_pg_sql(pg_dsn, statement)
    monkeypatch.setenv(
        "DESTINATION__POSTGRES__CREDENTIALS",
        f"postgresql://outreach_reads_only:unused@127.0.0.1:{pg_server.port}/{database}",
    )
    label = f"PostgreSQL postgresql://outreach_reads_only@127.0.0.1:{pg_server.port}/{database}"
    fix = "or connect as a user who may (DESTINATION__POSTGRES__CREDENTIALS)"
    with pytest.raises(WarehouseError) as refused:
        build(Warehouse("postgres", None), publish=False)
    assert str(refused.value) == (
        f"{label}: the user outreach_reads_only may not create schema reporting, which the build writes: grant it "
        f"(`GRANT CREATE ON DATABASE {database} TO outreach_reads_only`), {fix}"
    )
    run_pg_sql(pg_dsn, f'grant create on database "{database}" to outreach_reads_only')
    run_pg_sql(pg_dsn, "create schema reporting")
    run_pg_sql(pg_dsn, "grant usage on schema reporting to outreach_reads_only")  # a reader's grant: not enough
    with pytest.raises(WarehouseError) as refused:
        build(Warehouse("postgres", None), publish=False)
    assert str(refused.value) == (
        f"{label}: the user outreach_reads_only may not create tables in schema reporting (its owner is "
        f"{SUPERUSER}): grant it (`GRANT USAGE, CREATE ON SCHEMA reporting TO "
        f"outreach_reads_only`), {fix}"
    )
    run_pg_sql(pg_dsn, "grant usage, create on schema reporting to outreach_reads_only")
    assert build(Warehouse("postgres", None), publish=False).passed
    # a mart taken over by another user: dbt stops in the build's first hook, said with PostgreSQL's own fix
    run_pg_sql(pg_dsn, f"alter table reporting.lead_timeline owner to {SUPERUSER}")
    with pytest.raises(ModelBuildError) as stopped:
        build(Warehouse("postgres", None), publish=False)
    assert (
        "dbt stopped: permission denied for table lead_timeline: the PostgreSQL user lacks that privilege: grant it ("
        in str(stopped.value)
    ), str(stopped.value)


MART_NAMES = "select campaign_id, campaign_name from reporting.campaign_performance"
#: an analyst's views of marts: in a schema of their own (with a grant and a comment), over another view of theirs,
#: and in `reporting` itself
VIEWS_OF_MARTS = [
    "create schema analytics",
    f"create view analytics.names as {MART_NAMES}",
    "create view analytics.name_count as select count(*) as n from analytics.names",
    "do $$ begin create role outreach_bi_reader; exception when duplicate_object then null; end $$",
    "grant select on analytics.names to outreach_bi_reader",
    "grant select on reporting.campaign_performance to outreach_bi_reader",
    "comment on view analytics.names is 'campaign names'",
    "do $$ begin create role outreach_analyst; exception when duplicate_object then null; end $$",
    "grant usage on schema analytics to outreach_analyst",
    "grant select on analytics.names to outreach_analyst",
    "alter view analytics.name_count owner to outreach_analyst",
    "create view reporting.mart_view as select count(*) * 2 as doubled from reporting.lead_engagement",
]
