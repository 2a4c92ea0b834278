"""The workspaces one run has taken: a flow that syncs each key in a subflow of its own (threads of one process)
syncs a workspace once when two of its keys open it (a read-only and a read-write key), as one `outreach sync`
over both keys does (`accounts.one_per_workspace`). Which workspace a key opens is known only from the answer to
its first request, so the subflows find out as they go, through this registry."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from pipelines.api.accounts import Workspace
from pipelines.core.shown import shown

#: workspace id -> the key that took it (in memory only), for the workspaces this run's syncs took; None outside
#: `one_sync_per_workspace`. The same key takes its workspace again: a retried task syncs what it took.
_TAKEN: ContextVar[dict[str, str] | None] = ContextVar("outreach_workspaces_taken", default=None)
_LOCK = threading.Lock()


@contextmanager
def one_sync_per_workspace() -> Iterator[None]:
    """Within the block, and in the threads started with a copy of its context, each workspace is synced once."""
    token = _TAKEN.set({})
    try:
        yield
    finally:
        _TAKEN.reset(token)


def take(found: Sequence[Workspace]) -> tuple[list[Workspace], list[str]]:
    """The workspaces of `found` that no other sync of this run took (now taken), and a line per one left out."""
    taken = _TAKEN.get()
    if taken is None:
        return list(found), []
    kept: list[Workspace] = []
    left_out: list[str] = []
    with _LOCK:
        for ws in found:
            if taken.setdefault(ws.workspace_id, ws.api_key) == ws.api_key:
                kept.append(ws)
            else:
                left_out.append(
                    f"workspace {shown(ws.name)} ({ws.workspace_id}) is synced once in this run, with another of "
                    "its keys"
                )
    return kept, left_out
