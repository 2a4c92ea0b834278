"""Accounts: which workspace each API key belongs to (GET /account), checked before anything else.

Light on imports on purpose: a bad key fails in about a second, before dlt's extract machinery, pyarrow
or pandas are even loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pipelines.batch import Workspace
from pipelines.client import OutreachClient, connectivity_check
from pipelines.config import OutreachSettings
from pipelines.errors import OutreachError


def new_client(api_key: str, settings: OutreachSettings) -> OutreachClient:
    """The API client of one key (its rate budget is shared by every client of that key in the process)."""
    return OutreachClient(
        api_key,
        str(settings.base_url),
        rate_limit_per_minute=settings.rate_limit_per_minute or None,
        timeout=settings.request_timeout,
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
