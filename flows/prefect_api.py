"""A Prefect API for one command: the configured one, or a temporary local server.

Prefect 3 flows need an API. When ``PREFECT_API_URL`` is set (a ``prefect server start`` or
Prefect Cloud) the runs go there and show in its UI. When it is not, we start a temporary
server in a subprocess with its own Prefect home and SQLite file in a temp directory, use it
for the command, then stop it and delete the directory: nothing is left behind and nothing
is needed beforehand, so it works on a fresh machine.
"""

from __future__ import annotations

import logging
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def prefect_api() -> Iterator[str]:
    """Yield the API URL to use: ``PREFECT_API_URL`` if set, else a temporary local server's."""
    import prefect.context
    from prefect.server.api.server import SubprocessASGIServer
    from prefect.settings import (
        PREFECT_API_URL,
        PREFECT_HOME,
        PREFECT_SERVER_ANALYTICS_ENABLED,
        PREFECT_SERVER_DATABASE_CONNECTION_URL,
        temporary_settings,
    )

    configured = PREFECT_API_URL.value()
    if configured:
        yield str(configured)
        return
    home = Path(tempfile.mkdtemp(prefix="outreach-prefect-"))
    server: SubprocessASGIServer | None = None
    try:
        with ExitStack() as stack:
            stack.enter_context(
                temporary_settings(
                    updates={
                        PREFECT_HOME: str(home),
                        PREFECT_SERVER_DATABASE_CONNECTION_URL: f"sqlite+aiosqlite:///{home / 'prefect.db'}",
                        PREFECT_SERVER_ANALYTICS_ENABLED: False,
                    }
                )
            )
            server = SubprocessASGIServer(port=_free_port())
            server.start(timeout=STARTUP_TIMEOUT_S)
            stack.enter_context(temporary_settings(updates={PREFECT_API_URL: server.api_url}))
            # Threads started later (log and event workers) read the process-global settings.
            stack.enter_context(
                prefect.context._temporary_global_settings_context(prefect.context.get_settings_context())
            )
            try:
                yield server.api_url
            finally:
                _flush_run_logs()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _flush_run_logs() -> None:
    """Send buffered run logs before the server goes away."""
    try:
        from prefect.logging.handlers import APILogHandler

        APILogHandler().flush()
    except Exception:  # noqa: BLE001 - best effort at shutdown
        logger.debug("could not flush Prefect run logs", exc_info=True)
