"""Sandboxes for the bench: out of process (`SandboxProcess`), so their memory never mixes with ours."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Keys:
    """The first workspace's keys: syncs use the read-only key, snapshots a separate rw key."""

    sync_key: str
    snapshot_key: str
    workspace_id: str


def workspace_keys(sandbox: Any) -> Keys:
    """Pick the first workspace's read key (sync) and admin rw key (snapshots: its own rate budget)."""
    keys = sandbox.keys()
    first = keys[0]["workspace_id"]
    mine = [k for k in keys if k["workspace_id"] == first]
    read = next((k for k in mine if k.get("level") == "read"), mine[0])
    admin = next(
        (k for k in mine if k.get("level") == "rw" and k.get("role") == "admin" and k is not read),
        next(k for k in mine if k is not read),
    )
    return Keys(sync_key=read["key"], snapshot_key=admin["key"], workspace_id=first)


@contextmanager
def sandbox_process(*, scale: str, seed: int, rate_limit: int, latency_ms: int = 0) -> Iterator[Any]:
    """Start a sandbox in its own process; stop it on exit whatever happens."""
    from sandbox.server import SandboxProcess

    logger.info("starting sandbox scale=%s seed=%s rate_limit=%s latency_ms=%s", scale, seed, rate_limit, latency_ms)
    proc = SandboxProcess(scale=scale, seed=seed, rate_limit=rate_limit, latency_ms=latency_ms)
    proc.start()
    try:
        yield proc
    finally:
        proc.stop()
