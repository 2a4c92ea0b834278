"""The app factory: `create_app(settings)` builds a FastAPI app holding its own sandbox state."""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from .clock_header import SimulatedDate
from .control import Faults, Metrics, RateLimiter
from .drift import Drift
from .errors import install_handlers
from .gate import ApiGate
from .malform import Malform
from .routers import account, campaign_writes, campaigns, control, hooks, mailboxes, replies, search
from .seed import build_state
from .settings import SandboxSettings
from .sim import Simulator
from .webhooks import Webhooks

log = logging.getLogger(__name__)


class Runtime:
    """Everything one sandbox instance owns (reachable as `app.state.sandbox`)."""

    def __init__(self, settings: SandboxSettings) -> None:
        self.settings = settings
        self.state = build_state(settings)
        self.metrics = Metrics()
        self.limiter = RateLimiter(settings.rate_limit)
        self.faults = Faults()
        self.drift = Drift()
        self.malform = Malform()
        self.webhooks = Webhooks()
        self.simulator = Simulator(self.state, self.webhooks)
        self._clock_lock = threading.Lock()
        self.closing = threading.Event()
        self.scenario: dict[str, Any] | None = None
        if settings.scenario is not None:
            self.apply_scenario(settings.scenario)

    def apply_scenario(self, name: str, parts: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Put the sandbox in scenario `name` now (sandbox/scenario.py), all of it or `parts`; returns what changed."""
        from .scenario import PARTS, apply

        with self._clock_lock:
            self.scenario = apply(name, self.state, self.simulator, parts or PARTS)
            return self.scenario

    def advance(self, seconds: float) -> float:
        """Simulate `seconds` of service time; returns the new simulation time."""
        with self._clock_lock, self.state.lock:
            self.simulator.advance(seconds)
            return self.state.now

    def close(self) -> None:
        self.closing.set()
        self.webhooks.close()


def create_app(settings: SandboxSettings) -> FastAPI:
    runtime = Runtime(settings)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        runtime.close()

    app = FastAPI(
        title="Outreach Campaign Service sandbox",
        version="1.0",
        lifespan=lifespan,
        docs_url="/_sandbox/docs",
        openapi_url="/_sandbox/openapi.json",
        redoc_url=None,
    )
    app.state.sandbox = runtime
    install_handlers(app)
    for module in (account, campaigns, campaign_writes, replies, mailboxes, search, hooks):
        app.include_router(module.router, prefix="/api/v1")
    app.include_router(control.router)
    app.add_middleware(ApiGate, runtime=runtime)
    app.add_middleware(SimulatedDate, runtime=runtime)  # outermost: dates every answer, the gate's too
    return app
