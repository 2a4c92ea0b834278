"""What a batch is: the workspaces synced together through one dlt pipeline, and each one's plan.

A batch is extracted, normalized and loaded as one dlt load package (one merge per table, one state
commit), instead of paying dlt's per-run overhead once per workspace. Each workspace keeps its own API
client (its key's rate budget), its own plan and state, and fails alone: a failed workspace's
rows already extracted still load (they are what the API said), but its state does not advance.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pipelines.accounts import Workspace
from pipelines.client import OutreachClient
from pipelines.deadline import Deadline
from pipelines.errors import OutreachError
from pipelines.fanout import Emit, Stopped
from pipelines.progress import WorkspaceProgress
from pipelines.recipient_pages import PageGuide
from pipelines.state import WorkspaceState

log = logging.getLogger(__name__)

BodyLookup = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, str]]
"""Hook point for reply bodies: given reply rows that need a body, return {reply_id: body} for those
it can supply without calling GET /replies/{id} (e.g. from lead.replied webhook events)."""


@dataclass
class KnownBody:
    body: str
    fetched_at: Any


@dataclass
class WorkspacePlan:
    """Everything decided before extraction for one workspace, and what extraction found."""

    workspace: Workspace
    mode: str
    client: OutreachClient
    progress: WorkspaceProgress
    state: WorkspaceState
    campaigns: list[dict[str, Any]] = field(default_factory=list)
    fingerprints: dict[str, str] = field(default_factory=dict)  # new ones, from this run's campaign list
    changed_campaign_ids: list[str] = field(default_factory=list)
    campaigns_from_events: list[str] = field(default_factory=list)  # of them, only a webhook event says changed
    stats: dict[str, Mapping[str, Any]] = field(default_factory=dict)  # campaign id -> GET stats payload
    page_guides: dict[str, PageGuide] = field(default_factory=dict)  # campaign id -> which recipient pages
    mailboxes: list[dict[str, Any]] = field(default_factory=list)
    event_types: list[dict[str, Any]] | None = None  # None: not read this run
    deferred_reply_ids: list[str] = field(default_factory=list)
    reply_cursor: str | None = None  # new cursor once the replies are read
    counters: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    error: BaseException | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def workspace_id(self) -> str:
        return self.workspace.workspace_id

    @property
    def ok(self) -> bool:
        return self.error is None

    def fail(self, exc: BaseException) -> None:
        """Record the workspace's first error; it extracts nothing more and its state stays as it was."""
        with self._lock:
            if self.error is None:
                self.error = exc
        self.progress.set_stage("failed")

    def restart(self) -> None:
        """Forget what an extraction that had to be dropped counted, before extracting again."""
        with self._lock:
            self.counters.clear()
            self.rows.clear()
            self.reply_cursor = None

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] = self.counters.get(name, 0) + n

    def add_rows(self, table: str, n: int) -> None:
        if n:
            with self._lock:
                self.rows[table] = self.rows.get(table, 0) + n
            self.progress.rows(table, n)

    def service_time(self) -> datetime:
        """The service's clock (its latest HTTP Date), else this machine's (ROUND2-DECISIONS.md)."""
        reader = getattr(self.client, "server_time", None)
        seen = reader() if callable(reader) else None
        return seen if isinstance(seen, datetime) else datetime.now(UTC)


@dataclass
class Batch:
    """The workspaces of one dlt load, with the run's settings for them."""

    mode: str
    plans: list[WorkspacePlan]
    synced_at: datetime
    run_id: str
    reply_lookback_s: int
    reply_body_cap: int
    workers: int
    body_lookup: BodyLookup | None = None
    deadline: Deadline = field(default_factory=lambda: Deadline(None))

    @property
    def ok_plans(self) -> list[WorkspacePlan]:
        return [p for p in self.plans if p.ok]

    def service_time(self) -> datetime:
        """The batch's one scd2 boundary: the latest service time its clients saw."""
        times = [p.service_time() for p in self.plans]
        return max(times) if times else datetime.now(UTC)


def guarded(plan: WorkspacePlan, work: Callable[[Emit], None]) -> Callable[[Emit], None]:
    """A fan-out task of `plan`: skipped once the workspace failed; its own error fails the workspace
    (recorded in the plan) instead of the whole batch."""

    def run(emit: Emit) -> None:
        if not plan.ok:
            return
        try:
            work(emit)
        except Stopped:  # the consumer went away: not this workspace's failure
            raise
        except OutreachError as exc:
            plan.fail(exc)
        except Exception as exc:
            log.exception("workspace %s: unexpected error", plan.workspace_id)
            plan.fail(exc)

    return run
