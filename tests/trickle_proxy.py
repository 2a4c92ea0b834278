"""A raw-socket proxy on loopback in front of a sandbox that trickles the status line and headers of its
answers, one byte every `drip_s` (the body then goes at once): a fault the sandbox cannot make itself, since
its HTTP server writes those. The first `drip_after` answers go at full speed."""

from __future__ import annotations

import http.client
import socket
import threading
import time
from urllib.parse import urlsplit


class TrickleProxy:
    def __init__(self, upstream: str, *, drip_s: float, drip_after: int = 0) -> None:
        parts = urlsplit(upstream)
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 80)
        self._path = parts.path.rstrip("/")
        self.drip_s = drip_s
        self.drip_after = drip_after
        self.answered = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.base_url = f"http://127.0.0.1:{self._server.getsockname()[1]}{self._path}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        self._thread.join(5)
        self._server.close()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while not self._closing.is_set():
                request_line = reader.readline()
                if not request_line:
                    return
                method, target, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (line := reader.readline().decode("latin-1").strip()) != "":
                    name, _, value = line.partition(":")
                    headers[name.strip()] = value.strip()
                head, body = self._forward(method, target, headers)
                with self._lock:
                    self.answered += 1
                    drip = self.answered > self.drip_after
                try:
                    if drip:
                        for index in range(len(head)):
                            if self._closing.is_set():
                                return
                            conn.sendall(head[index : index + 1])
                            time.sleep(self.drip_s)
                    else:
                        conn.sendall(head)
                    conn.sendall(body)
                except OSError:  # the client gave up on the answer
                    return

    def _forward(self, method: str, target: str, headers: dict[str, str]) -> tuple[bytes, bytes]:
        upstream = http.client.HTTPConnection(*self._upstream, timeout=30)
        try:
            upstream.request(method, target, headers={k: v for k, v in headers.items() if k.lower() != "host"})
            answer = upstream.getresponse()
            body = answer.read()
        finally:
            upstream.close()
        lines = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        lines += [f"{k}: {v}" for k, v in answer.getheaders() if k.lower() not in ("content-length", "connection")]
        lines += [f"Content-Length: {len(body)}", "", ""]
        return "\r\n".join(lines).encode("latin-1"), body
