"""The webhook spool: append-only, fsynced, rotated JSON-lines files.

The receiver (``receiver/``) writes, the loader (``pipelines/events/loading.py``) reads
(`pipelines.events.spool_reader`). This module, with the file layout of `pipelines.events.spool_files`, is the whole
contract between them; it imports nothing of either.

Layout of a spool directory::

    events-<utc stamp>-<pid>.jsonl.tmp    being created (ignored by readers)
    events-<utc stamp>-<pid>.jsonl.open   the live file of a running writer (flock held)
    events-<utc stamp>-<pid>.jsonl        sealed: complete, never written again
    done/events-....jsonl                 sealed files whose load has committed (pruned after 7 days)
    rejected/events-....jsonl             loaded files with lines that are no spool record (kept, never pruned)

One line is one delivery: a JSON object (see `make_record`) ending in ``\\n``.
A writer acknowledges a record only after the line and its newline are
fsynced. A line without its newline (a writer killed mid-write) is a torn tail
and is never read. A live file whose writer died (its flock is free) is sealed
by the next reader or writer, so its acknowledged lines are not stranded.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.core import constants
from pipelines.core.errors import ConfigError
from pipelines.core.root_cause import explain_oserror, one_line
from pipelines.events.spool_files import DONE_DIR as DONE_DIR
from pipelines.events.spool_files import OPEN, PREFIX, TMP, fsync_dir, seal_orphans

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
DEFAULT_SPOOL_DIR = Path(constants.DEFAULT_SPOOL_DIR)
DEFAULT_MAX_FILE_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_FILE_AGE_S = 60.0

#: The subscribable events (api-spec part 6). Anything else is refused by the receiver.
EVENT_KEYS: tuple[str, ...] = (
    "lead.replied",
    "lead.bounced",
    "lead.unsubscribed",
    "lead.opened",
    "lead.clicked",
    "campaign.completed",
)

_file_counter = itertools.count()


class SpoolWriteError(OSError):
    """A record could not be made durable; the delivery must not be acknowledged."""


def canonical_json(payload: Any) -> str:
    """Key-sorted, compact JSON: the same event always serialises to the same text."""
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_id_for(payload: Mapping[str, Any]) -> str:
    """Stable event key: SHA-256 of the canonical payload (event, created_at, data).

    The delivery carries no event id, and headers (timestamp, signature) change
    on every retry, so the payload itself is the identity: a retried or replayed
    delivery gets the same id and is merged, not duplicated.
    """
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()[:32]


def make_record(
    payload: Mapping[str, Any], *, workspace_id: str | None = None, received_at: datetime | None = None
) -> dict[str, Any]:
    """One spool record for a verified delivery."""
    received = received_at or datetime.now(UTC)
    return {
        "v": FORMAT_VERSION,
        "event_id": event_id_for(payload),
        "event": payload.get("event"),
        "received_at": received.isoformat(timespec="microseconds"),
        "workspace_id": workspace_id,
        "payload": payload,
    }


def encode_record(record: Mapping[str, Any]) -> bytes:
    """A record as one newline-terminated line (no newline can occur inside)."""
    return (canonical_json(record) + "\n").encode("utf-8")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class SpoolWriter:
    """Appends records durably; thread-safe, with group commit.

    `append` returns only after its line is written and fsynced. Concurrent
    callers share one fsync: whoever holds the flush lock writes every pending
    line, so a burst costs a few fsyncs rather than one per delivery. Files
    rotate when they exceed `max_bytes` or `max_age_s` (checked on append and by
    `rotate_if_due`, which a server calls periodically so idle files get sealed).
    """

    def __init__(
        self,
        spool_dir: Path | str,
        *,
        max_bytes: int = DEFAULT_MAX_FILE_BYTES,
        max_age_s: float = DEFAULT_MAX_FILE_AGE_S,
        fsync: bool = True,
    ) -> None:
        self.spool_dir = Path(spool_dir)
        self.max_bytes = max_bytes
        self.max_age_s = max_age_s
        self._fsync = fsync
        try:
            self.spool_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"cannot use {self.spool_dir} as the webhook spool: {explain_oserror(exc) or one_line(exc)} "
                "(pass --spool with a writable directory)"
            ) from None
        seal_orphans(self.spool_dir)
        self._state_lock = threading.Lock()  # guards the pending queue and sequence numbers
        self._flush_lock = threading.Lock()  # one writer of the file at a time
        self._pending: list[bytes] = []
        self._enqueued = 0
        self._durable = 0
        self._failed: list[tuple[int, int]] = []
        self._fd: int | None = None
        self._path: Path | None = None
        self._opened_at = 0.0
        self._size = 0
        self._closed = False
        self.fsyncs = 0

    # -- public -----------------------------------------------------------
    def append(self, record: Mapping[str, Any]) -> None:
        """Append one record; returns once it is durable, raises SpoolWriteError if not."""
        self.append_line(encode_record(record))

    def append_line(self, line: bytes) -> None:
        """Append one already-encoded, newline-terminated line durably."""
        if not line.endswith(b"\n") or b"\n" in line[:-1]:
            raise ValueError("a spool line must be exactly one newline-terminated line")
        with self._state_lock:
            if self._closed:
                raise SpoolWriteError("spool writer is closed")
            self._enqueued += 1
            seq = self._enqueued
            self._pending.append(line)
        with self._flush_lock:
            if self._durable < seq and not self._is_failed(seq):
                self._flush()
            if self._is_failed(seq):
                raise SpoolWriteError(
                    f"could not write the spool in {self.spool_dir}: check disk space and permissions"
                )

    def rotate_if_due(self) -> Path | None:
        """Seal the live file if it is too old; returns the sealed path, if any."""
        with self._flush_lock:
            if self._fd is not None and time.monotonic() - self._opened_at >= self.max_age_s:
                return self._seal()
        return None

    def rotate(self) -> Path | None:
        """Seal the live file now (if there is one)."""
        with self._flush_lock:
            return self._seal()

    def close(self) -> None:
        """Seal the live file; later appends fail."""
        with self._state_lock:
            self._closed = True
        with self._flush_lock:
            if self._pending:
                self._flush()
            self._seal()

    @property
    def current_path(self) -> Path | None:
        return self._path

    # -- internals (called with the flush lock held) -----------------------
    def _is_failed(self, seq: int) -> bool:
        return any(first <= seq <= last for first, last in self._failed)

    def _flush(self) -> None:
        with self._state_lock:
            batch, self._pending = self._pending, []
            first, last = self._durable + 1, self._enqueued
        if not batch:
            return
        data = b"".join(batch)
        try:
            if self._fd is None:
                self._open_new()
            assert self._fd is not None
            _write_all(self._fd, data)
            if self._fsync:
                os.fdatasync(self._fd)
                self.fsyncs += 1
        except OSError as exc:
            log.error(
                "spool write failed (%s); %d deliveries will be refused and retried by the sender", exc, len(batch)
            )
            self._failed.append((first, last))
            self._failed = self._failed[-64:]
            # A failed write may leave a partial line: seal that file so the next
            # line starts in a fresh file and the torn part stays a torn tail.
            with contextlib.suppress(OSError):
                self._seal()
            self._durable = last
            return
        self._durable = last
        self._size += len(data)
        if self._size >= self.max_bytes or time.monotonic() - self._opened_at >= self.max_age_s:
            self._seal()

    def _open_new(self) -> None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
        base = f"{PREFIX}{stamp}-{os.getpid()}-{next(_file_counter):04d}"
        tmp = self.spool_dir / f"{base}{TMP}"
        live = self.spool_dir / f"{base}{OPEN}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)  # held until sealed: tells readers this file is live
        os.rename(tmp, live)
        if self._fsync:
            fsync_dir(self.spool_dir)
        self._fd, self._path, self._size, self._opened_at = fd, live, 0, time.monotonic()

    def _seal(self) -> Path | None:
        if self._fd is None or self._path is None:
            return None
        fd, path = self._fd, self._path
        self._fd = self._path = None
        sealed = path.with_name(path.name[: -len(".open")])
        try:
            if self._size == 0:
                os.unlink(path)
                return None
            os.rename(path, sealed)
            if self._fsync:
                fsync_dir(self.spool_dir)
            return sealed
        finally:
            os.close(fd)  # releases the flock
