"""Taking and releasing this process's hold on a warehouse: an exclusive ``flock`` on the DuckDB file's
lock file, or a PostgreSQL advisory lock (shared for loads, exclusive for the model build) whose session's
``application_name`` tells a waiter who holds it. A waiter polls until `timeout_s`, then gives up in one
line (`WarehouseBusyError`)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import threading
import time
import zlib
from datetime import UTC, datetime
from typing import Any

from pipelines.core.deadline import Deadline
from pipelines.warehouse.lock_holder import (
    DEFAULT_TIMEOUT_S,
    POLL_S,
    Holder,
    LockTarget,
    Notify,
    WarehouseBusyError,
    read_holder,
)

log = logging.getLogger(__name__)

PG_LOCK_CLASS = 0x6F757472  # "outr": the advisory lock's first key; the second is the dataset's hash
_APP_PREFIX = "outreach-lock"


class Hold:
    """This process's hold on one warehouse: counted, shared by every thread of the process."""

    def __init__(self, target: LockTarget) -> None:
        self.target = target
        self.count = 0
        self.exclusive = False
        self.handle: Any = None  # the open lock file, or the PostgreSQL session
        self.busy = threading.Condition()
        self.acquiring = False


def acquire(state: Hold, me: Holder, exclusive: bool, timeout_s: float | None, notify: Notify | None) -> None:
    timeout = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
    deadline = time.monotonic() + timeout
    told = ""
    if not state.target.is_file and state.target.connect is None:
        state.exclusive = exclusive  # a destination without a lock of its own: this process only
        return
    while True:
        other = _try_file(state, me) if state.target.is_file else _try_server(state, me, exclusive)
        if other is None:
            state.exclusive = exclusive
            return
        line = f"waiting for {other.line() if isinstance(other, Holder) else other}"
        if line != told:
            (notify or log.warning)(line)
            told = line
        if time.monotonic() >= deadline:
            if not state.target.is_file and state.count == 0:
                _close_session(state)
            raise WarehouseBusyError(
                f"gave up after {timeout:.0f} s {line}: rerun when it has finished "
                "(or raise SOURCES__OUTREACH__LOCK_TIMEOUT_S)"
            )
        Deadline(None).sleep(POLL_S)  # a signal ends the wait


def release(state: Hold) -> None:
    if state.target.is_file:
        handle, state.handle = state.handle, None
        if handle is not None:
            with contextlib.suppress(OSError):
                handle.seek(0)
                handle.truncate()
                handle.flush()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            handle.close()
    else:
        _close_session(state)
    state.exclusive = False


def _try_file(state: Hold, me: Holder) -> Holder | str | None:
    """Take the flock now (writing `me` into the file), or return who holds it."""
    lock_file = state.target.lock_file
    assert lock_file is not None
    if state.handle is None:
        lock_file.parent.mkdir(parents=True, exist_ok=True)
        state.handle = open(lock_file, "a+")  # noqa: SIM115 - kept open while held
    handle = state.handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise
        return read_holder(lock_file)
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(me.__dict__))
    handle.flush()
    return None


def _scope_key(scope: str) -> int:
    return zlib.crc32(scope.encode()) & 0x7FFFFFFF


def _try_server(state: Hold, me: Holder, exclusive: bool) -> Holder | str | None:
    """Take the advisory lock now (shared or exclusive), or return who holds it in the conflicting mode."""
    if state.handle is None:
        assert state.target.connect is not None
        conn = state.target.connect()
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("select set_config('application_name', %s, false)", (_encode_app_name(me),))
        state.handle = conn
    fn = "pg_try_advisory_lock" if exclusive else "pg_try_advisory_lock_shared"
    key = _scope_key(state.target.scope)
    with state.handle.cursor() as cur:
        cur.execute(f"select {fn}(%s, %s)", (PG_LOCK_CLASS, key))
        (granted,) = cur.fetchone()
        if granted:
            if exclusive and not state.exclusive and state.count > 0:
                # upgraded: drop the shared hold this session had, keep the exclusive one
                cur.execute("select pg_advisory_unlock_shared(%s, %s)", (PG_LOCK_CLASS, key))
            return None
        cur.execute(
            "select a.application_name from pg_locks l join pg_stat_activity a on a.pid = l.pid "
            "where l.locktype = 'advisory' and l.granted and l.classid = %s and l.objid = %s "
            "and l.objsubid = 2 and a.pid <> pg_backend_pid() order by l.mode desc limit 1",
            (PG_LOCK_CLASS, key),
        )
        row = cur.fetchone()
    holder = _decode_app_name(row[0]) if row else None
    return holder or "another writer of the warehouse"


def _close_session(state: Hold) -> None:
    conn, state.handle = state.handle, None
    if conn is not None:
        with contextlib.suppress(Exception):
            conn.close()  # ends the session: PostgreSQL releases its advisory locks


def _encode_app_name(me: Holder) -> str:
    """`application_name` holds 63 bytes: prefix|what|epoch|pid|host, the host cut to fit."""
    epoch = int(datetime.now(UTC).timestamp())
    head = f"{_APP_PREFIX}|{me.what[:16]}|{epoch}|{me.pid}|"
    return head + me.host[: max(0, 63 - len(head))]


def _decode_app_name(value: Any) -> Holder | None:
    parts = str(value or "").split("|")
    if len(parts) != 5 or parts[0] != _APP_PREFIX:
        return None
    try:
        started = datetime.fromtimestamp(int(parts[2]), UTC).astimezone()
        return Holder(
            what=parts[1], started_at=started.strftime("%Y-%m-%d %H:%M:%S %Z"), pid=int(parts[3]), host=parts[4]
        )
    except ValueError:
        return None
