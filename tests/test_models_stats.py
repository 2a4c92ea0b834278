"""The significance test in SQL: the erf-based normal CDF and the pooled two-proportion z-test."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import numpy as np
import pytest
from scipy.stats import chi2_contingency, norm

from models.graph import macro_files


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    connection = duckdb.connect()
    connection.execute("create schema reporting")
    for path in macro_files():
        connection.execute(path.read_text())
    yield connection
    connection.close()


def _one(con: duckdb.DuckDBPyConnection, sql: str, *params: object) -> float:
    return con.execute(sql, list(params)).fetchall()[0][0]


def test_normal_cdf_matches_scipy(con: duckdb.DuckDBPyConnection) -> None:
    grid = np.round(np.linspace(-6, 6, 241), 3).tolist()
    got = con.execute("select x, reporting.normal_cdf(x) from unnest(?::double[]) t(x) order by x", [grid]).fetchall()
    worst = max(abs(p - norm.cdf(x)) for x, p in got)
    assert worst < 2e-7
    assert _one(con, "select reporting.normal_cdf(1.959963985)") == pytest.approx(0.975, abs=1e-7)
    assert _one(con, "select reporting.normal_cdf(0)") == pytest.approx(0.5, abs=1e-9)
    assert _one(con, "select reporting.normal_cdf(null)") is None


def test_two_sided_p_value_matches_scipy(con: duckdb.DuckDBPyConnection) -> None:
    for z in (0.0, 0.5, -1.0, 1.96, -2.5758, 3.2905, 5.0):
        assert _one(con, "select reporting.two_sided_p_value(?)", z) == pytest.approx(2 * norm.sf(abs(z)), abs=2e-7)


def test_textbook_two_proportion_z_test(con: duckdb.DuckDBPyConnection) -> None:
    """200 replies of 1,000 sends against 150 of 1,000 (pooled p = 0.175).

    By hand: SE = sqrt(0.175 * 0.825 * (1/1000 + 1/1000)) = 0.0169926, z = 0.05 / SE = 2.9424,
    two-sided p = 0.00326. The pooled z-test is the Pearson chi-square test of the 2x2 table
    without continuity correction (chi2 = z^2), which scipy computes independently.
    """
    z = _one(con, "select reporting.two_proportion_z(200, 1000, 150, 1000)")
    p = _one(con, "select reporting.two_sided_p_value(reporting.two_proportion_z(200, 1000, 150, 1000))")
    assert z == pytest.approx(2.9424, abs=1e-4)
    assert p == pytest.approx(0.00326, abs=1e-5)
    chi2, p_chi, _, _ = chi2_contingency([[200, 800], [150, 850]], correction=False)
    assert z**2 == pytest.approx(chi2, rel=1e-9)
    assert p == pytest.approx(p_chi, abs=2e-7)  # the erf approximation is good to 1.5e-7
    # symmetric, and undefined cases are null rather than errors
    assert _one(con, "select reporting.two_proportion_z(150, 1000, 200, 1000)") == pytest.approx(-z)
    assert _one(con, "select reporting.two_proportion_z(0, 100, 0, 100)") is None
    assert _one(con, "select reporting.two_proportion_z(5, 0, 3, 10)") is None
    assert _one(con, "select reporting.two_proportion_z(10, 10, 10, 10)") is None


def test_not_significant_difference_is_not_a_winner(con: duckdb.DuckDBPyConnection) -> None:
    """12/100 against 8/100: pooled p = 0.1, SE = 0.042426, z = 0.9428, p = 0.3458: no winner at 5%."""
    p = _one(con, "select reporting.two_sided_p_value(reporting.two_proportion_z(12, 100, 8, 100))")
    assert p == pytest.approx(2 * norm.sf(0.04 / np.sqrt(0.1 * 0.9 * 0.02)), abs=1e-6)
    assert p == pytest.approx(0.3458, abs=1e-4) and p > 0.05


def test_pct_is_null_on_zero_denominator(con: duckdb.DuckDBPyConnection) -> None:
    assert _one(con, "select reporting.pct(1, 0)") is None
    assert _one(con, "select reporting.pct(1, 3)") == pytest.approx(33.33)
