"""Run the receiver: `listen` (blocking, for ``outreach hooks listen``) and
`ReceiverServer` (uvicorn in a background thread, for tests, bench and demos)."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import uvicorn

from pipelines.core.errors import ConfigError
from pipelines.events import spool
from receiver.app import create_app

__all__ = ["ReceiverServer", "create_app", "listen", "resolve_signing_secrets"]

log = logging.getLogger(__name__)

_MISSING_SECRET = (
    "no webhook signing secret configured: set SOURCES__OUTREACH__SIGNING_SECRET "
    "or [sources.outreach] signing_secret in .dlt/secrets.toml"
)


def resolve_signing_secrets() -> str | dict[str, str]:
    """The signing secret(s) from dlt config, like every other setting.

    ``[sources.outreach] signing_secret`` (one secret; with ``workspace_id`` set,
    events are tagged with it), or ``[sources.outreach.signing_secrets]``
    (``workspace_id = "secret"`` per workspace; JSON in the env variable).
    Raises SystemExit with a one-line reason when none is set.
    """
    import dlt

    many: Any = dlt.secrets.get("sources.outreach.signing_secrets")
    if isinstance(many, str):
        try:
            many = json.loads(many)
        except ValueError:
            raise SystemExit(
                "error: SOURCES__OUTREACH__SIGNING_SECRETS must be a JSON object {workspace_id: secret}"
            ) from None
    if isinstance(many, Mapping) and many:
        return {str(k): str(v) for k, v in many.items()}
    one: Any = dlt.secrets.get("sources.outreach.signing_secret")
    if not one:
        raise SystemExit(f"error: {_MISSING_SECRET}")
    workspace_id: Any = dlt.config.get("sources.outreach.workspace_id")
    return {str(workspace_id): str(one)} if workspace_id else str(one)


def listen(*, host: str = "127.0.0.1", port: int = 8787, spool_dir: Path | str | None = None) -> None:
    """Serve ``POST /webhooks`` until stopped (Ctrl-C / SIGTERM seal the live spool file).

    Port 0 takes a free port; the first line printed names the port bound, whichever it is.
    """
    secrets = resolve_signing_secrets()
    spool_path = Path(spool_dir) if spool_dir else spool.DEFAULT_SPOOL_DIR
    app = create_app(signing_secret=secrets, spool_dir=spool_path)
    sock = _bound_socket(host, port)
    bound = sock.getsockname()[1]
    print(f"outreach hooks: receiving at http://{host}:{bound}/webhooks, spooling to {spool_path}/", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
    if not server.started:  # uvicorn logged why; exit as `uvicorn.run` does
        raise SystemExit(3)


def _bound_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port), as uvicorn binds its own; the bound port is known before serving.

    proto=IPPROTO_TCP, as getaddrinfo gives uvicorn: asyncio sets TCP_NODELAY only on connections accepted from
    such a socket. Without it each response's body waits for the sender's delayed ACK, about 40 ms a delivery."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(
                f"{host}:{port} is in use (another `outreach hooks listen`?): stop it, or pass --port with another "
                "port (0 takes a free one)"
            ) from None
        if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
            raise ConfigError(
                f"cannot listen on {host}: not an address of this machine ({exc.strerror}): pass --host 127.0.0.1 "
                "(this machine only), 0.0.0.0 (every interface) or one of its addresses"
            ) from None
        raise ConfigError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    return sock


class ReceiverServer:
    """The receiver on a free loopback port, in a background thread.

    ``with ReceiverServer(signing_secret=..., spool_dir=...) as r: r.url``.
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, **app_kwargs: Any) -> None:
        self.host = host
        self._sock = _bound_socket(host, port)
        self.port: int = self._sock.getsockname()[1]
        self.app = create_app(**app_kwargs)
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name=f"receiver-{self.port}", daemon=True)

    @property
    def url(self) -> str:
        """The delivery URL (``http://host:port/webhooks``)."""
        return f"http://{self.host}:{self.port}/webhooks"

    def _run(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def start(self, timeout: float = 10.0) -> ReceiverServer:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"receiver did not start on {self.host}:{self.port}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()

    def __enter__(self) -> ReceiverServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
