"""A real PostgreSQL server for tests and benchmarks: initdb into a temporary directory, start it on a
free loopback port, stop and delete it afterwards.

The server refuses to run as root, so when we are root it runs as the ``postgres`` system user.
Binaries come from ``$OUTREACH_PG_BIN`` or ``/usr/lib/postgresql/<version>/bin`` (Debian's layout);
``make test`` installs them with apt-get when they are missing (``devtools/system-deps.sh``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pipelines.core.ports import start_on_a_port

SUPERUSER = "postgres"


class PostgresUnavailable(RuntimeError):
    """The server binaries are missing or the server did not start."""


def pg_bin_dir() -> Path:
    """Where initdb and postgres live."""
    explicit = os.environ.get("OUTREACH_PG_BIN")
    candidates = [explicit] if explicit else sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise PostgresUnavailable(
        "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin: "
        "run `make test` (it installs them with apt-get) or `apt-get install postgresql`, "
        "or set OUTREACH_PG_BIN"
    )


class PostgresServer:
    """One throwaway cluster. ``dsn(db)`` gives a libpq URL; ``create_database(name)`` makes a fresh db."""

    def __init__(self, port: int | None = None) -> None:
        self.bin = pg_bin_dir()
        self._given_port = port
        self.port = port or 0  # chosen at start, just before the server binds it
        self.root = Path(tempfile.mkdtemp(prefix="outreach-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "run"
        self._proc: subprocess.Popen[bytes] | None = None
        self._run_as: pwd.struct_passwd | None = pwd.getpwnam("postgres") if os.geteuid() == 0 else None

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> PostgresServer:
        self.socket_dir.mkdir(parents=True)
        if self._run_as is not None:
            os.chmod(self.root, 0o755)
            for path in (self.root, self.socket_dir):
                os.chown(path, self._run_as.pw_uid, self._run_as.pw_gid)
        self._run(
            [str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "-A", "trust", "-E", "UTF8",
             "--no-sync", "--locale=C"],
        )  # fmt: skip
        self._log = open(self.root / "server.log", "ab")  # noqa: SIM115 - closed in stop()
        return start_on_a_port(self._launch, self._given_port, PostgresUnavailable)

    def _launch(self, port: int) -> PostgresServer:
        """postgres on ``port``; stopped again if it does not get ready (its port may have been taken)."""
        self.port = port
        self._proc = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(port), "-h", "127.0.0.1",
             "-k", str(self.socket_dir), "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=128MB"],
            stdout=self._log, stderr=self._log, preexec_fn=self._demote(),
        )  # fmt: skip
        try:
            self._wait_ready()
        except PostgresUnavailable:
            self._proc.kill()
            self._proc.wait(timeout=10)
            raise
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()  # SIGTERM: "smart" shutdown; fall back to SIGQUIT/kill
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        self._proc = None
        if getattr(self, "_log", None) is not None:
            self._log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- use ----------------------------------------------------------------------------------
    @property
    def pid(self) -> int:
        """The postmaster's process id (the server's other processes are its children)."""
        if self._proc is None:
            raise PostgresUnavailable("the server is not started")
        return self._proc.pid

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def dlt_credentials(self, database: str = "postgres") -> str:
        """`dsn(database)` as dlt's credentials: dlt asks for a password, which the server (trust auth) ignores."""
        return f"postgresql://{SUPERUSER}:unused@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create (or re-create) database ``name``; returns its DSN."""
        self.psql(f'drop database if exists "{name}" with (force)')
        self.psql(f'create database "{name}"')
        return self.dsn(name)

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with psql (no Python driver needed); returns its unaligned output."""
        out = subprocess.run(
            [self._psql(), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.dsn(database), "-c", sql],
            capture_output=True, text=True, check=False,
            env={**os.environ, "PGCONNECT_TIMEOUT": "5"},  # a port another server holds may never answer
        )  # fmt: skip
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}")
        return out.stdout

    # -- internals ----------------------------------------------------------------------------
    def _psql(self) -> str:
        local = self.bin / "psql"
        return str(local) if local.exists() else (shutil.which("psql") or "psql")

    def _demote(self) -> Callable[[], None] | None:
        user = self._run_as
        if user is None:
            return None

        def demote() -> None:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

        return demote

    def _run(self, argv: list[str]) -> None:
        out = subprocess.run(argv, capture_output=True, text=True, preexec_fn=self._demote(), check=False)
        if out.returncode != 0:
            raise PostgresUnavailable(f"{Path(argv[0]).name} failed: {out.stderr.strip() or out.stdout.strip()}")

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise PostgresUnavailable(f"postgres exited at start: {(self.root / 'server.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    pass
                self.psql("select 1")
                return
            except (OSError, RuntimeError):
                time.sleep(0.2)
        raise PostgresUnavailable(f"postgres did not accept connections on port {self.port} within {timeout:.0f} s")
