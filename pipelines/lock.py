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
import json
import logging
import os
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pipelines.deadline import Deadline
from pipelines.errors import OutreachError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 600.0
POLL_S = 0.2
PG_LOCK_CLASS = 0x6F757472  # "outr": the advisory lock's first key; the second is the dataset's hash
_APP_PREFIX = "outreach-lock"

Notify = Callable[[str], None]


class WarehouseBusyError(OutreachError):
    """Another writer held the warehouse for longer than lock_timeout_s."""


class Connectable(Protocol):
    """What the PostgreSQL lock needs: a DB-API connection to the warehouse's database."""

    def __call__(self) -> Any: ...


@dataclass(frozen=True)
class LockTarget:
    """A warehouse as the lock sees it: a DuckDB file (`lock_file`) or a server database (`connect`)."""

    key: str
    lock_file: Path | None = None
    connect: Connectable | None = field(default=None, compare=False)
    scope: str = "outreach"  # the dataset: one lock per dataset on a server

    @property
    def is_file(self) -> bool:
        return self.lock_file is not None


@dataclass(frozen=True)
class Holder:
    """Who holds the lock: what it does, since when, which process on which host."""

    what: str
    started_at: str
    pid: int
    host: str

    @classmethod
    def me(cls, what: str) -> Holder:
        now = datetime.now(UTC).astimezone()
        return cls(
            what=what, started_at=now.strftime("%Y-%m-%d %H:%M:%S %Z"), pid=os.getpid(), host=socket.gethostname()
        )

    def line(self) -> str:
        return f"the {self.what} started at {self.started_at} by process {self.pid} ({self.host})"


def lock_path_for(duckdb_path: str | Path) -> Path:
    """The lock file that guards a DuckDB warehouse: ``<warehouse>.writer.lock`` in the same directory."""
    path = Path(duckdb_path).expanduser().resolve()
    return path.with_name(path.name + ".writer.lock")


def file_target(duckdb_path: str | Path) -> LockTarget:
    lock_file = lock_path_for(duckdb_path)
    return LockTarget(key=str(lock_file), lock_file=lock_file)


def as_target(target: Any) -> LockTarget:
    """A LockTarget from a DuckDB path, a LockTarget, or anything with ``lock_target()`` (a Warehouse)."""
    if isinstance(target, LockTarget):
        return target
    if isinstance(target, (str, Path)):
        return file_target(target)
    return target.lock_target()  # type: ignore[no-any-return]


# -- the process-level hold ----------------------------------------------------------------------------
class _Hold:
    """This process's hold on one warehouse: counted, shared by every thread of the process."""

    def __init__(self, target: LockTarget) -> None:
        self.target = target
        self.count = 0
        self.exclusive = False
        self.handle: Any = None  # the open lock file, or the PostgreSQL session
        self.busy = threading.Condition()
        self.acquiring = False


_holds: dict[str, _Hold] = {}
_holds_guard = threading.Lock()
_access: dict[str, threading.Lock] = {}


def _hold_for(target: LockTarget) -> _Hold:
    with _holds_guard:
        hold = _holds.get(target.key)
        if hold is None:
            hold = _holds[target.key] = _Hold(target)
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
            _acquire(state, Holder.me(what), wanted_exclusive, timeout_s, notify)
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
            _release(state)


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


class _Reusable:
    """A context manager factory as a reusable ``with obj:`` (one context per entry, per thread)."""

    def __init__(self) -> None:
        self._contexts = threading.local()

    def _context(self) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def __enter__(self) -> None:
        stack = self._contexts.__dict__.setdefault("stack", [])
        context = self._context()
        context.__enter__()
        stack.append(context)

    def __exit__(self, *exc: object) -> None:
        self._contexts.stack.pop().__exit__(*exc)


class Access(_Reusable):
    """`access` as a reusable ``with`` object (what a batch's warehouse reader holds around each read)."""

    def __init__(self, target: Any) -> None:
        super().__init__()
        self.target = as_target(target)

    def _context(self) -> contextlib.AbstractContextManager[Any]:
        return access(self.target)


class WarehouseLock(_Reusable):
    """A reusable ``with lock:`` over `warehouse_writer` (for code that takes a context manager object)."""

    def __init__(self, target: Any, holder: str = "", *, shared: bool = False, timeout_s: float | None = None) -> None:
        super().__init__()
        self.target = target
        self.holder = holder
        self.shared = shared
        self.timeout_s = timeout_s

    def _context(self) -> contextlib.AbstractContextManager[Any]:
        return warehouse_writer(self.target, what=self.holder, shared=self.shared, timeout_s=self.timeout_s)


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
            holder = _read_holder(tgt.lock_file)
            return holder if isinstance(holder, Holder) else None
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None


# -- acquiring and releasing -------------------------------------------------------------------------
def _acquire(state: _Hold, me: Holder, exclusive: bool, timeout_s: float | None, notify: Notify | None) -> None:
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


def _release(state: _Hold) -> None:
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


def _try_file(state: _Hold, me: Holder) -> Holder | str | None:
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
        return _read_holder(lock_file)
    handle.seek(0)
    handle.truncate()
    handle.write(json.dumps(me.__dict__))
    handle.flush()
    return None


def _read_holder(lock_file: Path) -> Holder | str:
    try:
        data = json.loads(lock_file.read_text() or "{}")
        return Holder(
            what=str(data["what"]), started_at=str(data["started_at"]), pid=int(data["pid"]), host=str(data["host"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return f"another writer of the warehouse (its lock file {lock_file} names none)"


def _scope_key(scope: str) -> int:
    return zlib.crc32(scope.encode()) & 0x7FFFFFFF


def _try_server(state: _Hold, me: Holder, exclusive: bool) -> Holder | str | None:
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


def _close_session(state: _Hold) -> None:
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
