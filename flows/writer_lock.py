"""One writer at a time per DuckDB warehouse.

DuckDB lets one process write a database file, and concurrent writers inside a process would
interleave dlt's load jobs. Every stage that writes the warehouse (a workspace's load, the model
build and the BI publish) enters :func:`warehouse_writer`, which holds

1. a process-wide ``threading.Lock`` per warehouse path (subflows of one ``sync_all`` run in
   threads of one process), and
2. an exclusive ``flock`` on ``<warehouse>.writer.lock`` beside the file (runs that ``prefect
   serve`` starts in other processes on the same machine).

The tasks that enter it also carry the Prefect tag ``WRITER_TAG``: create a tag concurrency
limit of 1 for it (``prefect concurrency-limit create outreach-warehouse-writer 1``) and the
server serialises writers on any machine too.
"""

from __future__ import annotations

import fcntl
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WRITER_TAG = "outreach-warehouse-writer"

logger = logging.getLogger(__name__)

_guard = threading.Lock()
_thread_locks: dict[str, threading.RLock] = {}
_held = threading.local()  # per thread: lock file -> nesting depth


def lock_path_for(duckdb_path: str | Path) -> Path:
    """The lock file that guards a warehouse: ``<warehouse>.writer.lock`` in the same directory."""
    path = Path(duckdb_path).expanduser().resolve()
    return path.with_name(path.name + ".writer.lock")


def _thread_lock(key: str) -> threading.RLock:
    with _guard:
        return _thread_locks.setdefault(key, threading.RLock())


@contextmanager
def warehouse_writer(duckdb_path: str | Path, *, holder: str = "") -> Iterator[float]:
    """Hold the single-writer lock of ``duckdb_path``; yields the seconds spent waiting for it.

    Re-entrant within a thread (the pipeline reads the warehouse under the same lock).
    """
    lock_file = lock_path_for(duckdb_path)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    key = str(lock_file)
    started = time.monotonic()
    with _thread_lock(key):
        depth: dict[str, int] = _held.__dict__.setdefault("depth", {})
        if depth.get(key):
            depth[key] += 1
            try:
                yield 0.0
            finally:
                depth[key] -= 1
            return
        with open(lock_file, "a+") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            waited = time.monotonic() - started
            if waited > 0.5:
                logger.info("waited %.1f s for the warehouse writer lock (%s)", waited, holder or "writer")
            depth[key] = 1
            try:
                yield waited
            finally:
                depth[key] = 0
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class WarehouseLock:
    """A reusable lock object over :func:`warehouse_writer` (``with lock:``), for the pipeline."""

    def __init__(self, duckdb_path: str | Path, holder: str = "") -> None:
        self.duckdb_path = duckdb_path
        self.holder = holder
        self._contexts = threading.local()

    def __enter__(self) -> None:
        stack = self._contexts.__dict__.setdefault("stack", [])
        context = warehouse_writer(self.duckdb_path, holder=self.holder)
        context.__enter__()
        stack.append(context)

    def __exit__(self, *exc: object) -> None:
        self._contexts.stack.pop().__exit__(*exc)
