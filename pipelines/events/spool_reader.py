"""Reading the spool (the loader's side, `pipelines.events.loading`): a snapshot of the files to load, their
records up to the last complete line, and sealed files moved to ``done/`` once their load has committed."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.events.spool import FORMAT_VERSION
from pipelines.events.spool_files import DONE_DIR, OPEN, PREFIX, REJECTED_DIR, SEALED, fsync_dir, seal_orphans

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SpoolSnapshot:
    """Files to load now: `sealed` ones are marked done after the load commits;
    `live` ones (a running writer's) are read up to their last complete line and
    left in place, so they are read again next time (the merge on event_id dedupes)."""

    sealed: tuple[Path, ...]
    live: tuple[Path, ...]


def snapshot(spool_dir: Path | str) -> SpoolSnapshot:
    """The files a load should read now (oldest first), after sealing orphans."""
    spool = Path(spool_dir)
    if not spool.is_dir():
        return SpoolSnapshot(sealed=(), live=())
    seal_orphans(spool)
    live = tuple(sorted(spool.glob(f"{PREFIX}*{OPEN}")))
    sealed = tuple(sorted(spool.glob(f"{PREFIX}*{SEALED}")))
    return SpoolSnapshot(sealed=sealed, live=live)


def read_records(path: Path | str) -> Iterator[dict[str, Any]]:
    """Records of one spool file: complete lines only; a torn tail is never read.

    A missing file (a live file sealed meanwhile) yields nothing; it is read
    under its sealed name by the next load.
    """
    for _, record in _parsed(path, warn=True):
        if record is not None:
            yield record


def unreadable_lines(path: Path | str) -> int:
    """How many complete lines of the file are no spool record (damaged, or written by something else)."""
    return sum(1 for _, record in _parsed(path, warn=False) if record is None)


def _parsed(path: Path | str, *, warn: bool) -> Iterator[tuple[int, dict[str, Any] | None]]:
    """(line number, its record or None) of each complete, non-blank line of the file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        return
    end = data.rfind(b"\n")
    if warn and end < len(data) - 1:
        log.warning(
            "%s: ignoring a torn last line (%d bytes, never acknowledged)", Path(path).name, len(data) - end - 1
        )
    for lineno, line in enumerate(data[: end + 1].splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and record.get("v") == FORMAT_VERSION and "event_id" in record:
            yield lineno, record
        else:
            if warn:
                log.warning("%s:%d: skipping a line that is not a version %d spool record (corrupt, or another "
                            "writer's)", Path(path).name, lineno, FORMAT_VERSION)  # fmt: skip
            yield lineno, None


def mark_loaded(spool_dir: Path | str, files: Iterable[Path | str]) -> list[Path]:
    """Move sealed files into ``done/`` (call only after their load committed), where they are pruned after a
    while; a file with lines that are no spool record into ``rejected/`` instead, never pruned: those lines were
    acknowledged to the service, which does not send them again.

    Idempotent: files already moved are skipped. Live files are never moved.
    """
    spool = Path(spool_dir)
    moved: list[Path] = []
    for f in files:
        path = Path(f)
        if not path.name.endswith(SEALED) or path.parent.resolve() != spool.resolve():
            continue
        bad = unreadable_lines(path)
        into = spool / (REJECTED_DIR if bad else DONE_DIR)
        into.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.rename(path, into / path.name)
            moved.append(into / path.name)
            fsync_dir(into)
        if bad:
            log.warning(
                "%s: %d line(s) are no spool record and were not loaded; the file is kept in %s (never pruned): "
                "mend them and move the file back into the spool to load them, or delete it", path.name, bad, into
            )  # fmt: skip
    if moved:
        fsync_dir(spool)
    return moved


def prune_done(spool_dir: Path | str, *, older_than_s: float) -> int:
    """Delete loaded files older than `older_than_s`; returns how many were deleted."""
    done = Path(spool_dir) / DONE_DIR
    if not done.is_dir():
        return 0
    cutoff = time.time() - older_than_s
    count = 0
    for path in done.glob(f"{PREFIX}*{SEALED}"):
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_mtime < cutoff:
                path.unlink()
                count += 1
    return count
