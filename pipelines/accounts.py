"""Accounts: which workspace each API key belongs to (GET /account), checked before anything else;
and the API clients of the keys.

Light on imports on purpose: a bad key fails in about a second, before dlt's extract machinery, pyarrow
or pandas are even loaded.

Every client of the process shares one HTTP transport (one connection pool). An httpx client of its own
builds a TLS context on creation (tens of ms of CPU, certificates loaded each time), which made a run's
cost grow by about that much per workspace, twice; connections are reused across keys too. Each client
keeps its own key (a header per request) and its own rate budget (`pipelines.pacing`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from pipelines.batch import Workspace
from pipelines.client import OutreachClient, connectivity_check
from pipelines.config import OutreachSettings
from pipelines.errors import OutreachError

POOL_CONNECTIONS = 64


class _SharedTransport(httpx.HTTPTransport):
    """The process's one transport: a client closing does not close it (others still use it)."""

    def close(self) -> None:
        """Left open for the other clients; its connections close with the process."""


_transport: _SharedTransport | None = None
_transport_lock = threading.Lock()


def shared_transport() -> httpx.BaseTransport:
    global _transport
    with _transport_lock:
        if _transport is None:
            limits = httpx.Limits(max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS)
            _transport = _SharedTransport(limits=limits)
        return _transport


def new_client(api_key: str, settings: OutreachSettings, **overrides: Any) -> OutreachClient:
    """The API client of one key (its rate budget is shared by every client of that key in the process)."""
    return OutreachClient(
        api_key,
        str(settings.base_url),
        rate_limit_per_minute=settings.rate_limit_per_minute or None,
        timeout=settings.request_timeout,
        transport=overrides.get("transport") or shared_transport(),
    )


def check_keys(api_keys: Sequence[str], settings: OutreachSettings) -> list[Workspace | OutreachError]:
    """GET /account for every key (on up to `workers` threads): its Workspace, or the OutreachError."""

    def check(index: int) -> Workspace | OutreachError:
        try:
            with new_client(api_keys[index], settings) as client:
                account = connectivity_check(client)
                return Workspace(index=index, api_key=api_keys[index], account=account, requests=client.stats.requests)
        except OutreachError as exc:
            return exc

    workers = max(1, min(settings.workers, len(api_keys)))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="outreach-key") as pool:
        return list(pool.map(check, range(len(api_keys))))
