"""``python -m flows.prefect_server --host H --port P``: Prefect's ``prefect server start``, with one change for
its SQLite database: every transaction the server begins takes SQLite's write lock at ``BEGIN``.

Why: Prefect begins most of its server transactions ``DEFERRED``. One that reads and then writes (creating a
task run reads the flow run's labels first) cannot upgrade to a writer once another connection has committed
in between: SQLite answers ``SQLITE_BUSY_SNAPSHOT`` at once, without waiting its busy time-out. The server
turns that into a 503, and Prefect's client waits 2 s, then 4 s, before it tries again (PrefectHQ/prefect
#18934, open). So two workspaces' subflows that ran side by side stalled each other: measured on the demo,
2 to 6 s per sync step, and the two subflows ran one after the other. ``BEGIN IMMEDIATE`` waits for the lock
instead (the server's busy time-out is 60 s); SQLite has one writer at a time either way.

The one private use of Prefect's server in this project: ``AioSqliteConfiguration.begin_transaction`` and
its ``with_for_update`` flag, which Prefect's own SQLite configuration turns into ``BEGIN IMMEDIATE``.
``tests/flows/test_prefect_server.py`` pins both and fails on a Prefect that changes them. A PostgreSQL
database is untouched.
"""

from __future__ import annotations

import sys
from typing import Any


def take_sqlite_write_lock_at_begin() -> None:
    """Make the SQLite configuration of Prefect's server begin every transaction ``IMMEDIATE`` (idempotent)."""
    from prefect.server.database.configurations import AioSqliteConfiguration

    original = AioSqliteConfiguration.begin_transaction
    if getattr(original, "_outreach_immediate", False):
        return

    def begin_transaction(self: AioSqliteConfiguration, session: Any, with_for_update: bool = False) -> Any:
        return original(self, session, with_for_update=True)

    begin_transaction._outreach_immediate = True  # type: ignore[attr-defined]
    AioSqliteConfiguration.begin_transaction = begin_transaction  # type: ignore[method-assign]


def main(argv: list[str]) -> None:
    """Run ``prefect server start`` with ``argv`` in this process, the SQLite change applied first; it stops with
    the process that started it (pipelines/core/lifeline.py)."""
    from pipelines.core.lifeline import exit_with_parent

    exit_with_parent()
    take_sqlite_write_lock_at_begin()
    from prefect.cli import app

    sys.argv = ["prefect", "server", "start", *argv]
    app()


if __name__ == "__main__":
    main(sys.argv[1:])
