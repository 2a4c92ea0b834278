"""The sync of the Outreach Campaign Service API (pipelines/README.md).

``from pipelines import outreach`` gives the dlt source for a dlt user's own pipeline
(`pipelines.source.dlt_source`). It is imported on first use, so the commands' light start (a bad key fails
before dlt is even imported) stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipelines.source.dlt_source import outreach

__all__ = ["outreach"]


def __getattr__(name: str) -> Any:
    if name == "outreach":
        from pipelines.source.dlt_source import outreach

        return outreach
    raise AttributeError(f"module 'pipelines' has no attribute {name!r}")
