"""Test helpers for alerts: the demo's local JSON webhook sink (Apprise's json:// target posts to it), and a
target that refuses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from loopback import refusing_port

from flows.demo_alerts import Sink, sink

__all__ = ["Sink", "refused_url", "sink"]


@contextmanager
def refused_url() -> Iterator[str]:
    """A json:// target on a loopback port that refuses connections while the block runs."""
    with refusing_port() as port:
        yield f"json://127.0.0.1:{port}/hook"
