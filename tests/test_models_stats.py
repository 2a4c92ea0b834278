"""The SQL macros behind variant_performance, run by dbt on DuckDB and on PostgreSQL, against scipy.

One `dbt show --inline` query per engine evaluates the erf-based normal CDF over a grid, the two-sided
p-value, the pooled two-proportion z-test (textbook cases and the undefined ones) and `pct`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import chi2_contingency, norm

from models.dbt_invoke import invoke
from models.settings import PostgresTarget, WarehouseTarget

GRID = [round(float(x), 3) for x in np.linspace(-6, 6, 121)]
Z_CASES = {  # name -> (x1, n1, x2, n2)
    "textbook": (200, 1000, 150, 1000),
    "mirrored": (150, 1000, 200, 1000),
    "not_significant": (12, 100, 8, 100),
    "no_replies": (0, 100, 0, 100),
    "no_sends": (5, 0, 3, 10),
    "all_replied": (10, 10, 10, 10),
}


def _query() -> str:
    values = ", ".join(f"({x})" for x in GRID)
    cdf = "select 'cdf' as kind, cast(x as double precision) as x, {{ normal_cdf('x') }} as v"
    p_value = "select 'p', cast(x as double precision), {{ two_sided_p_value('x') }}"
    parts = [f"{cdf} from (values {values}) as grid (x)", f"{p_value} from (values {values}) as grid (x)"]
    for i, (x1, n1, x2, n2) in enumerate(Z_CASES.values()):
        z = f"two_proportion_z('{x1}', '{n1}', '{x2}', '{n2}')"
        parts.append(f"select 'z', {i}, {{{{ {z} }}}}")
        parts.append(f"select 'zp', {i}, {{{{ two_sided_p_value({z}) }}}}")
    parts.append("select 'pct10', 0, {{ pct('1', '0') }}")
    parts.append("select 'pct13', 0, {{ pct('1', '3') }}")
    parts.append("select 'cdf_null', 0, {{ normal_cdf('cast(null as double precision)') }}")
    return "\nunion all\n".join(parts)


def _evaluate(target: WarehouseTarget) -> dict[tuple[str, float], float | None]:
    outcome = invoke(["show", "--inline", _query(), "--limit", "-1"], target, target_dir="show_target")
    assert outcome.success, outcome.exception
    table = outcome.results[0].agate_table
    return {(str(kind), float(x)): (None if v is None else float(v)) for kind, x, v in table.rows}


@pytest.fixture(params=["duckdb", "postgres"])
def values(request: pytest.FixtureRequest, tmp_path: Path) -> dict[tuple[str, float], float | None]:
    if request.param == "duckdb":
        return _evaluate(WarehouseTarget(destination="duckdb", duckdb_path=tmp_path / "scratch.duckdb"))
    server: Any = request.getfixturevalue("pg_server")
    dsn = server.create_database("stats_macros")
    port = int(dsn.rsplit(":", 1)[1].split("/")[0])
    pg = PostgresTarget(host="127.0.0.1", port=port, username="postgres", database="stats_macros")
    return _evaluate(WarehouseTarget(destination="postgres", postgres=pg))


def test_normal_cdf_and_p_value_match_scipy(values: dict[tuple[str, float], float | None]) -> None:
    worst_cdf = max(abs(float(values[("cdf", x)] or 0) - norm.cdf(x)) for x in GRID)
    worst_p = max(abs(float(values[("p", x)] or 0) - 2 * norm.sf(abs(x))) for x in GRID)
    assert worst_cdf < 2e-7 and worst_p < 3e-7  # Abramowitz & Stegun 7.1.26: error below 1.5e-7
    assert values[("cdf", 0.0)] == pytest.approx(0.5, abs=1e-9)
    assert values[("cdf_null", 0.0)] is None


def test_two_proportion_z_test(values: dict[tuple[str, float], float | None]) -> None:
    """200 of 1,000 against 150 of 1,000 (pooled p = 0.175): by hand SE = 0.0169926, z = 2.9424, p = 0.00326.

    The pooled z-test is the Pearson chi-square test of the 2x2 table without continuity correction
    (chi2 = z^2), which scipy computes independently.
    """
    index = {name: float(i) for i, name in enumerate(Z_CASES)}
    z, p = values[("z", index["textbook"])], values[("zp", index["textbook"])]
    assert z == pytest.approx(2.9424, abs=1e-4) and p == pytest.approx(0.00326, abs=1e-5)
    chi2, p_chi, _, _ = chi2_contingency([[200, 800], [150, 850]], correction=False)
    assert float(z or 0) ** 2 == pytest.approx(chi2, rel=1e-9)
    assert p == pytest.approx(p_chi, abs=2e-7)
    assert values[("z", index["mirrored"])] == pytest.approx(-float(z or 0))
    # 12/100 against 8/100: pooled p = 0.1, z = 0.9428, p = 0.3458: no winner at 5%
    assert values[("zp", index["not_significant"])] == pytest.approx(0.3458, abs=1e-4)
    for undefined in ("no_replies", "no_sends", "all_replied"):
        assert values[("z", index[undefined])] is None and values[("zp", index[undefined])] is None


def test_pct_is_null_on_zero_denominator(values: dict[tuple[str, float], float | None]) -> None:
    assert values[("pct10", 0.0)] is None
    assert values[("pct13", 0.0)] == pytest.approx(33.33)
