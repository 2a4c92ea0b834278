"""Loopback ports for the servers we start in a process of their own (the temporary Prefect server, a test
PostgreSQL): a port found free here is only free until another process binds it, so a server that then fails
to start on it is started again on another (`start_on_a_port`)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

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


def start_on_a_port(start: Callable[[int], T], port: int | None, failure: type[Exception]) -> T:
    """``start(port)``; without ``port``, on a free one, and again on another when ``start`` raised ``failure``
    while another process holds the port picked (``start`` stops its own server before it raises)."""
    attempt = 1
    while True:
        chosen = port or free_port()
        try:
            return start(chosen)
        except failure:
            if port is not None or attempt == PORT_ATTEMPTS or not port_taken(chosen):
                raise
        attempt += 1
