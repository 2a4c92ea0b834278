"""Helpers (no tests here): a sandbox whose webhook events reach the warehouse through real signed deliveries.

`Delivered` starts a `small` sandbox with webhooks allowed to loopback, a receiver holding every
workspace's signing secret, and one subscription per event and workspace (rw admin keys); the sync reads
with the read-only keys and loads the receiver's spool, as a deployment does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx

from receiver.server import ReceiverServer


@dataclass
class Delivered:
    sandbox: Any
    receiver: ReceiverServer
    warehouse: Path
    spool: Path
    workdir: Path
    read_keys: dict[str, str]  # workspace id -> read-only key
    admin_keys: dict[str, str]  # workspace id -> rw admin key
    subscriptions: list[str] = field(default_factory=list)

    def subscribe(self, events: list[str] | None = None) -> None:
        """Subscribe the receiver to `events` (default: every event the API lists) in every workspace."""
        for key in self.admin_keys.values():
            with httpx.Client(
                base_url=self.sandbox.base_url,
                headers={"Authorization": f"Bearer {key}"},
            ) as api:
                keys = events or [e["key"] for e in api.get("/hooks/events").json()["data"]]
                for event in keys:
                    answer = api.post("/hooks", json={"target_url": self.receiver.url, "event": event})
                    answer.raise_for_status()
                    self.subscriptions.append(answer.json()["id"])

    def service_now(self) -> datetime:
        """The service's clock, from the HTTP Date header it sends (simulated time)."""
        answer = self.sandbox.http.get(f"{self.sandbox.url}/_sandbox/faults", timeout=30)
        return parsedate_to_datetime(answer.headers["date"])

    def advance(self, seconds: float, timeout: float = 120.0) -> list[dict[str, Any]]:
        """Move the service's clock and wait until every delivery is done; returns the deliveries to us."""
        self.sandbox.advance(seconds)
        return self.deliveries(timeout)

    def deliveries(self, timeout: float = 120.0) -> list[dict[str, Any]]:
        """Every delivery to our receiver so far, once none is pending (the clock does not move)."""
        deadline = time.monotonic() + timeout
        while True:
            body = self.sandbox.http.get(f"{self.sandbox.url}/_sandbox/hooks/deliveries", timeout=30).json()
            if body["pending"] == 0:
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{body['pending']} deliveries still pending after {timeout}s")
            time.sleep(0.2)
        mine = [d for d in body["data"] if d["target"] == self.receiver.url]
        assert all(d["status"] == "delivered" for d in mine), {d["status"] for d in mine}
        return mine

    def sync(self, mode: str = "full") -> Any:
        """One sync of every workspace with the read-only keys, loading the spool first."""
        from pipelines.sync.edge import run_sync

        return run_sync(
            mode=mode, api_keys=list(self.read_keys.values()), base_url=self.sandbox.base_url,
            duckdb_path=self.warehouse, spool_dir=self.spool, progress=False, rate_limit_per_minute=0,
            reply_body_cap=20, pipelines_dir=self.workdir / "dlt",
        )  # fmt: skip


@contextmanager
def delivered_sandbox(
    make_sandbox: Callable[..., Any], workdir: Path, scale: str = "small", workspaces: int = 2
) -> Iterator[Delivered]:
    """A sandbox, its receiver and the keys; the warehouse is `<workdir>/outreach.duckdb` (the default name)."""
    sandbox = make_sandbox(scale=scale, rate_limit=0, insecure_hooks=True, workspaces=workspaces)
    keys = sandbox.keys()
    admins = {k["workspace_id"]: k for k in keys if k["level"] == "rw" and k["role"] == "admin"}
    reads: dict[str, str] = {}
    for k in keys:
        if k["level"] == "read":
            reads.setdefault(k["workspace_id"], k["key"])
    secrets = {wid: k["signing_secret"] for wid, k in admins.items()}
    spool = workdir / "spool"
    with ReceiverServer(signing_secret=secrets, spool_dir=spool) as receiver:
        yield Delivered(
            sandbox=sandbox, receiver=receiver, warehouse=workdir / "outreach.duckdb", spool=spool, workdir=workdir,
            read_keys=reads, admin_keys={wid: k["key"] for wid, k in admins.items()},
        )  # fmt: skip
