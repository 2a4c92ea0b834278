"""What the warehouse lock is taken on (`LockTarget`: a DuckDB file's lock file, or a server database) and
who holds it (`Holder`: what it does, since when, which process on which host), as a waiter tells it."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pipelines.core.errors import OutreachError

DEFAULT_TIMEOUT_S = 600.0
POLL_S = 0.2

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


def read_holder(lock_file: Path) -> Holder | str:
    try:
        data = json.loads(lock_file.read_text() or "{}")
        return Holder(
            what=str(data["what"]), started_at=str(data["started_at"]), pid=int(data["pid"]), host=str(data["host"])
        )
    except (OSError, ValueError, KeyError, TypeError):
        return f"another writer of the warehouse (its lock file {lock_file} names none)"
