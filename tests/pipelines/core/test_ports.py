"""Loopback ports (pipelines/core/ports.py): a port found free can be taken before a server binds it, and the
servers we start then start on another one (the temporary Prefect server's case is in
tests/flows/test_prefect_server.py)."""

from __future__ import annotations

import socket

import pytest

from pipelines.core.ports import free_port, port_taken


def test_a_listening_port_is_taken_and_a_free_one_is_not() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        assert port_taken(port)
    assert not port_taken(port)
    assert not port_taken(free_port())


def test_the_test_postgres_starts_on_another_port_when_its_pick_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    from devtools import pgserver
    from pipelines.core import ports

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        picks = iter([busy, free_port()])
        monkeypatch.setattr(ports, "free_port", lambda: next(picks))
        with pgserver.PostgresServer() as server:
            assert server.port != busy
            assert server.psql("select 41 + 1").strip() == "42"
