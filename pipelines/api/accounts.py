"""Accounts: which workspace each API key belongs to (GET /account), checked before anything else;
and the API clients of the keys.

Light on imports on purpose (httpx and our client only): when keys and the base URL are given, a bad key
fails in about a second, before dlt (the settings), pyarrow or pandas are even imported.

Every client of the process shares one HTTP transport (one connection pool). An httpx client of its own
builds a TLS context on creation (tens of ms of CPU, certificates loaded each time), which made a run's
cost grow by about that much per workspace, twice; connections are reused across keys too. Each client
keeps its own key (a header per request) and its own rate budget (`pipelines.api.pacing`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from pipelines.api.client import DEFAULT_TIMEOUT_S, OutreachClient
from pipelines.api.http_watch import WatchedTransport
from pipelines.core.deadline import Deadline, SyncInterrupted
from pipelines.core.errors import BaseUrlError, NotFoundError, OutreachError
from pipelines.core.shown import shown

if TYPE_CHECKING:
    from pipelines.core.config import OutreachSettings


@dataclass
class Workspace:
    """One API key's workspace, as GET /account named it."""

    index: int  # position of its key among the run's keys (messages say "workspace key #<index + 1>")
    api_key: str = field(repr=False)
    account: dict[str, Any] = field(repr=False)
    requests: int = 0  # requests spent checking the key

    @property
    def workspace_id(self) -> str:
        return str(self.account["workspace"].get("id"))

    @property
    def name(self) -> str:
        return str(self.account["workspace"].get("name") or self.workspace_id)


POOL_CONNECTIONS = 64


class _SharedTransport(WatchedTransport):
    """The process's one transport (its reads end on a signal or a stall: `pipelines.api.http_watch`): a client
    closing does not close it (others still use it)."""

    def close(self) -> None:
        """Left open for the other clients; its connections close with the process."""


_transport: _SharedTransport | None = None
_transport_lock = threading.Lock()


def shared_transport() -> httpx.BaseTransport:
    global _transport
    with _transport_lock:
        if _transport is None:
            limits = httpx.Limits(max_connections=POOL_CONNECTIONS, max_keepalive_connections=POOL_CONNECTIONS)
            _transport = _SharedTransport(limits)
        return _transport


def new_client(
    api_key: str, base_url: str, *, rate_limit_per_minute: int | None, timeout: float = DEFAULT_TIMEOUT_S
) -> OutreachClient:
    """The API client of one key (its rate budget is shared by every client of that key in the process)."""
    return OutreachClient(
        api_key, base_url, rate_limit_per_minute=rate_limit_per_minute, timeout=timeout, transport=shared_transport()
    )


def client_for(api_key: str, settings: OutreachSettings, deadline: Deadline | None = None) -> OutreachClient:
    """The API client of one key with the run's settings and deadline."""
    return OutreachClient(
        api_key,
        str(settings.base_url),
        rate_limit_per_minute=settings.rate_limit_per_minute or None,
        timeout=settings.request_timeout,
        stall_timeout=settings.stall_timeout_s,
        max_retry_after=settings.max_retry_after_s,
        deadline=deadline,
        transport=shared_transport(),
    )


def check_keys(
    api_keys: Sequence[str],
    base_url: str,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    workers: int = 8,
    rate_limit_per_minute: int | None = None,
) -> list[Workspace | OutreachError]:
    """GET /account for every key (on up to `workers` threads): its Workspace, or the OutreachError.
    With `rate_limit_per_minute`, through the key's shared pacer: the service counts this request too, and a
    sync at exactly the limit would otherwise send one more than it allows in its first minute."""

    def check(index: int) -> Workspace | OutreachError:
        try:
            with new_client(
                api_keys[index], base_url, rate_limit_per_minute=rate_limit_per_minute, timeout=timeout
            ) as client:
                account = connectivity_check(client)
                return Workspace(index=index, api_key=api_keys[index], account=account, requests=client.stats.requests)
        except SyncInterrupted:
            raise  # not the key's fault: the whole run stops
        except OutreachError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(api_keys))), thread_name_prefix="outreach-key") as pool:
        return list(pool.map(check, range(len(api_keys))))


def connectivity_check(client: OutreachClient) -> dict[str, Any]:
    """GET /account: proves the key and URL work (401 -> AuthError at once) and names the workspace.

    A 404 here is the URL's fault, not an id's: /account has no id."""
    try:
        data = client.get_data("/account")
    except NotFoundError:
        raise BaseUrlError(
            f"GET {client.base_url}/account answered 404: this is not the API's base URL (the API answers "
            "/account under its /api/v1); check the path"
        ) from None
    if not isinstance(data, Mapping) or not isinstance(data.get("workspace"), Mapping):
        raise BaseUrlError(
            f"GET {client.base_url}/account: no `workspace` in the answer: is the base URL the API's /api/v1?"
        )
    return dict(data)


def one_per_workspace(found: Sequence[Workspace]) -> tuple[list[Workspace], list[str]]:
    """Each workspace once, with the first of its keys, and a line per key left out: the same key given twice, or
    a workspace's read-only and read-write keys, synced the workspace twice in one run (twice the requests, its
    history rows written twice over)."""
    first: dict[str, Workspace] = {}
    kept: list[Workspace] = []
    left_out: list[str] = []
    for ws in found:
        earlier = first.setdefault(ws.workspace_id, ws)
        if earlier is ws:
            kept.append(ws)
        else:
            left_out.append(
                f"key #{ws.index + 1} is of workspace {shown(ws.name)} ({ws.workspace_id}) as key "
                f"#{earlier.index + 1} is: synced once, with key #{earlier.index + 1}"
            )
    return kept, left_out


def raise_if_none_found(checked: Sequence[Workspace | OutreachError]) -> None:
    """Every key failed: the first one's error now (numbered when there are several)."""
    if checked and all(isinstance(r, OutreachError) for r in checked):
        first = checked[0]
        assert isinstance(first, OutreachError)
        raise numbered(first, 0, len(checked))


def numbered(exc: BaseException, index: int, total: int) -> BaseException:
    """With several keys, say which one failed (the key itself never appears)."""
    if total > 1 and isinstance(exc, OutreachError):
        try:
            return type(exc)(f"workspace key #{index + 1}: {exc}")
        except TypeError:
            return OutreachError(f"workspace key #{index + 1}: {exc}")
    return exc
