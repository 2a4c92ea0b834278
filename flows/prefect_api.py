"""A Prefect API for one command: the configured one, or a temporary local server.

Prefect 3 flows need an API. When ``PREFECT_API_URL`` is set (in the environment or the active
Prefect profile: a ``prefect server start`` or Prefect Cloud) the runs go there and show in its
UI. When it is not, we run ``prefect server start`` in a subprocess on a free loopback port, with
its own Prefect home and SQLite file in a temp directory, point this process at it, and stop it
and delete the directory at the end: nothing is needed beforehand and nothing is left behind.

This is Prefect's own server with all its services (the scheduler included, which an "ephemeral"
in-process server lacks, so served schedules really fire) and its UI, reachable from another shell
for as long as the command runs. ``flows.prefect_server`` starts it, so that its SQLite transactions
wait for the write lock instead of failing with a 503 that stalls Prefect's client 2 s or more.
Telemetry is off (``PREFECT_SERVER_ANALYTICS_ENABLED``).

The one Prefect call here that its API reference does not list is
``prefect.context.refresh_global_settings_context()``: it makes a changed environment visible to
this already-running process, including threads Prefect starts later (its log and event workers).
``tests/flows/test_flows_units.py::test_prefect_refreshes_settings_from_the_environment`` pins it.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from pipelines.core.deadline import signals_held
from pipelines.core.errors import OutreachError
from pipelines.core.ports import start_on_a_port
from pipelines.core.root_cause import one_line

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 15.0
HOME_PREFIX = "outreach-prefect-"
DATABASE_NAME = "prefect.db"  # the server's SQLite file in its home (Prefect's default database URL)


class PrefectServerError(OutreachError):
    """The temporary Prefect server could not start."""


@dataclass(frozen=True)
class PrefectApi:
    """The API a command uses."""

    url: str  # ends in /api
    temporary: bool

    @property
    def ui_url(self) -> str:
        return self.url.removesuffix("/api")


@dataclass
class LocalServer:
    """A ``prefect server start`` subprocess (its own session: a Ctrl-C in the terminal does not reach it)."""

    process: subprocess.Popen[bytes]
    home: Path
    port: int

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    @property
    def log_path(self) -> Path:
        return self.home / "server.log"

    def stop(self, *, at_once: bool = False) -> None:
        """SIGTERM the server's process group, then SIGKILL what is left after ``STOP_TIMEOUT_S``. ``at_once``:
        SIGKILL only, for a server whose start failed or was interrupted: part-way through its start it takes 2 to
        5 s to act on a SIGTERM (by hand, 2026-11-30), and its home, database included, is deleted after."""
        if self.process.poll() is not None:
            return
        steps = ((signal.SIGKILL, 5.0),) if at_once else ((signal.SIGTERM, STOP_TIMEOUT_S), (signal.SIGKILL, 5.0))
        for sig, wait_s in steps:
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


def _last_log_line(path: Path) -> str:
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def start_local_server(
    home: Path, *, port: int | None = None, ui: bool = True, while_starting: Callable[[], None] | None = None
) -> LocalServer:
    """Start ``prefect server start`` with its home (and SQLite database) in ``home``; wait until healthy.

    Without ``port``, a free one; if another process takes it before the server binds it, another port.
    ``while_starting`` runs once the server's process is started, before its health is polled: this process's
    own work (its imports) meanwhile. An error there, Ctrl-C included, stops the server as any failed start.
    """
    return start_on_a_port(
        lambda chosen: _start_local_server(home, chosen, ui, while_starting), port, PrefectServerError
    )


def _start_local_server(home: Path, port: int, ui: bool, while_starting: Callable[[], None] | None) -> LocalServer:
    # None of the user's Prefect settings (a database URL of their own server, a profile): defaults in `home`.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(
        PREFECT_HOME=str(home),
        PREFECT_SERVER_ANALYTICS_ENABLED="false",
        PREFECT_UI_ENABLED="true" if ui else "false",
    )
    home.mkdir(parents=True, exist_ok=True)
    template = start_from_template(home / DATABASE_NAME)
    server: LocalServer | None = None
    try:
        # a Ctrl-C waits until the server it would stop is held
        with signals_held(), open(home / "server.log", "wb") as log:
            process = subprocess.Popen(
                # Prefect's `prefect server start`, its SQLite transactions taking the write lock at BEGIN
                [sys.executable, "-m", "flows.prefect_server", "--host", "127.0.0.1", "--port", str(port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
            server = LocalServer(process=process, home=home, port=port)
        if while_starting is not None:
            while_starting()
        return _wait_healthy(server, template)
    except BaseException:  # Ctrl-C included: a server that did not start is not left running
        if server is not None:
            server.stop(at_once=True)
        raise


def _wait_healthy(server: LocalServer, template: Path) -> LocalServer:
    """Poll the server's health until it answers (then keep its migrated database as the template)."""
    process = server.process
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    # One client for every poll: `httpx.get` builds a new one each time, and with it a TLS context (the CA
    # bundle parsed again), which kept a core busy for as long as the server took to start.
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise PrefectServerError(
                    f"the temporary Prefect server exited at start (code {process.returncode}: "
                    f"{_last_log_line(server.log_path) or 'no output'}): set PREFECT_API_URL to a running server "
                    "instead"
                )
            try:
                if client.get(f"{server.api_url}/health").status_code == 200:
                    if not template.is_file():
                        save_database_template(server.home / DATABASE_NAME, template)
                    return server
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    raise PrefectServerError(
        f"the temporary Prefect server did not answer within {STARTUP_TIMEOUT_S:.0f} s "
        f"({_last_log_line(server.log_path) or 'no output'}): the machine may be overloaded; "
        "or start one with `prefect server start` and set PREFECT_API_URL"
    )


def migrated_database_template() -> Path:
    """Where a freshly migrated, empty server database of the installed Prefect version is kept between runs.

    A new server home would run every database migration again: about a third of the server's start.
    """
    import prefect

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "outreach-elt"
    return cache / f"prefect-{prefect.__version__}-server.db"


def start_from_template(database: Path) -> Path:
    """A new server database as a copy of the migrated template, when there is one; returns the template's path."""
    template = migrated_database_template()
    if template.is_file() and not database.exists():
        shutil.copyfile(template, database)
    return template


def save_database_template(database: Path, template: Path) -> None:
    """Keep a consistent copy of a just-started server's database (migrated, no runs, no blocks saved yet);
    a cache only: a failure is logged and the next start migrates again."""
    import sqlite3

    partial = template.with_name(f".{template.name}.{os.getpid()}")
    try:
        template.parent.mkdir(parents=True, exist_ok=True)
        with (
            closing(sqlite3.connect(database)) as source,
            closing(sqlite3.connect(partial)) as copy,
        ):
            source.backup(copy)
        partial.replace(template)
    except (OSError, sqlite3.Error):
        logger.debug("could not keep the migrated Prefect database as a template", exc_info=True)
        partial.unlink(missing_ok=True)


def configured_api_url() -> str | None:
    """``PREFECT_API_URL`` as Prefect resolves it (environment, then the active profile)."""
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    return str(url) if url else None


@contextmanager
def process_environment(updates: dict[str, str]) -> Iterator[None]:
    """Set environment variables for this process, its later threads and its subprocesses; restore them after."""
    import prefect.context

    saved = {name: os.environ.get(name) for name in updates}
    os.environ.update(updates)
    prefect.context.refresh_global_settings_context()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        prefect.context.refresh_global_settings_context()


@contextmanager
def prefect_api(*, ui: bool = True, while_starting: Callable[[], None] | None = None) -> Iterator[PrefectApi]:
    """Yield the API to use: the configured one, else a temporary local server's for the block's duration
    (``while_starting``: as `start_local_server` takes it; not run for a configured API)."""
    configured = configured_api_url()
    if configured:
        _require_answer(configured)
        yield PrefectApi(url=configured, temporary=False)
        return
    home = Path(tempfile.mkdtemp(prefix=HOME_PREFIX))
    server: LocalServer | None = None
    try:
        server = start_local_server(home, ui=ui, while_starting=while_starting)
        with process_environment({"PREFECT_API_URL": server.api_url}):
            try:
                yield PrefectApi(url=server.api_url, temporary=True)
            finally:
                _flush_run_logs()
    finally:
        if server is not None:
            server.stop()
        shutil.rmtree(home, ignore_errors=True)


def _require_answer(url: str) -> None:
    """A configured API that does not answer fails here in one line, not at its first use deep in Prefect."""
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        problem = client.api_healthcheck()
    if isinstance(problem, httpx.HTTPStatusError):  # a server answered, and not as Prefect's does
        raise OutreachError(
            f"the server at {url} (PREFECT_API_URL) is no Prefect API: it answered {problem.response.status_code} "
            "on /health; point PREFECT_API_URL at a Prefect server's API (it ends in /api), or unset it"
        )
    if problem is not None:
        raise OutreachError(
            f"the Prefect API at {url} (PREFECT_API_URL) does not answer ({one_line(problem)}): start that server, "
            "or unset PREFECT_API_URL to use a temporary local one"
        )


def _flush_run_logs() -> None:
    """Send buffered run logs before the server goes away."""
    try:
        from prefect.logging.handlers import APILogHandler

        APILogHandler().flush()
    except Exception:
        logger.debug("could not flush Prefect run logs", exc_info=True)
