"""The A/B statistics are stored before dbt runs (models/ab_store.py) and kept by a build whose inputs and code are
those they were computed from: on DuckDB and on PostgreSQL, a second build keeps them and needs neither statsmodels nor
pandas, a changed input or `recompute` (--full-refresh) computes them again."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import duckdb
import pytest

from models.ab_store import write_variant_tests
from models.settings import resolve_target
from tests.duckdb_sql import run_pg_sql, run_sql

RAW = """
create schema outreach;
create table outreach.campaign_variants (campaign_id text, "index" bigint, sent bigint, replied bigint,
    deleted_at text);
create table outreach.campaign_stats (campaign_id text, totals__sent bigint, totals__recipients bigint,
    totals__pending bigint, deleted_at text);
insert into outreach.campaign_variants values ('c-1', 0, 400, 20, null), ('c-1', 1, 400, 26, null),
    ('c-2', 0, 90, 3, null);
insert into outreach.campaign_stats values ('c-1', 800, 800, 0, null), ('c-2', 90, 90, 0, null);
"""
ROWS = "select campaign_id, variant_index, reply_rate, test_state from reporting_inputs.variant_tests order by 1, 2"

#: in a fresh process: write the statistics of the configured warehouse, then say what it computed and imported
CHILD = """
import json, sys
from models.ab_store import write_variant_tests
from models.settings import resolve_target
variants = write_variant_tests(resolve_target(sys.argv[1] or None, sys.argv[2] or None))
print(json.dumps({"variants": variants, "imported": sorted({"statsmodels", "scipy", "pandas"} & set(sys.modules))}))
"""


def _child(duckdb_path: str, destination: str) -> dict[str, Any]:
    command = [sys.executable, "-c", CHILD, duckdb_path, destination]
    run = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    return dict(json.loads(run.stdout.splitlines()[-1]))


def _duckdb(tmp_path: Path) -> tuple[Any, Callable[[str], list[tuple[Any, ...]]], list[str]]:
    path = tmp_path / "w.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(RAW)
    return resolve_target(path, None), partial(run_sql, path), [str(path), ""]


def _postgres(pg_dsn: str, pg_credentials: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, list[str]]:
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", pg_credentials)
    run_pg_sql(pg_dsn, RAW)
    return resolve_target(None, "postgres"), partial(run_pg_sql, pg_dsn), ["", "postgres"]


@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_statistics_are_kept_until_an_input_changes_or_a_full_refresh(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if engine == "duckdb":
        target, execute, child_args = _duckdb(tmp_path)
    else:
        pg_dsn, pg_credentials = request.getfixturevalue("pg_dsn"), request.getfixturevalue("pg_credentials")
        target, execute, child_args = _postgres(pg_dsn, pg_credentials, monkeypatch)

    assert write_variant_tests(target) == 3  # computed: nothing was stored
    first = execute(ROWS)
    assert [(row[0], row[1], row[3]) for row in first] == [
        ("c-1", 0, "no winner yet"), ("c-1", 1, "no winner yet"), ("c-2", 0, "single variant")
    ]  # fmt: skip

    # the same inputs and code: kept, in a process that then never imports the statistics' packages
    assert _child(*child_args) == {"variants": None, "imported": []}
    assert execute(ROWS) == first

    # a changed input: computed again, with the new figure
    execute("update outreach.campaign_variants set replied = 60 where campaign_id = 'c-1' and \"index\" = 1")
    assert write_variant_tests(target) == 3
    second = execute(ROWS)
    assert second[1][2] == pytest.approx(60 / 400) and first[1][2] == pytest.approx(26 / 400)
    assert second[1][3] == "winner"
    assert write_variant_tests(target) is None

    # --full-refresh computes them whatever is stored
    execute("update reporting_inputs.variant_tests set test_state = 'edited by hand'")
    assert write_variant_tests(target, recompute=True) == 3
    assert execute(ROWS) == second
