"""Webhook subscriptions through the API (``outreach hooks subscribe/unsubscribe/events``).

Settings resolve like the sync's: arguments first, then dlt config
(``[sources.outreach] base_url`` / ``api_key``, or ``SOURCES__OUTREACH__BASE_URL`` /
``SOURCES__OUTREACH__API_KEY``). Each function yields or returns the lines the
command prints; errors are `pipelines.errors.OutreachError` with one-line reasons.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pipelines.client import OutreachClient
from pipelines.errors import ApiUnavailableError, ConfigError


def _config(name: str, *, secret: bool) -> Any:
    import dlt

    accessor = dlt.secrets if secret else dlt.config
    return accessor.get(f"sources.outreach.{name}")


def _resolve(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """(base_url, api_key) from the arguments or dlt config; ConfigError names the missing setting."""
    url = base_url or _config("base_url", secret=False) or ""
    key: Any = api_key or _config("api_key", secret=True) or _config("api_keys", secret=True)
    if isinstance(key, str) and key.strip().startswith("["):
        key = json.loads(key)
    if isinstance(key, (list, tuple)):
        if len(key) != 1:
            raise ConfigError(
                f"{len(key)} API keys configured: pass --api-key for the workspace whose webhooks to manage"
            )
        key = key[0]
    return str(url), str(key or "")


def _client(base_url: str | None, api_key: str | None) -> OutreachClient:
    url, key = _resolve(base_url, api_key)
    return OutreachClient(key, url)


def _event_keys(client: OutreachClient) -> list[str]:
    data = client.get_data("/hooks/events")
    if not isinstance(data, list):
        raise ApiUnavailableError("GET /hooks/events: `data` is not a list: is the base URL the API's /api/v1?")
    return [str(item["key"]) for item in data if isinstance(item, dict) and item.get("key")]


def list_events(*, base_url: str | None = None, api_key: str | None = None) -> Iterator[str]:
    """One line per subscribable event: ``key<TAB>label``."""
    with _client(base_url, api_key) as client:
        data = client.get_data("/hooks/events")
        if not isinstance(data, list):
            raise ApiUnavailableError("GET /hooks/events: `data` is not a list: is the base URL the API's /api/v1?")
        for item in data:
            if isinstance(item, dict):
                yield f"{item.get('key')}\t{item.get('label', '')}"


def subscribe(
    *, target: str, events: Sequence[str] | None = None, base_url: str | None = None, api_key: str | None = None
) -> Iterator[str]:
    """Subscribe `target` to each event (default: every event the API lists).

    One subscription per event (the API binds one event to one URL). Yields
    ``<subscription id><TAB><event><TAB><target>`` as each is created, so the
    ids already made are printed even if a later one is refused.
    """
    if not target:
        raise ConfigError("no --target: give the URL deliveries should go to, e.g. https://host/webhooks")
    with _client(base_url, api_key) as client:
        keys = list(events) if events else _event_keys(client)
        for key in keys:
            body = client.post("/hooks", {"target_url": target, "event": key})
            if not isinstance(body, dict) or not body.get("id"):
                raise ApiUnavailableError(f"POST /hooks for {key}: the answer has no subscription id")
            yield f"{body['id']}\t{body.get('event', key)}\t{body.get('target', target)}"


def unsubscribe(*, subscription_id: str, base_url: str | None = None, api_key: str | None = None) -> str:
    """Delete one subscription; returns the API's message."""
    with _client(base_url, api_key) as client:
        body = client.delete(f"/hooks/{subscription_id}")
    message = body.get("message") if isinstance(body, dict) else None
    return f"{subscription_id}\t{message or 'unsubscribed'}"
