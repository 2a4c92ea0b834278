"""The build summary counts a test dbt skipped (its model failed) as skipped, never as FAILED."""

from __future__ import annotations

from models.report import BuildReport, NodeResult


def test_skipped_tests_are_counted_as_skipped() -> None:
    report = BuildReport(
        target="duckdb",
        results=[
            NodeResult("workspace_overview", "model", "error", kind="table", message="boom"),
            NodeResult("unique_a", "test", "pass"),
            NodeResult("unique_b", "test", "fail", failures=2),
            *(NodeResult(f"not_null_{i}", "test", "skipped") for i in range(5)),
        ],
    )
    line = next(x for x in report.summary().splitlines() if x.startswith("data tests:"))
    assert line == "data tests: 1/7 passed, 1 FAILED, 5 skipped"
    assert not report.passed
