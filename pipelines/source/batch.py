"""What a batch is: the workspaces synced together through one dlt pipeline, and each one's plan.

A batch is extracted, normalized and loaded as one dlt load package (one merge per table, one state
commit), instead of paying dlt's per-run overhead once per workspace. Each workspace keeps its own API
client (its key's rate budget), its own plan and state, and fails alone: a failed workspace's
rows already extracted still load (they are what the API said), but its state does not advance.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pipelines.api.accounts import Workspace
from pipelines.api.client import OutreachClient
from pipelines.core.constants import PRIMARY_KEYS
from pipelines.core.deadline import Deadline
from pipelines.core.errors import OutreachError
from pipelines.core.fanout import Emit, Stopped
from pipelines.core.progress import WorkspaceProgress
from pipelines.source.drift import DriftGuard
from pipelines.source.quarantine import TABLE_ENDPOINTS, Rejection, protected_tables, rejection
from pipelines.source.recipient_pages import PageGuide, StoredCampaign
from pipelines.source.state import WorkspaceState

log = logging.getLogger(__name__)

BodyLookup = Callable[[Sequence[Mapping[str, Any]]], Mapping[str, str]]
"""Hook point for reply bodies: given reply rows that need a body, return {reply_id: body} for those
it can supply without calling GET /replies/{id} (e.g. from lead.replied webhook events)."""


@dataclass
class KnownBody:
    body: str
    fetched_at: Any


class Reads(Protocol):
    """What planning and extraction read besides the API: committed state, bodies, stored pages. Our sync
    reads its warehouse (`pipelines.source.stored.WarehouseReader`); a dlt user's source reads its own dlt state
    (`pipelines.source.dlt_source`)."""

    def states(self, workspace_ids: Sequence[str]) -> dict[str, WorkspaceState]: ...

    def deferred_reply_ids(self, workspace_ids: Sequence[str]) -> dict[str, list[str]]: ...

    def lead_event_campaigns(
        self, events: Sequence[str], since: datetime | None
    ) -> list[tuple[str, str | None, datetime | None]]: ...

    def stored_bodies(self, workspace_id: str, reply_ids: Sequence[str]) -> dict[str, KnownBody]: ...

    def stored_pages(self, campaign_ids: Sequence[str], per_page: int) -> dict[str, StoredCampaign]: ...


@dataclass
class WorkspacePlan:
    """Everything decided before extraction for one workspace, and what extraction found."""

    workspace: Workspace
    mode: str
    client: OutreachClient
    progress: WorkspaceProgress
    state: WorkspaceState
    campaigns: list[dict[str, Any]] = field(default_factory=list)
    campaign_pages: dict[str, int] = field(default_factory=dict)  # campaign id -> its page of the list
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
    rejections: list[Rejection] = field(default_factory=list)  # records that could not be loaded
    planned_rejections: int = 0  # of them, found while planning (kept when an extraction is done again)
    guard: DriftGuard | None = None  # types and coerces rows (pipelines.sync.extract sets one per workspace)
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
            del self.rejections[self.planned_rejections :]

    def reject(self, endpoint: str, page: int | None, reason: str, raw: Any) -> None:
        """Quarantine one record (pipelines.source.quarantine): it is kept in rejected_records, not loaded."""
        with self._lock:
            self.rejections.append(rejection(endpoint, page, reason, raw))

    def admit(
        self,
        table: str,
        items: Iterable[tuple[Any, dict[str, Any]]],
        page: int | None = None,
        endpoint: str | None = None,
        count: bool = True,
    ) -> list[dict[str, Any]]:
        """The rows that can be loaded, of (API record, row) pairs; the others are rejected. A row needs
        its primary key and values that can be typed (`DriftGuard.check`, which types them in place).
        `count=False`: records whose drift was counted already (see `DriftGuard.check`)."""
        guard = self.guard if self.guard is not None else DriftGuard.default()
        key = PRIMARY_KEYS.get(table, ("id",))
        kept: list[dict[str, Any]] = []
        for raw, shaped in items:
            # nested objects copied: typing a row in place must leave the record as the API sent it
            row = {k: copy.deepcopy(v) if isinstance(v, (dict, list)) else v for k, v in shaped.items()}
            missing = [name for name in key if row.get(name) in (None, "")]
            reason = f"no {', '.join(missing)} (primary key)" if missing else guard.check(table, row, count)
            if reason is None:
                kept.append(row)
            else:
                self.reject(endpoint or TABLE_ENDPOINTS[table], page, reason, raw)
        return kept

    @property
    def protected_tables(self) -> set[str]:
        """Tables that get no deletion marks or scd2 retirements for this workspace in this run."""
        with self._lock:
            return protected_tables(self.rejections)

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.counters[name] = self.counters.get(name, 0) + n

    def add_rows(self, table: str, n: int) -> None:
        if n:
            with self._lock:
                self.rows[table] = self.rows.get(table, 0) + n
            self.progress.rows(table, n)

    def service_time(self) -> datetime:
        """The service's clock (its latest HTTP Date), else this machine's: history is on the service's clock,
        so a sandbox's simulated time and a skewed machine clock agree with the API's timestamps."""
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

    def finished(self, resource: str) -> None:
        """`resource` yielded all its rows. Nothing to do here: our sync's state travels as rows after the
        data (`pipelines.sync.extract`); a source that keeps state in dlt's source state advances it here."""


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
