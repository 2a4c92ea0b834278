"""Test helpers for alerts: the demo's local JSON webhook sink (Apprise's json:// target posts to it), and a
target that refuses."""

from __future__ import annotations

import socket

from flows.demo_alerts import Sink, sink

__all__ = ["Sink", "refused_url", "sink"]


def refused_url() -> str:
    """A json:// target on a loopback port nobody listens on (the connection is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"json://127.0.0.1:{port}/hook"
