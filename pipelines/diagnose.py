"""Why a warehouse cannot be written, found locally and said in one line (issue 12).

* `preflight_warehouse(path)`: before the first API request, in well under 2 s, check that the DuckDB
  file can be written; raise a one-line `WarehouseError` naming the cause and the fix. A file in a newer
  storage format than the configured one gets a one-line note (logged), not an error.
* `root_cause(exc)`: the innermost exception behind dlt's `PipelineStepFailed` and friends.
* `explain(exc, duckdb_path)`: that root cause as one line with the fix. DuckDB's exceptions carry no
  errno, so a DuckDB error is explained by checking the warehouse again locally (lock holder, header,
  write probe, free space); an `OSError` by its errno. Never by matching message text.

Every finding comes from the file system: the file's first bytes (DuckDB's main header: 8-byte checksum,
``DUCK``, the storage version number), the lock DuckDB holds on the file (an fcntl record lock over the
whole file, found with ``F_OFD_GETLK``, which also reports a lock of this process, or ``F_GETLK``), a
probe file created in the directory, and ``statvfs``.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shlex
import struct
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pipelines.errors import OutreachError, WarehouseError
from pipelines.settings import DEFAULT_DUCKDB_PATH, DEFAULT_STORAGE_VERSION

log = logging.getLogger(__name__)

MIN_FREE_BYTES = 32 * 2**20
"""Below this much free space a sync is refused up front (a quick sync writes a few MB, a full one more)."""

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


# -- the checks ------------------------------------------------------------------------------------
def configured_path(duckdb_path: str | Path | None = None) -> Path | None:
    """The DuckDB warehouse a sync writes: `duckdb_path`, else the setting, else the default; None when
    another destination is configured."""
    destination = _setting("destination")
    if destination and str(destination) != "duckdb":
        return None
    return Path(duckdb_path or str(_setting("duckdb_path") or "") or DEFAULT_DUCKDB_PATH)


def preflight_given(duckdb_path: str | Path | None) -> None:
    """`warehouse_problem` of an explicitly given path, as a WarehouseError; no dlt import (fast)."""
    if duckdb_path is not None:
        problem = warehouse_problem(Path(duckdb_path))
        if problem:
            raise WarehouseError(problem)


def preflight_warehouse(duckdb_path: Path, storage_version: str = DEFAULT_STORAGE_VERSION) -> None:
    """Raise a one-line WarehouseError if the DuckDB warehouse cannot be written; log a storage-format note."""
    problem = warehouse_problem(duckdb_path)
    if problem:
        raise WarehouseError(problem)
    note = storage_note(duckdb_path, storage_version)
    if note:
        log.warning("%s", note)


def warehouse_problem(duckdb_path: Path) -> str | None:
    """The first reason the warehouse at `duckdb_path` cannot be written, as one line; None if it can."""
    path = Path(duckdb_path).expanduser().absolute()
    parent = _existing_ancestor(path.parent)
    if not parent.is_dir():
        return (
            f"warehouse {path}: {parent} is a file, not a directory, so nothing can be created under it: "
            "choose another --duckdb path (or SOURCES__OUTREACH__DUCKDB_PATH)"
        )
    if path.is_dir():
        return (
            f"warehouse {path} is a directory, not a DuckDB file: give --duckdb a file path such as "
            f"{path}/outreach.duckdb"
        )
    problem = _probe_directory(parent, path)
    if problem:
        return problem
    if path.exists():
        problem = _file_problem(path)
        if problem:
            return problem
        holder = lock_holder(path)
        if holder is not None:
            return (
                f"warehouse {path} is locked by {holder.describe()}: stop it or wait until it ends, then rerun "
                "(BI tools should open the published <stem>_bi.duckdb, never the warehouse)"
            )
    return _space_problem(parent, path)


def damage_problem(path: Path) -> str | None:
    """One line when DuckDB cannot read the file at `path` although no other process holds it: the file
    is damaged (truncated part-way, or overwritten). None when it opens, or this process has it open. Asked
    only once opening failed: reading the file's catalog costs more than the quick checks of a preflight."""
    if not path.is_file() or lock_holder(path) is not None:
        return None
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"attach '{_sql_path(path)}' as probe (read_only)")
        con.execute("select count(*) from duckdb_tables() where database_name = 'probe'").fetchall()
    except duckdb.Error as exc:
        if _in_use(exc):
            return None
        return (
            f"warehouse {path} is damaged: DuckDB cannot read it ({type(exc).__name__}: {_one_line(exc)[:120]}): "
            "restore it from a copy, or move it away (the next sync creates a new one; use --mode full)"
        )
    finally:
        con.close()
    return None


def storage_note(duckdb_path: Path, storage_version: str = DEFAULT_STORAGE_VERSION) -> str | None:
    """One line when an existing file is in a newer storage format than `storage_version` (else None)."""
    path = Path(duckdb_path)
    number = storage_number(path)
    wanted = STORAGE_NUMBERS.get(_major_minor(storage_version))
    if number is None or wanted is None or number <= wanted:
        return None
    made_by = next((v for v, n in sorted(STORAGE_NUMBERS.items()) if n == number), f"number {number}")
    python = shlex.quote(sys.executable or "python")
    command = f"{python} -m pipelines.diagnose convert {shlex.quote(str(path))} --storage-version {storage_version}"
    return (
        f"note: warehouse {path} is in DuckDB's {made_by} storage format, which DuckDB releases older than "
        f"{made_by} (most BI tools) cannot open; convert it to {storage_version} with: {command}"
    )


def storage_number(path: Path) -> int | None:
    """The storage version number in a DuckDB file's main header, or None (no file, or not DuckDB)."""
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


# -- root cause and one-line explanations -----------------------------------------------------------
def chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what it wraps: dlt's ``.exception`` (PipelineStepFailed and friends), then ``__cause__``,
    then an unsuppressed ``__context__``; outermost first, each once."""
    out: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out.append(current)
        wrapped = getattr(current, "exception", None)
        if isinstance(wrapped, BaseException):
            current = wrapped
        elif current.__cause__ is not None:
            current = current.__cause__
        elif not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return out


def root_cause(exc: BaseException) -> BaseException:
    """The innermost exception of :func:`chain`."""
    return chain(exc)[-1]


def explain(exc: BaseException, duckdb_path: Path | None = None) -> str:
    """One line naming the real cause of `exc` and the fix.

    Our own errors (`OutreachError`, outermost or at the root) say it already. Otherwise the root cause:
    an `OSError` by its errno; a DuckDB error by checking the warehouse at `duckdb_path` again (locked,
    not DuckDB, read-only, full). Anything else: its type and the first line of its message.
    """
    if isinstance(exc, OutreachError):
        return _one_line(exc)
    root = root_cause(exc)
    if isinstance(root, OutreachError):
        return _one_line(root)
    if isinstance(root, OSError) and root.errno is not None:
        line = _explain_oserror(root)
        if line:
            return line
    if duckdb_path is not None and _is_duckdb_error(root):
        problem = warehouse_problem(Path(duckdb_path)) or damage_problem(Path(duckdb_path))
        if problem:
            return problem
    return f"{type(root).__name__}: {_one_line(root) or 'no message'}"


def _explain_oserror(error: OSError) -> str | None:
    where = f" ({error.filename})" if error.filename else ""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return f"no space left on device{where}: free space on that disk (or point the path elsewhere) and rerun"
    if error.errno == errno.EROFS:
        return f"read-only file system{where}: point the path at a writable directory (or remount it read-write)"
    if error.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied{where}: give this user write access there, or choose another path"
    if error.errno == errno.EISDIR:
        return f"a directory is where a file should be{where}: give a file path, or move the directory away"
    if error.errno == errno.ENOTDIR:
        return f"a part of the path{where} is a file, not a directory: choose another path"
    if error.errno == errno.EFBIG:
        return f"file too large{where}: a file-size limit (ulimit -f) stopped the write; raise it and rerun"
    if error.errno == errno.ENOENT:
        return f"no such file or directory{where}: check the path"
    return None


def _in_use(error: BaseException) -> bool:
    """A DuckDB error saying the file is open already (in this process), not that it is unreadable."""
    import duckdb

    return isinstance(error, duckdb.ResourceInUseException)


def _is_duckdb_error(error: BaseException) -> bool:
    import duckdb

    return isinstance(error, duckdb.Error)


def _one_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else ""


# -- helpers ------------------------------------------------------------------------------------------
def _setting(name: str) -> object:
    """A `[sources.outreach]` setting from dlt config (until the engine's settings object lands on main)."""
    import dlt

    try:
        return dlt.config.get(f"sources.outreach.{name}")
    except Exception:  # noqa: BLE001 - a malformed config file: the sync's own resolution reports it
        return None


def _existing_ancestor(path: Path) -> Path:
    """`path` or its nearest existing ancestor (the directory a sync would create the rest under)."""
    current = path
    while not current.exists() and current != current.parent:
        if current.is_symlink():  # a dangling link: stop here, the probe reports it
            break
        current = current.parent
    return current


def _probe_directory(directory: Path, path: Path) -> str | None:
    """Create and remove a file in `directory`: the only test that holds for root, ACLs and read-only mounts."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".outreach-probe-", dir=directory)
    except OSError as exc:
        return _unwritable(directory, path, exc)
    os.close(fd)
    os.unlink(probe)
    if path.exists():
        try:
            os.close(os.open(path, os.O_RDWR))
        except OSError as exc:
            return _unwritable(path, path, exc)
    return None


def _unwritable(where: Path, path: Path, exc: OSError) -> str:
    if exc.errno == errno.EROFS:
        return (
            f"warehouse {path}: {where} is on a read-only file system: point --duckdb at a writable directory "
            "(or SOURCES__OUTREACH__DUCKDB_PATH), or remount it read-write"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"warehouse {path}: {where} is read-only for this user (permission denied): give this user write "
            "access, or point --duckdb at a writable directory"
        )
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"warehouse {path}: no space left on device in {where}: free space on that disk, or point --duckdb "
            "elsewhere"
        )
    code = errno.errorcode.get(exc.errno or 0, "error")
    return f"warehouse {path}: cannot write in {where} ({code}): fix the path or its permissions"


def _file_problem(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
        size = path.stat().st_size
    except OSError as exc:
        return _unwritable(path, path, exc)
    if len(head) < 12 or head[8:12] != DUCKDB_MAGIC:
        return (
            f"warehouse {path} is not a valid DuckDB database file (its header has no DuckDB signature): "
            "move it away (a new warehouse is created) or point --duckdb at the right file"
        )
    if size < HEADERS_SIZE:
        return (
            f"warehouse {path} is not a valid DuckDB database file (truncated to {size} bytes): restore it "
            "from a copy, or move it away (a new warehouse is created)"
        )
    return None


def _space_problem(directory: Path, path: Path) -> str | None:
    stats = os.statvfs(directory)
    free = stats.f_bavail * stats.f_frsize
    if free >= MIN_FREE_BYTES:
        return None
    return (
        f"no space left on device for warehouse {path}: {free / 2**20:.1f} MB free in {directory}, a sync needs "
        f"at least {MIN_FREE_BYTES // 2**20} MB: free space on that disk, or point --duckdb elsewhere"
    )


def _major_minor(version: str) -> str:
    parts = version.strip().lstrip("v").split(".")
    return f"v{parts[0]}.{parts[1]}" if len(parts) >= 2 else version


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


# -- converting an old warehouse to an older storage format ----------------------------------------
def convert_storage(duckdb_path: Path, storage_version: str = DEFAULT_STORAGE_VERSION) -> Path:
    """Rewrite the warehouse in `storage_version` (every schema, table, view; rows checked), keeping the
    original as ``<file>.<number>.bak``; returns the backup's path. Nothing may hold the warehouse."""
    import duckdb

    path = Path(duckdb_path).absolute()
    problem = warehouse_problem(path)
    if problem:
        raise WarehouseError(problem)
    number = storage_number(path)
    if number is None:
        raise WarehouseError(f"warehouse {path} does not exist: nothing to convert")
    tmp = path.with_name(path.name + ".convert.tmp")
    backup = path.with_name(f"{path.name}.{number}.bak")
    for stale in (tmp, Path(f"{tmp}.wal")):
        stale.unlink(missing_ok=True)
    con = duckdb.connect()
    try:
        con.execute(f"attach '{_sql_path(path)}' as src")
        con.execute("checkpoint src")  # fold the WAL in: the backup must not leave a WAL behind
        con.execute(f"attach '{_sql_path(tmp)}' as dst (storage_version '{storage_version}')")
        con.execute("copy from database src to dst")
        before = _row_counts(con, "src")
        after = _row_counts(con, "dst")
        con.execute("detach dst")
        con.execute("detach src")
    finally:
        con.close()
    if before != after:
        tmp.unlink(missing_ok=True)
        raise WarehouseError(f"converting {path}: row counts differ after the copy; the warehouse was left as it was")
    os.replace(path, backup)
    os.replace(tmp, path)
    return backup


def _sql_path(path: Path) -> str:
    return str(path).replace("'", "''")


def _row_counts(con: object, catalog: str) -> dict[str, int]:
    import duckdb

    assert isinstance(con, duckdb.DuckDBPyConnection)
    tables = con.execute(
        "select schema_name, table_name from duckdb_tables() where database_name = ?", [catalog]
    ).fetchall()
    counts: dict[str, int] = {}
    for schema, table in tables:
        row = con.execute(f'select count(*) from "{catalog}"."{schema}"."{table}"').fetchone()
        counts[f"{schema}.{table}"] = int(row[0]) if row else 0
    return counts


def main(argv: list[str] | None = None) -> int:
    """``python -m pipelines.diagnose convert PATH [--storage-version v1.0.0]`` / ``check PATH``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pipelines.diagnose", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("convert", help="rewrite a DuckDB warehouse in an older storage format")
    convert.add_argument("path", type=Path)
    convert.add_argument("--storage-version", default=DEFAULT_STORAGE_VERSION)
    check = sub.add_parser("check", help="say whether the warehouse can be written")
    check.add_argument("path", type=Path)
    check.add_argument("--storage-version", default=DEFAULT_STORAGE_VERSION)
    args = parser.parse_args(argv)
    try:
        if args.command == "convert":
            backup = convert_storage(args.path, args.storage_version)
            print(f"{args.path} now in storage format {args.storage_version}; the original is {backup}")
        else:
            problem = warehouse_problem(args.path)
            print(problem or storage_note(args.path, args.storage_version) or f"{args.path}: ok")
            return 1 if problem else 0
    except OutreachError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
