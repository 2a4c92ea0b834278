"""A request in flight when SIGINT comes ends at once: the client's socket reads look at the interrupt flag
(`pipelines.api.http_watch`), against a real sandbox whose answers now take 10 s to start."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

from test_sync_support import admin_keys

from pipelines.api.accounts import new_client
from pipelines.core.deadline import SyncInterrupted, stop_on_signals


def test_a_signal_ends_a_request_in_flight(make_sandbox: Any) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    client = new_client(admin_keys(sb)[0], sb.base_url, rate_limit_per_minute=None)  # the sync's transport
    client.get("/account")  # a connection of the shared pool is open and idle: the next request reuses it
    sb.set_faults(latency_ms=10_000)
    outcome: list[BaseException] = []
    sent = threading.Event()

    def call() -> None:
        sent.set()
        try:
            client.get("/campaigns")
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            outcome.append(exc)

    worker = threading.Thread(target=call)
    with stop_on_signals():
        worker.start()
        sent.wait(5)
        time.sleep(1)  # the request is sent and waits for its answer
        signalled = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)
        worker.join(5)
        ended = time.monotonic() - signalled
    sb.set_faults()
    client.close()
    assert not worker.is_alive(), "the request outlived the signal by 5 s"
    assert ended < 1.5, f"the request ended {ended:.1f} s after SIGINT"
    assert outcome and isinstance(outcome[0], SyncInterrupted), outcome
