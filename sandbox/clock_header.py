"""The HTTP `Date` header in simulated time: the sandbox's clock, as a real service sends its own clock.

Clients read the service's time from `Date` (RFC 7231 IMF-fixdate, whole seconds). uvicorn's own wall-clock
`Date` is switched off (`date_header=False` in sandbox/server.py), so every response carries exactly one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

from .gate import ASGIApp, Message, Receive, Scope, Send


def http_date(t: float) -> str:
    """`Tue, 10 Mar 2026 15:00:00 GMT` for Unix time t (seconds dropped, as HTTP dates have none)."""
    return format_datetime(datetime.fromtimestamp(int(t), tz=UTC), usegmt=True)


class SimulatedDate:
    """ASGI middleware: replaces any `Date` header with the simulation clock at the moment the response starts."""

    def __init__(self, app: ASGIApp, runtime: Any) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = self.runtime.state

        async def dated_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"date"]
                headers.append((b"date", http_date(state.now).encode("latin-1")))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, dated_send)
