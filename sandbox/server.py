"""Run the sandbox: `serve` (blocking, the CLI), `SandboxServer` (in-process thread), `SandboxProcess` (subprocess)."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import uvicorn

from .app import create_app
from .control_client import ControlClient
from .settings import SandboxSettings

log = logging.getLogger(__name__)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP so asyncio sets TCP_NODELAY on accepted connections (else headers and body
    # go out as two segments and the body waits ~40 ms for the client's delayed ACK).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(
            f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port or stop what uses it"
        ) from exc
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def _uvicorn_config(app: Any) -> uvicorn.Config:
    # date_header=False: the sandbox sends its own Date, in simulated time (sandbox/clock_header.py).
    return uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", date_header=False)


def serve(
    *,
    host: str,
    port: int,
    seed: int,
    scale: str,
    rate_limit: int,
    latency_ms: int,
    insecure_hooks: bool,
    workspaces: int = 2,
    scenario: str | None = None,
) -> None:
    """Serve the sandbox until interrupted (the `outreach sandbox` command)."""
    if host not in LOOPBACK:
        raise SystemExit(f"error: the sandbox listens on loopback only (127.0.0.1, localhost or ::1), not {host!r}")
    try:
        settings = SandboxSettings(
            seed=seed,
            scale=scale,
            rate_limit=rate_limit,
            latency_ms=latency_ms,
            insecure_hooks=insecure_hooks,
            workspaces=workspaces,
            scenario=scenario,
        )
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from None
    started = time.monotonic()
    app = create_app(settings)
    try:
        sock = _bind(host, port)
    except OSError as exc:
        raise SystemExit(f"error: {exc}") from None
    url = _url(host, sock.getsockname()[1])
    print(
        f"Sandbox ({scale}, seed {seed}, {workspaces} workspaces) listening on {url}/api/v1"
        f" - keys at {url}/_sandbox/keys "
        f"(built in {time.monotonic() - started:.1f} s)",
        flush=True,
    )
    uvicorn.Server(_uvicorn_config(app)).run(sockets=[sock])


class SandboxServer(ControlClient):
    """A sandbox served by uvicorn in a background thread of this process."""

    def __init__(
        self,
        *,
        seed: int = 7,
        scale: str = "small",
        rate_limit: int = 120,
        latency_ms: int = 0,
        insecure_hooks: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        workspaces: int = 2,
        scenario: str | None = None,
    ) -> None:
        if host not in LOOPBACK:
            raise ValueError(f"the sandbox listens on loopback only (127.0.0.1, localhost or ::1), not {host!r}")
        self.settings = SandboxSettings(
            seed=seed,
            scale=scale,
            rate_limit=rate_limit,
            latency_ms=latency_ms,
            insecure_hooks=insecure_hooks,
            workspaces=workspaces,
            scenario=scenario,
        )
        self.host, self.port = host, port
        self.url = ""
        self.app: Any = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> SandboxServer:
        self.app = create_app(self.settings)
        sock = _bind(self.host, self.port)
        self.port = sock.getsockname()[1]
        self.url = _url(self.host, self.port)
        self._server = uvicorn.Server(_uvicorn_config(self.app))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, daemon=True, name=f"sandbox-{self.port}"
        )
        self._thread.start()
        self._sock = sock
        self._wait_healthy(30, alive=self._thread.is_alive)
        return self

    def stop(self) -> None:
        self._close_http()
        if self.app is not None:
            self.app.state.sandbox.closing.set()  # ends injected hangs at once
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if getattr(self, "_sock", None) is not None:
            self._sock.close()
        if self.app is not None:
            self.app.state.sandbox.close()
        self._server = self._thread = None


class SandboxProcess(ControlClient):
    """A sandbox in a child process (`python -m sandbox`), for benchmarks, kill tests and memory figures."""

    def __init__(
        self,
        *,
        seed: int = 7,
        scale: str = "small",
        rate_limit: int = 120,
        latency_ms: int = 0,
        insecure_hooks: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        start_timeout: float = 120.0,
        workspaces: int = 2,
    ) -> None:
        self.args = [
            "--host",
            host,
            "--port",
            str(port),
            "--seed",
            str(seed),
            "--scale",
            scale,
            "--rate-limit",
            str(rate_limit),
            "--latency-ms",
            str(latency_ms),
            "--workspaces",
            str(workspaces),
        ]
        if insecure_hooks:
            self.args.append("--insecure-hooks")
        self.start_timeout = start_timeout
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self._cancelled = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> SandboxProcess:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
        # A session of its own: a terminal's Ctrl-C reaches its owner, which stops it (`stop`), and not the
        # sandbox, which would print its traceback and leave the owner's requests refused. It stops with its
        # owner however the owner ends (pipelines/core/lifeline.py).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox", *self.args, "--exit-with-parent"],
            stdout=subprocess.PIPE,
            stderr=None,
            text=True,
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        try:
            if self._cancelled:
                raise RuntimeError("cancelled")
            line = self.proc.stdout.readline()  # the one "listening on" line (blocks while the data is built)
            match = re.search(r"listening on (http://\S+?)/api/v1", line)
            if not match:
                raise RuntimeError(f"the sandbox process did not start: {line.strip() or 'no output'}")
            self.url = match.group(1)
            self._wait_healthy(self.start_timeout, alive=lambda: self.proc is not None and self.proc.poll() is None)
        except BaseException:  # Ctrl-C included: a sandbox that did not start is not left running
            self.stop()
            raise
        return self

    def cancel(self) -> None:
        """From another thread than the one in `start`: end the sandbox process now. A `start` under way then fails
        at once (on the process's closed output) instead of returning once the data is built, and stops it."""
        self._cancelled = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()

    def stop(self) -> None:
        self._close_http()
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stdout:
            self.proc.stdout.close()
        self.proc = None
