"""Loopback ports for the servers we start in a process of their own (the temporary Prefect server, a test
PostgreSQL): a port found free here is only free until another process binds it, so a server that then fails
to start on it is started again on another (`port_taken` tells the two failures apart)."""

from __future__ import annotations

import errno
import socket

#: how many ports a start tries before it reports the failure
PORT_ATTEMPTS = 3


def free_port() -> int:
    """A loopback port that no process holds now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_taken(port: int) -> bool:
    """Whether another process holds this loopback port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False
