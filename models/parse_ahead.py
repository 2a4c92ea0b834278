"""Parse the dbt project ahead of a build, in a process of its own, while the caller does something else.

`dbt parse` writes dbt's saved parse (`partial_parse.msgpack`) into the warehouse's dbt state directory
(`WarehouseTarget.state_dir`) with the vars the build uses, so the build that follows reads it instead of
parsing the whole project, a large part of a first build's CPU (flows/README.md, "How long it takes").
`outreach demo` starts it beside its Prefect server, sandbox and syncs.

The process runs at a lower priority (`NICENESS`): it takes only CPU that nothing else of the caller's
wants, so it never delays what the caller waits for (on a 2-core machine: a Prefect server's start, a sync).
When the build is due and the parse has not finished (a busy machine), the caller stops it and the build
parses the project itself, as it would have without it.

dbt decides whether a saved parse is still valid (its version, the vars, the profile, every project
file's checksum) and parses again when it is not: a parse ahead can make a build faster, never different.
`dbt parse` opens no connection, so it neither creates nor locks the warehouse the syncs are loading.

Run directly: `python -m models.parse_ahead <duckdb path>`.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

WAIT_TIMEOUT_S = 5.0  # how long a due build waits for an unfinished parse before parsing itself
NICENESS = 10


def parse(duckdb_path: str | Path) -> bool:
    """`dbt parse` of the project for the DuckDB warehouse at `duckdb_path` (which need not exist yet), with
    the build's vars; True when dbt saved its parse."""
    from models.build import ATOMIC_VARS
    from models.dbt_invoke import invoke
    from models.settings import resolve_target

    outcome = invoke(["parse"], resolve_target(duckdb_path), dbt_vars=ATOMIC_VARS)
    return outcome.success


@dataclass
class ParseAhead:
    """A `python -m models.parse_ahead` process; `wait` before the build, `stop` always."""

    process: subprocess.Popen[bytes]
    started: float = field(default_factory=time.monotonic)
    seconds: float | None = None

    def wait(self, timeout_s: float = WAIT_TIMEOUT_S) -> bool:
        """Wait for the parse to end; True when it saved its parse. Past the timeout it is stopped: the build
        then parses on its own (slower, same result)."""
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            log.debug("dbt's parse ahead unfinished after %.0f s more: stopped, the build parses itself", timeout_s)
            self.stop()
            return False
        if self.seconds is None:
            self.seconds = time.monotonic() - self.started
        return code == 0

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def start(duckdb_path: str | Path) -> ParseAhead:
    """Start `dbt parse` for the warehouse at `duckdb_path` in a child process (its output: dbt's own log)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "models.parse_ahead", str(duckdb_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return ParseAhead(process=process)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m models.parse_ahead <duckdb path>\n")
        return 2
    os.nice(NICENESS)
    return 0 if parse(args[0]) else 1


if __name__ == "__main__":
    sys.exit(main())
