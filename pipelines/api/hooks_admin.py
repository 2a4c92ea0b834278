"""Webhook subscriptions through the API (``outreach hooks subscribe/unsubscribe/events/list``).

Settings resolve like the sync's: arguments first, then dlt config
(``[sources.outreach] base_url`` / ``api_key``, or ``SOURCES__OUTREACH__BASE_URL`` /
``SOURCES__OUTREACH__API_KEY``). Each function yields or returns the lines the
command prints; errors are `pipelines.core.errors.OutreachError` with one-line reasons.

The API cannot list subscriptions, so every one made here is recorded (`SubscriptionRecord`) in a JSON
file beside the warehouse, ``<warehouse stem>_hooks.json`` (``data/outreach_hooks.json`` by default):
workspace, subscription id, event, target, base URL, when, and whether it was deleted. A local file, not
a warehouse table: it needs no warehouse lock (a sync may be loading) and works whatever the destination.
Never a key or secret.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipelines.api.accounts import connectivity_check
from pipelines.api.client import OutreachClient
from pipelines.core import constants
from pipelines.core.errors import ApiUnavailableError, ConfigError, NotFoundError
from pipelines.core.shown import shown

RECORD_SUFFIX = "_hooks.json"


def _resolve(base_url: str | None, api_key: str | None) -> tuple[str, str]:
    """(base_url, api_key) from the arguments or the settings (`pipelines.core.config`, `pipelines.core.keys`: the one
    reader of keys); ConfigError names the missing setting."""
    from pipelines.core.config import resolve_settings
    from pipelines.core.keys import configured_api_keys

    settings = resolve_settings(base_url=base_url)
    if api_key:
        return str(settings.base_url or ""), api_key
    keys = configured_api_keys(settings)
    if len(keys) > 1:
        raise ConfigError(f"{len(keys)} API keys configured: pass --api-key for the workspace whose webhooks to manage")
    return str(settings.base_url or ""), keys[0] if keys else ""


def _client(base_url: str | None, api_key: str | None) -> OutreachClient:
    url, key = _resolve(base_url, api_key)
    return OutreachClient(key, url)


def _events(client: OutreachClient) -> list[dict[str, Any]]:
    """The subscribable events the service lists (GET /hooks/events)."""
    data = client.get_data("/hooks/events")
    if not isinstance(data, list):
        raise ApiUnavailableError("GET /hooks/events: `data` is not a list: is the base URL the API's /api/v1?")
    return [item for item in data if isinstance(item, dict)]


def _event_keys(client: OutreachClient, given: Sequence[str] | None) -> list[str]:
    """The events to subscribe: those given, each once, checked against the service's list before the first is
    made (a misspelt second one left the first subscribed); every listed one by default."""
    known = [str(item["key"]) for item in _events(client) if item.get("key")]
    if not given:
        return known
    keys = list(dict.fromkeys(given))
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise ConfigError(
            f"--event {', '.join(unknown)}: not an event the service lists ({', '.join(known)}); nothing was "
            "subscribed (`outreach hooks events` lists them)"
        )
    return keys


def list_events(*, base_url: str | None = None, api_key: str | None = None) -> Iterator[str]:
    """One line per subscribable event: ``key<TAB>label``."""
    with _client(base_url, api_key) as client:
        for item in _events(client):
            yield f"{item.get('key')}\t{item.get('label', '')}"


def subscribe(
    *,
    target: str,
    events: Sequence[str] | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    duckdb_path: str | Path | None = None,
) -> Iterator[str]:
    """Subscribe `target` to each event (default: every event the API lists).

    One subscription per event (the API binds one event to one URL). Yields
    ``<subscription id><TAB><event><TAB><target>`` as each is created and records it at once,
    so the ids already made are printed and kept even if a later one is refused.
    """
    if not target:
        raise ConfigError("no --target: give the URL deliveries should go to, e.g. https://host/webhooks")
    record = SubscriptionRecord(record_path(duckdb_path))
    record.check()
    with _client(base_url, api_key) as client:
        workspace = _workspace(client)
        keys = _event_keys(client, events)
        for key in keys:
            body = client.post("/hooks", {"target_url": target, "event": key})
            if not isinstance(body, dict) or not body.get("id"):
                raise ApiUnavailableError(f"POST /hooks for {key}: the answer has no subscription id")
            entry = {
                "subscription_id": str(body["id"]),
                "event": str(body.get("event", key)),
                "target": str(body.get("target", target)),
                **workspace,
                "base_url": client.base_url,
                "created_at": _now(),
                "status": "active",
                "deleted_at": None,
            }
            record.add(entry)
            yield f"{entry['subscription_id']}\t{entry['event']}\t{entry['target']}"


def unsubscribe(
    *,
    subscription_id: str,
    base_url: str | None = None,
    api_key: str | None = None,
    duckdb_path: str | Path | None = None,
) -> str:
    """Delete one subscription and mark it deleted in the record; returns the line to print.

    A subscription the record holds but the API no longer knows (404) is marked deleted too."""
    record = SubscriptionRecord(record_path(duckdb_path))
    record.check()
    # the id goes into the URL's path: a blank one asked DELETE /hooks/ (said as a wrong base URL), `../x` another
    try:
        uuid.UUID(subscription_id)
    except ValueError:
        shown = subscription_id if len(subscription_id) <= 60 else subscription_id[:59] + "…"
        raise ConfigError(
            f"{shown!r} is not a subscription id (a UUID, as `outreach hooks list` shows them): check it"
        ) from None
    with _client(base_url, api_key) as client:
        workspace = _workspace(client)
        try:
            body = client.delete(f"/hooks/{constants.segment(subscription_id)}")
        except NotFoundError:
            if not record.mark_deleted(workspace["workspace_id"], subscription_id, status="gone"):
                raise
            return f"{subscription_id}\talready gone on the service (404); marked deleted in {record.path}"
    record.mark_deleted(workspace["workspace_id"], subscription_id)
    message = body.get("message") if isinstance(body, dict) else None
    return f"{subscription_id}\t{message or 'unsubscribed'}"


def list_subscriptions(*, duckdb_path: str | Path | None = None, include_deleted: bool = False) -> Iterator[str]:
    """The recorded subscriptions, one line each: id, event, target, workspace, created (, status, deleted)."""
    record = SubscriptionRecord(record_path(duckdb_path))
    entries = [e for e in record.entries() if include_deleted or e.get("status") == "active"]
    if not entries:
        yield f"no subscriptions recorded in {record.path} (only those made by `outreach hooks subscribe` are kept)"
        return
    for e in entries:
        line = (
            f"{e['subscription_id']}\t{e['event']}\t{shown(e['target'])}\t{shown(e.get('workspace_name') or '')} "
            f"({e.get('workspace_id')})\t{e.get('created_at')}"
        )
        if include_deleted:
            line += f"\t{e.get('status')}\t{e.get('deleted_at') or ''}"
        yield line


def record_path(duckdb_path: str | Path | None = None) -> Path:
    """``<warehouse stem>_hooks.json`` beside the configured warehouse (its default when none is set), the path read
    as every command reads it: `~` expanded (`~/w.duckdb` put the record in a folder named `~`), a blank or
    nameless one refused."""
    from pipelines.core.config import path_problem, resolve_settings

    problem = path_problem("duckdb_path", duckdb_path, given=True)
    if problem:
        raise ConfigError(problem)
    warehouse = Path(duckdb_path or resolve_settings().duckdb_path).expanduser()
    return warehouse.with_name(warehouse.name.split(".")[0] + RECORD_SUFFIX)


def _workspace(client: OutreachClient) -> dict[str, str]:
    account = connectivity_check(client)
    ws = account["workspace"]
    return {"workspace_id": str(ws.get("id")), "workspace_name": str(ws.get("name") or "")}


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


class SubscriptionRecord:
    """The JSON record of subscriptions: read-modify-write under an flock, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def entries(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except ValueError:
            raise ConfigError(
                f"{self.path} is not valid JSON: fix or move it (it records webhook subscriptions)"
            ) from None
        items = data.get("subscriptions") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(e, dict) for e in items):
            # read as empty, the next subscription would be written over whatever the file holds
            raise ConfigError(
                f"{self.path} is not a record of webhook subscriptions (an object with a list of them under "
                '"subscriptions"): fix or move it'
            )
        return [dict(e) for e in items]

    def check(self) -> None:
        """Fails, as the first write would, when the record cannot be read or written: called before the API is
        asked, so a subscription is never made (or deleted) without its record."""
        with self._locked():
            self.entries()

    def add(self, entry: dict[str, Any]) -> None:
        with self._locked():
            entries = self.entries()
            entries.append(entry)
            self._write(entries)

    def mark_deleted(self, workspace_id: str, subscription_id: str, status: str = "deleted") -> bool:
        """Mark an active entry deleted; False if the record holds no active entry with that id."""
        with self._locked():
            entries = self.entries()
            found = False
            for e in entries:
                if (
                    e.get("subscription_id") == subscription_id
                    and e.get("workspace_id") == workspace_id
                    and e.get("status") == "active"
                ):
                    e["status"], e["deleted_at"] = status, _now()
                    found = True
            if found:
                self._write(entries)
            return found

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _write(self, entries: list[dict[str, Any]]) -> None:
        text = json.dumps({"version": 1, "subscriptions": entries}, indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", suffix=".tmp", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
