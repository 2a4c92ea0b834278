"""Private dlt internals this package relies on, kept in one place, so that a dlt upgrade that changes them
breaks one module and its test.

dlt has no public switch to stop config resolution from being logged to its per-thread trace log
(`dlt.common.configuration.utils.get_resolved_traces()`, a `TraceLogContext` with `logging_enabled`).
A logged trace keeps the resolved config until the pipeline step ends, and the config keeps the exception
of a failed lookup, whose traceback keeps every caller's frame alive: resolving a destination client once
per chunk during an extract (`pipelines.events.loading.replied_events_from_pipeline`) would hold every chunk of
replies in memory until the extract ended. `tests/pipelines/core/test_dlt_private.py` fails, naming dlt, if an upgrade
changes this.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import dlt

try:
    from dlt.common.configuration.utils import get_resolved_traces
except ImportError as exc:  # pragma: no cover - only on a dlt upgrade
    raise ImportError(
        f"dlt {dlt.__version__} has no dlt.common.configuration.utils.get_resolved_traces: update "
        "pipelines/core/dlt_private.py (untraced_config) for this dlt version"
    ) from exc


@contextlib.contextmanager
def untraced_config() -> Iterator[None]:
    """Resolve dlt configuration inside the block without logging it to dlt's trace log (this thread)."""
    traces = get_resolved_traces()
    if not hasattr(traces, "logging_enabled"):  # pragma: no cover - only on a dlt upgrade
        raise RuntimeError(
            f"dlt {dlt.__version__}: TraceLogContext has no `logging_enabled`: update pipelines/core/dlt_private.py"
        )
    enabled, traces.logging_enabled = traces.logging_enabled, False
    try:
        yield
    finally:
        traces.logging_enabled = enabled
