"""One line for a failure: the real cause behind dlt's wrappers, which a user can act on.

`explain` is the one place the engine turns an exception into the line a user reads; the work is
`pipelines.warehouse.diagnose.explain` (it also checks the warehouse file locally: lock holder, header, write
probe, free space).
"""

from __future__ import annotations

from pathlib import Path

from pipelines.core.errors import OutreachError
from pipelines.warehouse.diagnose import chain


class WarehouseUnavailable(OutreachError):
    """The warehouse cannot be opened for writing (found before the first API request)."""


def outreach_error(exc: BaseException) -> OutreachError | None:
    """The first of our own errors in the chain (they already say cause and fix), if any."""
    return next((e for e in chain(exc) if isinstance(e, OutreachError)), None)


def explain(exc: BaseException, duckdb_path: Path | None = None) -> str:
    """The root cause of `exc` in one line, with the fix when it is known (`pipelines.warehouse.diagnose.explain`:
    our own errors as they are; an OSError by its errno; a DuckDB error by checking the file again)."""
    from pipelines.warehouse.diagnose import explain as diagnose_explain

    return diagnose_explain(exc, duckdb_path)
