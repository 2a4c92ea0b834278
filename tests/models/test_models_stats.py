"""The rate macros every mart uses (`ratio`, `pct`), run by dbt on DuckDB and on PostgreSQL.

One `dbt show --inline` query per engine. The A/B test's statistics are Python (models/ab_test.py,
tests/models/test_models_ab_test.py): dbt-postgres runs no Python models.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from models.dbt_invoke import invoke
from pipelines.warehouse.destination import Warehouse


def _query() -> str:
    parts = [
        "select 'pct10' as kind, {{ pct('1', '0') }} as v",
        "select 'pct13', {{ pct('1', '3') }}",
        "select 'ratio10', {{ ratio('1', '0') }}",
        "select 'ratio10_zero', {{ ratio('1', '0', '0') }}",
        "select 'ratio13', {{ ratio('1', '3') }}",
        "select 'ratio_null', {{ ratio('1', 'cast(null as bigint)') }}",
        "select 'ratio23', {{ ratio('2', '3', '0') }}",
        "select 'tie_even', {{ ratio('21', '160') }}",  # 13.125%: an exact tie, to even (13.12)
        "select 'tie_odd', {{ ratio('1', '8') }}",  # 12.5%: exact
        "select 'tie_up', {{ ratio('107', '800') }}",  # 13.375%: an exact tie, to even (13.38)
        "select 'near', {{ ratio('6', '217') }}",  # 2.76498...%: 2.76, never 2.77 by rounding twice
    ]
    return "\nunion all\n".join(parts)


def _evaluate(target: Warehouse) -> dict[str, float | None]:
    outcome = invoke(["show", "--inline", _query(), "--limit", "-1"], target, target_dir="show_target")
    assert outcome.success, outcome.exception
    table = outcome.results[0].agate_table
    return {str(kind): (None if v is None else float(v)) for kind, v in table.rows}


@pytest.fixture(params=["duckdb", "postgres"])
def values(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, float | None]:
    if request.param == "duckdb":
        return _evaluate(Warehouse(destination="duckdb", duckdb_path=tmp_path / "scratch.duckdb"))
    server: Any = request.getfixturevalue("pg_server")
    monkeypatch: pytest.MonkeyPatch = request.getfixturevalue("monkeypatch")
    # the warehouse's credentials come the dlt way, as in every PostgreSQL command
    monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", server.create_database("stats_macros"))
    return _evaluate(Warehouse(destination="postgres"))


def test_pct_is_null_on_zero_denominator(values: dict[str, float | None]) -> None:
    assert values["pct10"] is None
    assert values["pct13"] == pytest.approx(33.33)


def test_ratio_rounds_as_the_service_on_both_engines(values: dict[str, float | None]) -> None:
    """The same double as the service's rates / 100 (sandbox/views.py: round(100 * part / whole, 2))."""
    for kind, (part, whole) in {
        "ratio13": (1, 3),
        "ratio23": (2, 3),
        "tie_even": (21, 160),
        "tie_odd": (1, 8),
        "tie_up": (107, 800),
        "near": (6, 217),
    }.items():
        assert values[kind] == round(100.0 * part / whole, 2) / 100, kind
    assert values["ratio10"] is None and values["ratio_null"] is None
    assert values["ratio10_zero"] == 0.0  # the primary rates: 0 over nobody contacted, as the service says
