"""One warehouse lock, taken by every writer: `outreach sync`, ``python -m pipelines``, the Prefect flows,
`outreach models` and the BI publish.

* **DuckDB.** An exclusive ``flock`` on ``<warehouse>.writer.lock`` beside the file (DuckDB allows one
  writing process per file). The holder writes what it does, its pid, host and start time into that
  file; a waiter reads it and says "waiting for the sync started at <time> by process <pid> (<host>)".
* **PostgreSQL.** A session-level advisory lock on the server: loads take it *shared* (workspaces,
  workers and machines load at once; each dlt pipeline has its own staging dataset), the model build
  *exclusive* (it reads a committed state, never a load half done). The holder's description rides in
  its session's ``application_name``, where a waiter finds it through ``pg_locks``.

Within a process the lock is counted: every thread of a sync shares the one process-level hold, and
`access` (a mutex per warehouse) keeps the threads' DuckDB reads and loads one at a time. A waiter gives
up after `timeout_s` with that same line (`WarehouseBusyError`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from pipelines.warehouse.lock_acquire import Hold, acquire, release
from pipelines.warehouse.lock_holder import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from pipelines.warehouse.lock_holder import POLL_S as POLL_S
from pipelines.warehouse.lock_holder import Holder as Holder
from pipelines.warehouse.lock_holder import LockTarget as LockTarget
from pipelines.warehouse.lock_holder import Notify, as_target, read_holder
from pipelines.warehouse.lock_holder import WarehouseBusyError as WarehouseBusyError
from pipelines.warehouse.lock_holder import file_target as file_target
from pipelines.warehouse.lock_holder import lock_path_for as lock_path_for

log = logging.getLogger(__name__)

# -- the process-level hold ----------------------------------------------------------------------------
_holds: dict[str, Hold] = {}
_holds_guard = threading.Lock()
_access: dict[str, threading.Lock] = {}


def _hold_for(target: LockTarget) -> Hold:
    with _holds_guard:
        hold = _holds.get(target.key)
        if hold is None:
            hold = _holds[target.key] = Hold(target)
        return hold


@contextlib.contextmanager
def hold(
    target: Any,
    what: str,
    *,
    shared: bool = False,
    timeout_s: float | None = None,
    notify: Notify | None = None,
) -> Iterator[float]:
    """Hold the warehouse lock for this process; yields the seconds spent waiting for it.

    `shared` matters on PostgreSQL only (a DuckDB file has one writer). Re-entrant: a second hold in
    the same process (any thread) counts up and returns at once, unless it needs exclusive access
    while this process holds the lock shared (then it upgrades, waiting like a first hold).
    """
    tgt = as_target(target)
    state = _hold_for(tgt)
    wanted_exclusive = not shared or tgt.is_file
    started = time.monotonic()
    with state.busy:
        while state.acquiring:
            state.busy.wait()
        must_take = state.count == 0 or (wanted_exclusive and not state.exclusive)
        if must_take:
            state.acquiring = True
    if must_take:
        try:
            acquire(state, Holder.me(what), wanted_exclusive, timeout_s, notify)
        finally:
            with state.busy:
                state.acquiring = False
                state.busy.notify_all()
    with state.busy:
        state.count += 1
    waited = time.monotonic() - started
    if waited > 0.5:
        log.info("waited %.1f s for the warehouse lock (%s)", waited, what)
    try:
        yield waited
    finally:
        with state.busy:
            state.count -= 1
            last = state.count == 0
        if last:
            release(state)


@contextlib.contextmanager
def access(target: Any) -> Iterator[None]:
    """One thread of this process at a time in a DuckDB warehouse (reads and loads); free on a server."""
    tgt = as_target(target)
    if not tgt.is_file:
        yield
        return
    with _holds_guard:
        mutex = _access.setdefault(tgt.key, threading.Lock())
    with mutex:
        yield


@contextlib.contextmanager
def warehouse_writer(
    target: Any,
    *,
    holder: str = "",
    what: str = "",
    shared: bool = False,
    timeout_s: float | None = None,
    notify: Notify | None = None,
) -> Iterator[float]:
    """`hold` plus `access`: what one writing step takes (a load, the model build, the BI publish).

    Yields the seconds spent waiting. On PostgreSQL pass ``shared=True`` for loads.
    """
    with hold(target, what or holder or "writer", shared=shared, timeout_s=timeout_s, notify=notify) as waited:
        with access(target):
            yield waited


class Access:
    """`access` as a reusable ``with`` object (what a batch's warehouse reader holds around each read): one
    context per entry, per thread."""

    def __init__(self, target: Any) -> None:
        self.target = as_target(target)
        self._contexts = threading.local()

    def __enter__(self) -> None:
        stack = self._contexts.__dict__.setdefault("stack", [])
        context = access(self.target)
        context.__enter__()
        stack.append(context)

    def __exit__(self, *exc: object) -> None:
        self._contexts.stack.pop().__exit__(*exc)


def current_holder(target: Any) -> Holder | None:
    """Who holds a DuckDB warehouse's lock right now, without taking it (None: nobody, or not a file)."""
    tgt = as_target(target)
    if tgt.lock_file is None or not tgt.lock_file.exists():
        return None
    with open(tgt.lock_file) as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = read_holder(tgt.lock_file)
            return holder if isinstance(holder, Holder) else None
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None
