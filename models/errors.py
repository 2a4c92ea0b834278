"""Errors a model build can raise, in the one family of `pipelines.core.errors.OutreachError`; every message is
one line naming the cause and the fix."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

from pipelines.core import errors as sync_errors
from pipelines.core.deadline import EXIT_CODES

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


class BuildInterrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT), or SIGTERM, stopped the build; the message says what it left and what to run. A
    KeyboardInterrupt still, so that a caller that stops on one (a Prefect flow, the demo) stops on this one too,
    instead of taking it for a failed build to retry. `stage`: "start" (before dbt built anything), "aside" (dbt was
    building on DuckDB, where the incremental tables are renamed aside and only a build puts them back:
    macros/incremental_atomic.sql), "copies" (dbt was building on PostgreSQL, beside the published tables) or
    "built" (the swap had published the new tables). `number`: the signal, SIGINT or SIGTERM."""

    def __init__(self, stage: str = "start", number: int = signal.SIGINT) -> None:
        self.stage = stage
        self.exit_code = EXIT_CODES[signal.Signals(number)]  # as shells report it, and as the sync exits
        head = f"models interrupted by {signal.Signals(number).name}"
        if stage == "built":
            message = (
                f"{head} after the build passed: the reporting tables are the new ones, the BI file is still the "
                "previous build's; run `outreach models` again to publish it"
            )
        elif stage == "copies":
            message = (
                f"{head} during the build: the published reporting tables are unchanged; the copies dbt was "
                "building beside them (`<name>__next`) stay until the next build replaces them; run `outreach "
                "models` again"
            )
        elif stage == "aside":
            message = (
                f"{head} during the build: the BI file is unchanged, and so are the warehouse's reporting tables "
                "but the incremental ones dbt had renamed aside (`<name>__next`), which the next build puts back; "
                "run `outreach models` again"
            )
        else:
            message = (
                f"{head} before the build finished: the published reporting tables and the BI file are unchanged; "
                "run `outreach models` again"
            )
        super().__init__(message)
