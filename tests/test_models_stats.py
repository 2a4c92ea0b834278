"""The rate macros every mart uses (`ratio`, `pct`), run by dbt on DuckDB and on PostgreSQL.

One `dbt show --inline` query per engine. The A/B test's statistics are Python (models/ab_test.py,
tests/test_models_ab_test.py): dbt-postgres runs no Python models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.dbt_invoke import invoke
from models.settings import PostgresTarget, WarehouseTarget


def _query() -> str:
    parts = [
        "select 'pct10' as kind, {{ pct('1', '0') }} as v",
        "select 'pct13', {{ pct('1', '3') }}",
        "select 'ratio10', {{ ratio('1', '0') }}",
        "select 'ratio10_zero', {{ ratio('1', '0', '0') }}",
        "select 'ratio13', {{ ratio('1', '3') }}",
        "select 'ratio_null', {{ ratio('1', 'cast(null as bigint)') }}",
        "select 'ratio23', {{ ratio('2', '3', '0') }}",
    ]
    return "\nunion all\n".join(parts)


def _evaluate(target: WarehouseTarget) -> dict[str, float | None]:
    outcome = invoke(["show", "--inline", _query(), "--limit", "-1"], target, target_dir="show_target")
    assert outcome.success, outcome.exception
    table = outcome.results[0].agate_table
    return {str(kind): (None if v is None else float(v)) for kind, v in table.rows}


@pytest.fixture(params=["duckdb", "postgres"])
def values(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, float | None]:
    if request.param == "duckdb":
        return _evaluate(WarehouseTarget(destination="duckdb", duckdb_path=tmp_path / "scratch.duckdb"))
    server: Any = request.getfixturevalue("pg_server")
    dsn = server.create_database("stats_macros")
    port = int(dsn.rsplit(":", 1)[1].split("/")[0])
    pg = PostgresTarget(host="127.0.0.1", port=port, username="postgres", database="stats_macros")
    return _evaluate(WarehouseTarget(destination="postgres", postgres=pg))


def test_pct_is_null_on_zero_denominator(values: dict[str, float | None]) -> None:
    assert values["pct10"] is None
    assert values["pct13"] == pytest.approx(33.33)


def test_ratio_is_a_fraction_with_six_decimals_on_both_engines(values: dict[str, float | None]) -> None:
    assert values["ratio13"] == 0.333333 and values["ratio23"] == 0.666667
    assert values["ratio10"] is None and values["ratio_null"] is None
    assert values["ratio10_zero"] == 0.0  # the primary rates: 0 over nobody contacted, as the service says
