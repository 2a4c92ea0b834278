"""ASGI middleware in front of /api/v1: metrics, latency, faults, authentication and the rate limit.

Order for each /api/v1 request: count it (metrics), add latency, maybe inject a fault, check the key
(401), check the rate limit (429, not counted against the window), then run the route; with drift on, its
successful JSON body is rewritten (sandbox/drift.py), and with malformed records on (sandbox/malform.py)
rewritten again, before any truncation fault cuts it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from . import drift, malform
from .control import route_template

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

UNAUTHENTICATED = (
    "Unauthenticated: missing or invalid API key."
    " Send the header 'Authorization: Bearer <API_KEY>' with a key from the workspace settings."
)


class ApiGate:
    def __init__(self, app: ASGIApp, runtime: Any) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/api/v1"):
            await self.app(scope, receive, send)
            return
        rt = self.runtime
        route = route_template(scope["method"], scope["path"])
        status_box = [0]

        async def counting_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = message["status"]
            await send(message)

        try:
            await self._handle(scope, receive, counting_send, route)
        finally:
            rt.metrics.record(route, status_box[0] or 499)

    async def _handle(self, scope: Scope, receive: Receive, send: Send, route: str) -> None:
        rt = self.runtime
        delay = rt.settings.latency_ms + rt.faults.latency_ms
        if delay:
            await asyncio.sleep(delay / 1000)
        kind, fault_status = rt.faults.decide()
        if kind == "error":
            headers = {"retry-after": str(rt.faults.retry_after_s)} if fault_status == 429 else {}
            await _reply(
                send,
                fault_status,
                {"message": f"Injected fault: HTTP {fault_status} (sandbox fault injection)."},
                headers,
            )
            return
        if kind == "timeout":
            await _hang(rt)
            await _reply(send, 504, {"message": "Injected fault: the request timed out (sandbox fault injection)."})
            return
        key = _bearer(scope)
        api_key = rt.state.keys.get(key) if key else None
        if api_key is None:
            await _reply(send, 401, {"message": UNAUTHENTICATED}, {"www-authenticate": "Bearer"})
            return
        allowed, remaining, retry = rt.limiter.check(api_key.key)
        limit_headers = (
            {"x-ratelimit-limit": str(rt.limiter.limit), "x-ratelimit-remaining": str(remaining)}
            if rt.limiter.limit
            else {}
        )
        if not allowed:
            await _reply(
                send,
                429,
                {
                    "message": f"Too many requests: more than {rt.limiter.limit} a minute for this key;"
                    f" retry after {retry} s."
                },
                {**limit_headers, "retry-after": str(retry)},
            )
            return
        scope.setdefault("state", {})["api_key"] = api_key
        extra = [(k.encode(), v.encode()) for k, v in limit_headers.items()]

        async def header_send(message: Message) -> None:
            if message["type"] == "http.response.start" and extra:
                message = {**message, "headers": list(message.get("headers", [])) + extra}
            await send(message)

        out = _truncating(send, extra) if kind == "truncate" else header_send
        if rt.faults.drips():
            out = _dripping(out, rt)
        if rt.drift.active and route in drift.ROUTES:
            # drift first, so a truncation fault cuts the drifted body
            out = _rewriting(out, lambda body: drift.apply(route, body, rt.drift))
        if rt.malform.active and route in malform.ROUTES:
            page = _page(scope)
            out = _rewriting(out, lambda body: malform.apply(route, body, rt.malform, page))
        await self.app(scope, receive, out)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            text = value.decode("latin-1").strip()
            if text[:7].lower() == "bearer ":
                return text[7:].strip() or None
            return None
    return None


async def _reply(send: Send, status: int, body: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    payload = orjson.dumps(body)
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


def _truncating(send: Send, extra: list[tuple[bytes, bytes]]) -> Send:
    """Buffer the response, then send it as 200 with the body cut part-way (invalid JSON)."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def _send(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(chunks)
        cut = body[: max(1, len(body) // 2)]
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        headers += [(b"content-length", str(len(cut)).encode())] + extra
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": cut})

    return _send


def _page(scope: Scope) -> int:
    """The `page` a list request asks for (1 when absent or not a number)."""
    for pair in scope.get("query_string", b"").decode("latin-1").split("&"):
        name, _, value = pair.partition("=")
        if name == "page":
            return int(value) if value.isdigit() else 1
    return 1


def _rewriting(send: Send, rewrite: Callable[[Any], Any]) -> Send:
    """Buffer a response; rewrite a successful JSON body (drift, malformed records), then send it."""
    start: dict[str, Any] = {}
    chunks: list[bytes] = []

    async def _send(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
            return
        chunks.append(message.get("body", b""))
        if message.get("more_body"):
            return
        body = b"".join(chunks)
        headers = list(start.get("headers", []))
        if 200 <= start.get("status", 500) < 300:
            body = orjson.dumps(rewrite(orjson.loads(body)))
            headers = [(k, v) for k, v in headers if k.lower() != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
        await send({**start, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return _send


def _dripping(send: Send, rt: Any) -> Send:
    """Send the headers at once, then the body one byte every `drip_ms` (a server that stalls without ever
    going quiet long enough for a read time-out); the rest goes at once when faults change or the sandbox stops."""
    version = rt.faults.version

    async def _send(message: Message) -> None:
        if message["type"] != "http.response.body":
            await send(message)
            return
        body: bytes = message.get("body", b"")
        for index in range(len(body)):
            if rt.closing.is_set() or rt.faults.version != version:
                await send({**message, "body": body[index:]})
                return
            await send({"type": "http.response.body", "body": body[index : index + 1], "more_body": True})
            await asyncio.sleep(rt.faults.drip_ms / 1000)
        await send({**message, "body": b""})

    return _send


async def _hang(rt: Any) -> None:
    """Hold the request for hang_ms; end early when faults change or the sandbox stops."""
    loop = asyncio.get_running_loop()
    version = rt.faults.version
    deadline = loop.time() + rt.faults.hang_ms / 1000
    while loop.time() < deadline and not rt.closing.is_set() and rt.faults.version == version:
        await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))
