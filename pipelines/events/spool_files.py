"""The spool directory's files: their names by state (being created, live, sealed, done), directory fsyncs,
and sealing the live files of writers that died, so that their acknowledged lines are not stranded."""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "events-"
SEALED = ".jsonl"
OPEN = ".jsonl.open"
TMP = ".jsonl.tmp"
DONE_DIR = "done"
REJECTED_DIR = "rejected"  # sealed files with lines that are no spool record: kept, never pruned


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def try_lock(path: Path) -> int | None:
    """Open and flock `path` without blocking; None if it is gone or locked by a live writer."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def seal_orphans(spool_dir: Path | str) -> list[Path]:
    """Seal live files whose writer died (their flock is free); returns the sealed paths."""
    spool = Path(spool_dir)
    sealed: list[Path] = []
    if not spool.is_dir():
        return sealed
    for path in sorted(spool.glob(f"{PREFIX}*{OPEN}")):
        fd = try_lock(path)
        if fd is None:
            continue
        try:
            target = path.with_name(path.name[: -len(".open")])
            with contextlib.suppress(FileNotFoundError):
                os.rename(path, target)
                sealed.append(target)
                log.warning("sealed %s left open by a writer that stopped", target.name)
        finally:
            os.close(fd)
    for tmp in spool.glob(f"{PREFIX}*{TMP}"):
        with contextlib.suppress(FileNotFoundError):
            if time.time() - tmp.stat().st_mtime < 60:
                continue  # maybe a writer between create and flock: leave it
        fd = try_lock(tmp)
        if fd is not None:  # never renamed to .open, so it holds no acknowledged line
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            os.close(fd)
    if sealed:
        fsync_dir(spool)
    return sealed
