"""Errors a model build can raise; every message names the cause and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from models.report import BuildReport, DataTestResult


class ModelError(Exception):
    """Base class: the build stopped; the previous reporting tables are intact."""


class WarehouseError(ModelError):
    """The warehouse file is missing, not synced yet, or locked by another writer."""


class ModelBuildError(ModelError):
    """One model's SQL failed; names the file and DuckDB's reason."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"model {path} failed: {reason} (fix the SQL; previous reporting tables are intact)")


class PublishError(ModelError):
    """The build committed but the BI file could not be written; the old BI file is untouched."""


class DataTestFailure(ModelError):
    """One or more data tests returned rows; names each failing test and its row count."""

    def __init__(self, failures: list[DataTestResult], report: BuildReport) -> None:
        self.failures = failures
        self.report = report
        listed = ", ".join(f"{t.name} ({t.rows} rows)" for t in failures)
        super().__init__(
            f"data tests failed: {listed}; the build was rolled back and the BI file not published "
            f"(inspect with the SQL in models/tests/)"
        )
