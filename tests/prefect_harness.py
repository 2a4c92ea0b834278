"""Prefect's test server for the tests that need one (the fixture `prefect_harness` of tests/conftest.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

#: starts of the harness tried before its failure is the test's
ATTEMPTS = 3


@contextlib.contextmanager
def prefect_harness_started(attempts: int = ATTEMPTS) -> Iterator[None]:
    """Prefect's own `prefect_test_harness`, started again on another port when its start fails at the connection.
    Prefect picks a free port, lets it go, and starts its server there a second or two later: a server that another
    test started on the port meanwhile (one that answers and hangs up) failed the start with `ReadError`, and with
    it every test of the file (seen once in a fresh clone's run)."""
    import httpx
    from prefect.testing.utilities import prefect_test_harness

    for attempt in range(1, attempts + 1):
        stack = contextlib.ExitStack()
        try:
            stack.enter_context(prefect_test_harness(server_startup_timeout=120))
        except httpx.TransportError:
            if attempt == attempts:
                raise
            continue
        with stack:
            yield
        return
