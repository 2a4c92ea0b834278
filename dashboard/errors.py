"""The one error type of the dashboard: a one-line cause and fix."""

from __future__ import annotations

from pipelines.core.errors import OutreachError


class ReportError(OutreachError):
    """The report cannot be written; the message names the cause and the fix in one line."""
