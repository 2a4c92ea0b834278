"""The tests' Prefect server starts again on another port when another test took its port first
(tests/prefect_harness.py)."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from tests.prefect_harness import prefect_harness_started


def _hang_up_on_each(listener: socket.socket) -> None:
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:  # closed: the test is over
            return
        with conn:
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH_9.6\r\n")


def test_the_harness_starts_again_on_another_port_when_its_first_was_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a fresh clone's run: Prefect chose a port, another test's server (one that answers and hangs up) took
    it before Prefect's server did, and the start failed with ReadError, and every test of the file with it."""
    from prefect.settings import PREFECT_API_URL
    from prefect.testing import utilities

    listener = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_hang_up_on_each, args=(listener,), daemon=True).start()
    taken = listener.getsockname()[1]
    chosen: list[int] = []
    free = utilities._find_available_port  # Prefect's choice of port: the first is the taken one

    def choose() -> int:
        chosen.append(taken if not chosen else free())
        return chosen[-1]

    monkeypatch.setattr(utilities, "_find_available_port", choose)
    try:
        with prefect_harness_started():
            url = str(PREFECT_API_URL.value())
            assert httpx.get(f"{url}/health", timeout=30).json() is True
    finally:
        listener.close()
    assert len(chosen) == 2 and url == f"http://127.0.0.1:{chosen[1]}/api", (chosen, url)
