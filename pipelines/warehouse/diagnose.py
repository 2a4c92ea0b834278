"""Why a warehouse cannot be written, found locally and said in one line, before any API request is spent.

* `preflight_warehouse(path)`: before the first API request, in well under 2 s, check that the DuckDB
  file can be written; raise a one-line `WarehouseError` naming the cause and the fix. A file in a newer
  storage format than the configured one gets a one-line note (logged), not an error.
* `root_cause(exc)`, `chain(exc)` (from `pipelines.core.root_cause`): the innermost exception behind dlt's
  `PipelineStepFailed` and friends.
* `explain(exc, duckdb_path)`: that root cause as one line with the fix. DuckDB's exceptions carry no
  errno, so a DuckDB error is explained by checking the warehouse again locally (lock holder, header,
  write probe, free space); an `OSError` by its errno. Never by matching message text.

Every finding comes from the file system: the file's header and DuckDB's lock on it (`pipelines.warehouse.duckdb_file`),
a probe file created in the directory, and ``statvfs``.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import tempfile
from pathlib import Path

from pipelines.core.constants import DEFAULT_DUCKDB_PATH, DEFAULT_STORAGE_VERSION
from pipelines.core.errors import OutreachError, WarehouseError, WarehousePathError
from pipelines.core.root_cause import chain as chain
from pipelines.core.root_cause import explain_oserror, explain_sqlstate, one_line
from pipelines.core.root_cause import root_cause as root_cause
from pipelines.warehouse.duckdb_file import HEADERS_SIZE, given_path_problem, is_duckdb_file, lock_holder, sql_string
from pipelines.warehouse.storage_convert import convert_storage, storage_note

log = logging.getLogger(__name__)

MIN_FREE_BYTES = 32 * 2**20
"""Below this much free space a sync is refused up front (a quick sync writes a few MB, a full one more)."""


# -- the checks ------------------------------------------------------------------------------------
def configured_path(duckdb_path: str | Path | None = None) -> Path | None:
    """The DuckDB warehouse a sync writes, as the sync resolves it (`warehouse_target`): `duckdb_path`, else the
    setting (`~` expanded: read apart, `~/w.duckdb` was a folder named `~`), else the default; None when another
    destination is configured. Settings that cannot be read (their own resolution says why) give `duckdb_path`,
    else the default."""
    from pipelines.core.errors import ConfigError
    from pipelines.warehouse.destination import warehouse_target

    try:
        return warehouse_target(duckdb_path=duckdb_path).duckdb_path
    except ConfigError:
        return Path(duckdb_path or DEFAULT_DUCKDB_PATH)


def preflight_given(duckdb_path: str | Path | None) -> None:
    """`preflight_warehouse` of the warehouse's path, without the storage note; no dlt import (fast)."""
    if duckdb_path is not None:
        _raise_problem(Path(duckdb_path))


def preflight_warehouse(duckdb_path: Path, storage_version: str = DEFAULT_STORAGE_VERSION) -> None:
    """Raise a one-line WarehouseError if the DuckDB warehouse cannot be written; log a storage-format note."""
    _raise_problem(duckdb_path)
    note = storage_note(duckdb_path, storage_version)
    if note:
        log.warning("%s", note)


def warehouse_problem(duckdb_path: Path) -> str | None:
    """The first reason the warehouse at `duckdb_path` cannot be written, as one line; None if it can."""
    path = Path(duckdb_path).expanduser().absolute()
    return _path_problem(path) or _lock_problem(path)


def _raise_problem(duckdb_path: Path) -> None:
    """`warehouse_problem` as a WarehousePathError (only the owner can mend it), or as a WarehouseError when
    another process holds the file (it ends: a flow's retry may pass)."""
    path = Path(duckdb_path).expanduser().absolute()
    problem = _path_problem(path)
    if problem:
        raise WarehousePathError(problem)
    problem = _lock_problem(path)
    if problem:
        raise WarehouseError(problem)


def _path_problem(path: Path) -> str | None:
    problem = given_path_problem(path)
    if problem:
        return problem
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
    return _space_problem(parent, path)


def _lock_problem(path: Path) -> str | None:
    holder = lock_holder(path) if path.exists() else None
    if holder is None:
        return None
    return (
        f"warehouse {path} is locked by {holder.describe()}: stop it or wait until it ends, then rerun "
        "(BI tools should open the published <stem>_bi.duckdb, never the warehouse)"
    )


def damage_problem(path: Path) -> str | None:
    """One line when DuckDB cannot read the file at `path` although no other process holds it: the file
    is damaged (truncated part-way, or overwritten). None when it opens, or this process has it open. Asked
    only once opening failed: reading the file's catalog costs more than the quick checks of a preflight."""
    if not path.is_file() or lock_holder(path) is not None:
        return None
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"attach '{sql_string(path)}' as probe (read_only)")
        con.execute("select count(*) from duckdb_tables() where database_name = 'probe'").fetchall()
    except duckdb.Error as exc:
        if _in_use(exc):
            return None
        return (
            f"warehouse {path} is damaged: DuckDB cannot read it ({type(exc).__name__}: {one_line(exc)}): "
            "restore it from a copy, or move it away (the next sync creates a new one; use --mode full)"
        )
    finally:
        con.close()
    return None


def explain(exc: BaseException, duckdb_path: Path | None = None) -> str:
    """One line naming the real cause of `exc` and the fix.

    Our own errors (`OutreachError`, outermost or at the root) say it already. Otherwise the root cause:
    an `OSError` by its errno; a DuckDB error by checking the warehouse at `duckdb_path` again (locked,
    not DuckDB, read-only, full). Anything else: its type and the first line of its message.
    """
    if isinstance(exc, OutreachError):
        return one_line(exc)
    root = root_cause(exc)
    if isinstance(root, OutreachError):
        return one_line(root)
    if isinstance(root, OSError) and root.errno is not None:
        line = explain_oserror(root)
        if line:
            return line
    line = explain_sqlstate(root)
    if line:
        return line
    if duckdb_path is not None and _is_duckdb_error(root):
        problem = warehouse_problem(Path(duckdb_path)) or damage_problem(Path(duckdb_path))
        if problem:
            return problem
    return f"{type(root).__name__}: {one_line(root)}" if str(root).strip() else f"{type(root).__name__} (no message)"


def _in_use(error: BaseException) -> bool:
    """A DuckDB error saying the file is open already (in this process), not that it is unreadable."""
    import duckdb

    return isinstance(error, duckdb.ResourceInUseException)


def _is_duckdb_error(error: BaseException) -> bool:
    import duckdb

    return isinstance(error, duckdb.Error)


# -- helpers ------------------------------------------------------------------------------------------
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
    """After `_probe_directory` opened the file for writing: its header and size."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        return _unwritable(path, path, exc)
    if not is_duckdb_file(path):
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


def main(argv: list[str] | None = None) -> int:
    """``python -m pipelines.warehouse.diagnose convert PATH [--storage-version v1.0.0]`` / ``check PATH``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pipelines.warehouse.diagnose", description=__doc__.split("\n")[0])
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
            _raise_problem(args.path)
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
