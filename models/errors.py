"""Errors a model build can raise, in the one family of `pipelines.core.errors.OutreachError`; every message is
one line naming the cause and the fix."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipelines.core import errors as sync_errors

if TYPE_CHECKING:
    from models.report import BuildReport


class ModelError(sync_errors.OutreachError):
    """Base class: the build stopped; the published reporting relations and the BI file are unchanged."""


class ConfigError(ModelError, sync_errors.ConfigError):
    """A setting is missing or wrong."""


class WarehouseError(ModelError, sync_errors.WarehouseError):
    """The warehouse is missing, not synced yet, or cannot be opened."""


class PublishError(ModelError):
    """The build passed but the BI file could not be written; the previous BI file is untouched."""


class BuildFailed(ModelError):
    """dbt reported failing models or tests; `report` holds every result, `problems` one line each."""

    def __init__(self, report: BuildReport) -> None:
        self.report = report
        self.problems = report.problem_lines()
        super().__init__(
            f"models failed: {'; '.join(self.problems) or 'dbt stopped without a result'} "
            "(the published reporting tables and the BI file are unchanged)"
        )


class ModelBuildError(BuildFailed):
    """At least one model (or the run itself) errored."""


class DataTestFailure(BuildFailed):
    """Every model built, but at least one data test failed."""
