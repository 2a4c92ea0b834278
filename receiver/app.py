"""The webhook receiver: an ASGI app taking signed deliveries at ``POST /webhooks``.

A delivery is acknowledged (200) only after it is durably in the spool
(`pipelines.events.spool`). Refusals, checked in this order:

    413  body larger than ``max_body_bytes`` (Content-Length or streamed size)
    401  X-Service-Timestamp or X-Service-Signature missing or malformed,
         signature not made by a configured secret, or timestamp more than
         ``tolerance_s`` from now (a replay); checked after the signature
    400  body is not a JSON object with ``event``, ``created_at`` and a ``data`` object,
         or it nests arrays/objects more than ``MAX_NESTING`` levels deep
    422  unknown event key, or X-Service-Event disagrees with the body's ``event``
    503  the spool could not be written (the sender retries)

It never opens the warehouse, so it never takes DuckDB's lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pipelines.events import spool
from receiver.signature import NoMatch, verify

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_TOLERANCE_S = 300
#: Deepest nesting of objects/arrays accepted in a body. Service events nest 3 levels (payload, data, stats);
#: a deeper body is no event, and one near Python's recursion limit would fail every later reader of the spool.
MAX_NESTING = 32
_RECENT_IDS = 10_000


class _Refusal(Exception):
    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class _RecentIds:
    """Bounded memory of event ids already durable, to answer replays without a write."""

    def __init__(self, size: int) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._size = size

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._ids

    def add(self, event_id: str) -> None:
        self._ids[event_id] = None
        while len(self._ids) > self._size:
            self._ids.popitem(last=False)


def _secrets(signing_secret: str | Mapping[str, str]) -> dict[str | None, str]:
    if isinstance(signing_secret, str):
        secrets: dict[str | None, str] = {None: signing_secret}
    else:
        secrets = {workspace_id: secret for workspace_id, secret in signing_secret.items()}
    if not secrets or not all(isinstance(s, str) and s for s in secrets.values()):
        raise ValueError("a webhook signing secret is required: set SOURCES__OUTREACH__SIGNING_SECRET")
    return secrets


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _Refusal(413, f"body of {declared} bytes is over the {limit}-byte limit")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise _Refusal(413, f"body is over the {limit}-byte limit")
    return bytes(body)


def _authenticate(
    secrets: Mapping[str | None, str], headers: Mapping[str, str], body: bytes, tolerance_s: int
) -> str | None:
    """Workspace id of the secret that signed the delivery; raises _Refusal(401)."""
    timestamp = headers.get("x-service-timestamp", "").strip()
    signature = headers.get("x-service-signature", "")
    if not timestamp or not signature:
        raise _Refusal(401, "X-Service-Timestamp and X-Service-Signature are required")
    if not timestamp.isdigit():
        raise _Refusal(401, "X-Service-Timestamp must be Unix seconds")
    workspace_id = verify(secrets, timestamp, body, signature)
    if isinstance(workspace_id, NoMatch):
        raise _Refusal(401, "signature does not match: check the signing secret")
    skew = time.time() - int(timestamp)
    if abs(skew) > tolerance_s:
        raise _Refusal(401, f"timestamp is {int(skew)} s from now, outside the {tolerance_s} s tolerance")
    return workspace_id


def _nesting(value: Any, limit: int) -> int:
    """How deep objects and arrays nest in a parsed JSON value (1 = a flat object), counted up to limit + 1."""
    deepest, stack = 0, [(value, 1)]
    while stack and deepest <= limit:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


def _parse(body: bytes, header_event: str | None) -> dict[str, Any]:
    too_deep = f"body nests objects or arrays more than {MAX_NESTING} levels deep; a service event nests 3"
    try:
        payload = json.loads(body)
    except RecursionError:  # nested deeper than the parser can go: far over the limit
        raise _Refusal(400, too_deep) from None
    except ValueError:
        raise _Refusal(400, "body is not valid JSON") from None
    if _nesting(payload, MAX_NESTING) > MAX_NESTING:
        raise _Refusal(400, too_deep)
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict) or not payload.get("created_at"):
        raise _Refusal(400, "body must be a JSON object with event, created_at and a data object")
    event = payload.get("event")
    if event not in spool.EVENT_KEYS:
        raise _Refusal(422, f"unknown event {str(event)[:64]!r}; expected one of {', '.join(spool.EVENT_KEYS)}")
    if header_event is not None and header_event != event:
        raise _Refusal(422, "X-Service-Event does not match the body's event")
    return payload


DISCONNECT_LOG_EVERY_S = 10.0


class _Disconnects:
    """Clients that hung up mid-request: counted, and said in one line at most every `DISCONNECT_LOG_EVERY_S`
    (a flood of them must not flood the log)."""

    def __init__(self) -> None:
        self.count = 0
        self._told_at = float("-inf")
        self._untold = 0

    def note(self, client: str) -> None:
        self.count += 1
        self._untold += 1
        now = time.monotonic()
        if now - self._told_at >= DISCONNECT_LOG_EVERY_S:
            others = f" ({self._untold - 1} more since the last such line)" if self._untold > 1 else ""
            log.warning("a client (%s) disconnected before its delivery was read: nothing spooled%s", client, others)
            self._told_at, self._untold = now, 0


def create_app(
    *,
    signing_secret: str | Mapping[str, str],
    spool_dir: Path | str,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
    max_file_bytes: int = spool.DEFAULT_MAX_FILE_BYTES,
    max_file_age_s: float = spool.DEFAULT_MAX_FILE_AGE_S,
) -> Starlette:
    """The receiver app. `signing_secret` is one secret, or ``{workspace_id: secret}``
    for several workspaces (the matching secret names the event's workspace)."""
    secrets = _secrets(signing_secret)
    writer = spool.SpoolWriter(spool_dir, max_bytes=max_file_bytes, max_age_s=max_file_age_s)
    recent = _RecentIds(_RECENT_IDS)
    counters: dict[str, int] = {"accepted": 0, "duplicate": 0}
    disconnects = _Disconnects()

    async def webhooks(request: Request) -> JSONResponse:
        client = request.client.host if request.client else "?"
        try:
            body = await _read_body(request, max_body_bytes)
            workspace_id = _authenticate(secrets, request.headers, body, tolerance_s)
            payload = _parse(body, request.headers.get("x-service-event"))
        except _Refusal as refusal:
            key = f"refused_{refusal.status}"
            counters[key] = counters.get(key, 0) + 1
            log.warning("refused a delivery from %s (%d): %s", client, refusal.status, refusal.reason)
            return JSONResponse({"error": refusal.reason}, status_code=refusal.status)
        except ClientDisconnect:  # nobody left to answer; the sender retries an undelivered event
            disconnects.note(client)
            counters["disconnected"] = disconnects.count
            return JSONResponse({"error": "client disconnected"}, status_code=400)
        record = spool.make_record(payload, workspace_id=workspace_id)
        event_id = record["event_id"]
        if event_id in recent:
            counters["duplicate"] += 1
            return JSONResponse({"status": "duplicate", "event_id": event_id})
        try:
            await anyio.to_thread.run_sync(writer.append, record)
        except spool.SpoolWriteError as exc:
            counters["refused_503"] = counters.get("refused_503", 0) + 1
            return JSONResponse({"error": str(exc)}, status_code=503)
        recent.add(event_id)
        counters["accepted"] += 1
        return JSONResponse({"status": "accepted", "event_id": event_id})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok", "counters": dict(counters), "fsyncs": writer.fsyncs})

    async def _rotate_periodically() -> None:
        interval = max(0.05, min(1.0, max_file_age_s / 2))
        while True:
            await asyncio.sleep(interval)
            await anyio.to_thread.run_sync(writer.rotate_if_due)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(_rotate_periodically())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            writer.close()

    app = Starlette(
        routes=[Route("/webhooks", webhooks, methods=["POST"]), Route("/healthz", health, methods=["GET"])],
        lifespan=lifespan,
    )
    app.state.spool_writer = writer
    app.state.counters = counters
    return app
