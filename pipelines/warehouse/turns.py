"""Turns: runs that touch the same workspace, or the same dlt pipeline, of one warehouse take turns.

The warehouse lock (`pipelines.warehouse.lock`) lets several syncs load a PostgreSQL warehouse at once. Two of them
must still never work on one workspace together: a full sync marks deleted the rows it did not load, so a
concurrent run's rows would look deleted, and two merges of the same keys collide (UniqueViolation). Nor
may two runs share one dlt working directory: a batch's pipeline is named after its first workspace, so
holding that workspace's turn is holding the pipeline's; the shared pipelines (webhook events, run
records) have turns of their own.

On PostgreSQL a turn is a session advisory lock per name, taken in sorted order (two runs wanting
overlapping sets wait, never deadlock), all in one session per holder; a waiter says for whom it waits
and gives up after `lock_timeout_s` in one line. A DuckDB file has one writing process at a time anyway
(its file lock), and another destination has no lock of its own: there, turns are taken within the
process only.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pipelines.core import constants
from pipelines.core.deadline import Deadline
from pipelines.warehouse.lock import DEFAULT_TIMEOUT_S, POLL_S, Holder, WarehouseBusyError

log = logging.getLogger(__name__)

TURN_LOCK_CLASS = 0x6F757475  # "outu": the advisory lock's first key; the second is the name's hash
_APP_PREFIX = "outreach-turn"

_local: dict[str, threading.Lock] = {}
_local_guard = threading.Lock()


def workspace_turn(workspace_id: str) -> str:
    return f"workspace:{workspace_id}"


def pipeline_turn(pipeline_name: str) -> str:
    return f"pipeline:{pipeline_name}"


@contextlib.contextmanager
def taking_turns(
    warehouse: Any,
    names: Iterable[str],
    what: str,
    *,
    timeout_s: float | None = None,
    notify: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold the turns `names` (see `workspace_turn`, `pipeline_turn`) of `warehouse`'s dataset."""
    wanted = sorted(set(names))
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    with contextlib.ExitStack() as stack:
        for name in wanted:  # within this process first: threads of one process share a PostgreSQL session
            stack.enter_context(_local_turn(f"{_scope(warehouse)}#{name}", what, name, timeout))
        if getattr(warehouse, "is_postgres", False) and wanted:
            stack.enter_context(_server_turns(warehouse, wanted, what, timeout, notify or log.warning))
        yield


def _scope(warehouse: Any) -> str:
    label = getattr(warehouse, "label", None)
    return f"{label or warehouse}/{constants.DATASET_NAME}"


@contextlib.contextmanager
def _local_turn(key: str, what: str, name: str, timeout: float) -> Iterator[None]:
    with _local_guard:
        mutex = _local.setdefault(key, threading.Lock())
    if not mutex.acquire(timeout=timeout):
        raise WarehouseBusyError(
            f"gave up after {timeout:.0f} s waiting for another {what} of this process on {name}: "
            "rerun when it has finished (or raise SOURCES__OUTREACH__LOCK_TIMEOUT_S)"
        )
    try:
        yield
    finally:
        mutex.release()


def _key(name: str) -> int:
    return zlib.crc32(f"{constants.DATASET_NAME}#{name}".encode()) & 0x7FFFFFFF


@contextlib.contextmanager
def _server_turns(
    warehouse: Any, names: list[str], what: str, timeout: float, notify: Callable[[str], None]
) -> Iterator[None]:
    conn = warehouse.connect()
    try:
        conn.autocommit = True
        me = Holder.me(what)
        with conn.cursor() as cur:
            cur.execute("select set_config('application_name', %s, false)", (_app_name(me),))
        deadline = time.monotonic() + timeout
        for name in names:
            told = ""
            while True:
                with conn.cursor() as cur:
                    cur.execute("select pg_try_advisory_lock(%s, %s)", (TURN_LOCK_CLASS, _key(name)))
                    (granted,) = cur.fetchone()
                    if granted:
                        break
                    line = f"waiting for {_holder(cur, name)} (it works on {name})"
                if line != told:
                    notify(line)
                    told = line
                if time.monotonic() >= deadline:
                    raise WarehouseBusyError(
                        f"gave up after {timeout:.0f} s {line}: rerun when it has finished "
                        "(or raise SOURCES__OUTREACH__LOCK_TIMEOUT_S)"
                    )
                Deadline(None).sleep(POLL_S)  # a signal ends the wait
        yield
    finally:
        with contextlib.suppress(Exception):
            conn.close()  # ends the session: PostgreSQL releases its advisory locks


def _holder(cur: Any, name: str) -> str:
    cur.execute(
        "select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid "
        "where l.locktype = 'advisory' and l.granted and l.classid = %s and l.objid = %s "
        "and l.objsubid = 2 and a.pid <> pg_backend_pid() limit 1",
        (TURN_LOCK_CLASS, _key(name)),
    )
    row = cur.fetchone()
    parts = str(row[0] if row else "").split("|")
    if len(parts) == 4 and parts[0] == _APP_PREFIX:
        return f"the {parts[1]} of process {parts[2]} ({parts[3]})"
    return "another run"


def _app_name(me: Holder) -> str:
    """`application_name` holds 63 bytes: prefix|what|pid|host, the host cut to fit."""
    head = f"{_APP_PREFIX}|{me.what[:16]}|{me.pid}|"
    return head + me.host[: max(0, 63 - len(head))]
