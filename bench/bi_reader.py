"""A BI tool's reads of the BI file, in a loop, counting every error: the soak's reader (bench/soak.py).

    python -m bench.bi_reader BI_FILE STATUS_FILE [--interval 0.2]

Like a BI tool (Metabase, Superset, the duckdb CLI) it keeps a read-only connection open and queries
the reporting tables through it every `interval` seconds; when the publish has replaced the file (its
inode or modification time changed) it opens a new connection, as a tool's next session would, and so reads
every publish. Publishes are counted as changes of that identity, not as distinct inodes: once the old file is
closed the filesystem may give its inode number to a later publish (the 50-round soak saw it 3 times).
Each tick it also opens and closes a second, short-lived read-only connection (a tool that connects per
query), so an open is tried against the file many times during every publish. A reader that cannot open
the file (no BI file yet) waits; once it has opened one, any failure counts.

Errors are counted by kind from the exception's type, never its text: `lock` for `duckdb.IOException`
(DuckDB's "could not set lock" when a writer holds the file) and any `OSError`, `read` for every other
`duckdb.Error`. The counters are written as one JSON object to STATUS_FILE (replaced atomically) after
every tick; SIGTERM ends the loop after the tick in progress and writes them once more.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb

# Reads over the marts a dashboard shows; each returns one row.
QUERIES = (
    "select count(*), sum(count_sent), sum(count_replied) from reporting.campaign_performance",
    "select count(*), sum(count_campaigns) from reporting.workspace_overview",
    "select count(*), max(activity_date) from reporting.campaign_daily",
    "select count(*) from reporting.lead_engagement",
)
MAX_EXAMPLES = 5


@dataclass
class ReaderCounters:
    """What the reader did and what failed, since it started."""

    pid: int = 0
    ticks: int = 0
    queries: int = 0
    opens: int = 0
    publishes_seen: int = 0  # files read (identity changes): one per publish while the reader ran
    lock_errors: int = 0
    read_errors: int = 0
    examples: list[str] = field(default_factory=list)
    rss_mb: float = 0.0  # the reader's resident memory now (it lives through the whole soak)
    stopped: bool = False

    @property
    def errors(self) -> int:
        return self.lock_errors + self.read_errors

    def count(self, exc: BaseException, where: str) -> None:
        if isinstance(exc, (duckdb.IOException, OSError)):
            self.lock_errors += 1
        else:
            self.read_errors += 1
        if len(self.examples) < MAX_EXAMPLES:
            text = (str(exc).strip().splitlines() or [""])[0][:200]
            self.examples.append(f"tick {self.ticks} {where}: {type(exc).__name__}: {text}")


def _identity(path: Path) -> tuple[int, int] | None:
    """(inode, mtime ns) of the file: a publish renames a new file over it, so both change."""
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return found.st_ino, found.st_mtime_ns


def _rss_mb() -> float:
    """VmRSS of this process in MB (0 where /proc is missing)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)  # kB
    except OSError:
        pass
    return 0.0


def _query_all(con: duckdb.DuckDBPyConnection, counters: ReaderCounters) -> None:
    for sql in QUERIES:
        con.execute(sql).fetchall()
        counters.queries += 1


def _write_status(status: Path, counters: ReaderCounters) -> None:
    tmp = status.with_name(status.name + ".tmp")
    tmp.write_text(json.dumps({**asdict(counters), "errors": counters.errors}))
    os.replace(tmp, status)


class Reader:
    """The loop's state: the held connection and the identity of the file it reads."""

    def __init__(self, bi_file: Path, counters: ReaderCounters) -> None:
        self.bi_file = bi_file
        self.counters = counters
        self.held: duckdb.DuckDBPyConnection | None = None
        self.held_identity: tuple[int, int] | None = None

    def _open(self) -> duckdb.DuckDBPyConnection:
        con = duckdb.connect(str(self.bi_file), read_only=True)
        self.counters.opens += 1
        return con

    def tick(self) -> None:
        """One round of reads: (re)open the held connection if the file was replaced, query through it, then
        through a short-lived connection."""
        self.counters.ticks += 1
        identity = _identity(self.bi_file)
        if identity is None and self.counters.publishes_seen == 0:
            return  # no BI file published yet
        if self.held is None or identity != self.held_identity:
            self._close_held()
            try:
                self.held = self._open()
                if identity != self.held_identity:
                    self.counters.publishes_seen += 1
                self.held_identity = identity
            except Exception as exc:  # noqa: BLE001 - the reader counts every failure, whatever it is
                self.counters.count(exc, "open")
                return
        try:
            _query_all(self.held, self.counters)
        except Exception as exc:  # noqa: BLE001
            self.counters.count(exc, "query held connection")
        try:
            con = self._open()
            try:
                _query_all(con, self.counters)
            finally:
                con.close()
        except Exception as exc:  # noqa: BLE001
            self.counters.count(exc, "short-lived connection")

    def _close_held(self) -> None:
        if self.held is not None:
            try:
                self.held.close()
            except duckdb.Error as exc:
                self.counters.count(exc, "close")
            self.held = None

    def close(self) -> None:
        self._close_held()


def run(bi_file: Path, status: Path, interval: float) -> ReaderCounters:
    """Read until SIGTERM (or SIGINT); write the counters after every tick."""
    counters = ReaderCounters(pid=os.getpid())
    stop = {"now": False}

    def _stop(signum: int, frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    reader = Reader(bi_file, counters)
    _write_status(status, counters)
    try:
        while not stop["now"]:
            started = time.monotonic()
            reader.tick()
            counters.rss_mb = _rss_mb()
            _write_status(status, counters)
            time.sleep(max(0.0, interval - (time.monotonic() - started)))
    finally:
        reader.close()
        counters.stopped = True
        _write_status(status, counters)
    return counters


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bi_reader", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("bi_file", type=Path)
    parser.add_argument("status", type=Path)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between ticks")
    args = parser.parse_args(argv)
    run(args.bi_file, args.status, args.interval)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
