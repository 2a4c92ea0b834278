"""Test helpers for alerts: a local JSON webhook sink (Apprise's json:// target posts to it), and targets that fail."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Sink:
    """Records every JSON body POSTed to it; `delay_s` makes it answer late (a target that times out)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.received: list[dict[str, Any]] = []
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if delay_s:
                    time.sleep(delay_s)
                sink.received.append(json.loads(body or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"json://127.0.0.1:{self.port}/hook"

    def titles(self, word: str = "") -> list[str]:
        return [str(m.get("title")) for m in self.received if word in str(m.get("title"))]


@contextmanager
def sink(delay_s: float = 0.0) -> Iterator[Sink]:
    s = Sink(delay_s)
    s.thread.start()
    try:
        yield s
    finally:
        s.server.shutdown()
        s.server.server_close()


def refused_url() -> str:
    """A json:// target on a loopback port nobody listens on (the connection is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"json://127.0.0.1:{port}/hook"
