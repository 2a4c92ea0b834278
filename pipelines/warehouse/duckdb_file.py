"""A DuckDB file as the file system sees it, read without opening the database, so a check never takes
the lock: the main header (8-byte checksum, ``DUCK``, the storage version number) and the lock DuckDB holds
on the file (an fcntl record lock over the whole file, found with ``F_OFD_GETLK``, which also reports a lock
of this process, or ``F_GETLK``)."""

from __future__ import annotations

import errno
import fcntl
import glob
import os
import stat
import struct
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pipelines.core.constants import bi_file_problem

DUCKDB_MAGIC = b"DUCK"
HEADERS_SIZE = 3 * 4096  # main header + two database headers: the smallest complete DuckDB file
# storage version number in the main header -> the oldest DuckDB release that writes it
# (checked against duckdb 2.0: storage_compatibility_version v1.0.0 -> 64, v1.2.0 -> 65 ... v2.0.0 -> 999)
STORAGE_NUMBERS = {"v1.0": 64, "v1.1": 64, "v1.2": 65, "v1.3": 66, "v1.4": 67, "v1.5": 68, "v2.0": 999}
_FLOCK = "hhqqi"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid (+ padding)
_F_OFD_GETLK = getattr(fcntl, "F_OFD_GETLK", 36 if sys.platform.startswith("linux") else None)


@dataclass(frozen=True)
class LockHolder:
    """A process holding DuckDB's lock on a file: `kind` is "read" (a read-only reader) or "write"."""

    pid: int | None
    kind: str

    def describe(self) -> str:
        who = f"process {self.pid}{_process_name(self.pid)}" if self.pid else "another process"
        return f"{who} ({'a read-only reader' if self.kind == 'read' else 'a writer'})"


def special_file_problem(path: Path) -> str | None:
    """One line when `path` is there but neither a regular file nor a directory: opened to read its header, a named
    pipe blocks for ever, and a device (`/dev/null`) is no warehouse to move away."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else "a device"
    return f"warehouse {path} is {kind}, not a file: point --duckdb at the warehouse's DuckDB file"


def given_path_problem(path: Path) -> str | None:
    """One line when a path given as the warehouse is one no command may open as such: the BI file of a
    warehouse beside it (`bi_file_problem`), or what is not a file (`special_file_problem`)."""
    return bi_file_problem(path) or special_file_problem(path)


def is_duckdb_file(path: Path) -> bool:
    """Whether the file starts with DuckDB's main header (a truncated file may still pass: DuckDB says then)."""
    if special_file_problem(path):
        return False
    try:
        with open(path, "rb") as handle:
            return handle.read(12)[8:12] == DUCKDB_MAGIC
    except OSError:
        return False


def storage_number(path: Path) -> int | None:
    """The storage version number in a DuckDB file's main header, or None (no file, or not DuckDB)."""
    if special_file_problem(path):
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[8:12] != DUCKDB_MAGIC:
        return None
    return int.from_bytes(head[12:20], "little")


def lock_holder(duckdb_path: Path) -> LockHolder | None:
    """The other process holding DuckDB's lock on the file (None if free, missing, or held by this process)."""
    try:
        fd = os.open(duckdb_path, os.O_RDONLY)
    except OSError:
        return None
    try:
        probe = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0)
        probe += b"\0" * (32 - len(probe))
        command = _F_OFD_GETLK if _F_OFD_GETLK is not None else fcntl.F_GETLK
        try:
            answer = fcntl.fcntl(fd, command, probe)
        except OSError:  # kernel without OFD locks: the process-wide query (cannot see our own lock)
            answer = fcntl.fcntl(fd, fcntl.F_GETLK, probe)
        l_type, _whence, _start, _len, l_pid = struct.unpack(_FLOCK, answer[: struct.calcsize(_FLOCK)])
        if l_type == fcntl.F_UNLCK:
            return None
        pid = l_pid if l_pid > 0 else _pid_from_proc_locks(fd)
        if pid == os.getpid():
            return None  # this process's own DuckDB instance: DuckDB shares it within the process
        return LockHolder(pid=pid, kind="read" if l_type == fcntl.F_RDLCK else "write")
    finally:
        os.close(fd)


def _pid_from_proc_locks(fd: int) -> int | None:
    """The pid of a POSIX lock on the file of `fd` in /proc/locks (Linux), when fcntl could not tell."""
    inode = os.fstat(fd).st_ino
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        # "1: POSIX  ADVISORY  WRITE 24224 fe:00:2263745 0 EOF" (OFD locks show pid -1)
        if len(fields) >= 6 and fields[1] == "POSIX" and fields[5].rsplit(":", 1)[-1] == str(inode):
            pid = int(fields[4]) if fields[4].lstrip("-").isdigit() else -1
            if pid > 0:
                return pid
    return None


def _process_name(pid: int | None) -> str:
    if not pid:
        return ""
    try:
        name = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""
    return f" {name}" if name else ""


def sql_string(value: object) -> str:
    """`value` (a path, a comment) inside a single-quoted SQL string literal."""
    return str(value).replace("'", "''")


def create_duckdb_file(path: Path, storage_version: str) -> bool:
    """Create the missing DuckDB file at `path` in `storage_version`, whole; True if this call put it there, False
    if another process or thread did first. DuckDB writes a new file's header after creating it, and another
    sync's preflight reading it in between would call the file "not a DuckDB database": so it is made under a name
    of its own and hard-linked in, which never replaces a file another sync put there first."""
    import duckdb

    config: dict[str, str | bool | int | float | list[str]] = {"storage_compatibility_version": storage_version}
    _remove_abandoned(path)
    made = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.new")
    try:
        duckdb.connect(str(made), config=config).close()
        os.link(made, path)
        return True
    except FileExistsError:
        return False  # another sync made it first: that one is the warehouse
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS):
            raise
        # a file system without hard links (FAT, some network shares and FUSE file systems): created in place
        duckdb.connect(str(path), config=config).close()
        return True
    finally:
        _unlink_with_wal(made)


#: a creation takes milliseconds: an older temporary file of a process that is gone was left by a kill
ABANDONED_AFTER_S = 60


def _remove_abandoned(path: Path) -> None:
    """Remove the temporary files of creations killed part-way (SIGKILL, a power cut) beside `path`: their process
    is gone and they are old. Both, because a process of another PID namespace sharing the folder looks gone."""
    prefix = f".{path.name}."
    for made in path.parent.glob(glob.escape(prefix) + "*.new"):
        pid = made.name[len(prefix) :].split(".", 1)[0]
        try:
            old = time.time() - made.stat().st_mtime > ABANDONED_AFTER_S
        except OSError:
            continue
        if pid.isdigit() and old and not _running(int(pid)):
            _unlink_with_wal(made)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _unlink_with_wal(made: Path) -> None:
    made.unlink(missing_ok=True)
    made.with_name(made.name + ".wal").unlink(missing_ok=True)
