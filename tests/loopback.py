"""A tiny HTTP server on loopback for client tests that need answers no real API gives (HTML, redirects,
broken paging). `LoopbackServer(answer)` where `answer(method, path, query) -> (status, headers, body)`."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port that refuses connections while the block runs. It stays bound, never listening: a port
    that was only picked and let go can be handed to the next server any test starts."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


Answer = Callable[[str, str, dict[str, str]], tuple[int, dict[str, str], bytes]]


def json_answer(status: int, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()


class LoopbackServer:
    """ThreadingHTTPServer on 127.0.0.1 (free port); `requests` lists (method, path, query) seen."""

    def __init__(self, answer: Answer) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                outer.requests.append((self.command, parts.path, query))
                status, headers, body = answer(self.command, parts.path, query)
                self.send_response_only(status)
                if "Date" not in headers:
                    self.send_header("Date", self.date_time_string())
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_DELETE = _serve

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
