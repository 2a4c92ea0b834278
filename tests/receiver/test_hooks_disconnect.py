"""Clients that hang up mid-delivery: one log line, rate-limited, never a traceback; nothing spooled."""

from __future__ import annotations

import logging
import socket
import time
from pathlib import Path

import httpx
import pytest
from test_hooks_support import SECRET

from receiver.server import ReceiverServer


def _hang_up_mid_body(port: int) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        head = (
            "POST /webhooks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 5000\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"event": "lead.replied", "data": {')


def test_disconnects_are_one_rate_limited_line_without_traceback(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with ReceiverServer(signing_secret=SECRET, spool_dir=tmp_path / "spool") as server:
        for _ in range(60):
            _hang_up_mid_body(server.port)
        deadline = time.monotonic() + 10
        counters: dict[str, int] = {}
        while counters.get("disconnected", 0) < 60 and time.monotonic() < deadline:
            counters = httpx.get(f"http://127.0.0.1:{server.port}/healthz").json()["counters"]
            time.sleep(0.05)
    assert counters.get("disconnected") == 60, counters
    assert counters.get("accepted") == 0
    assert not [r for r in caplog.records if r.exc_info], "a disconnect logged a traceback"
    lines = [r.getMessage() for r in caplog.records if "disconnected" in r.getMessage()]
    assert 1 <= len(lines) <= 2 and "\n" not in lines[0], lines
    assert not list((tmp_path / "spool").glob("**/*.jsonl")) or all(
        p.stat().st_size == 0 for p in (tmp_path / "spool").glob("**/*.jsonl")
    )
