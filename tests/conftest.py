"""Shared fixtures: real sandboxes over loopback HTTP, one per test that needs its own state."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest


@pytest.fixture
def make_sandbox() -> Iterator[Callable[..., Any]]:
    """Start sandboxes (uvicorn on a free loopback port, in a thread); stop them all after the test.

    Usage: ``sb = make_sandbox(scale="tiny", rate_limit=0)``; then ``sb.base_url``,
    ``sb.url`` (root, for the control plane), ``sb.keys()``, ``sb.advance(seconds)``.
    """
    from sandbox.server import SandboxServer

    started: list[SandboxServer] = []

    def _make(**kwargs: Any) -> SandboxServer:
        server = SandboxServer(**kwargs)
        server.start()
        started.append(server)
        return server

    yield _make
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def shared_small_sandbox() -> Iterator[Any]:
    """One `small` sandbox with the rate limit off, for read-only tests. Do not advance its clock."""
    from sandbox.server import SandboxServer

    server = SandboxServer(scale="small", rate_limit=0)
    server.start()
    yield server
    server.stop()
