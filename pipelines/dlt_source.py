"""`outreach`: the dlt source of one workspace for a dlt user's own pipeline, into any destination.

    import dlt
    from pipelines import outreach

    pipeline = dlt.pipeline("outreach", destination="duckdb", dataset_name="outreach")
    pipeline.run(outreach())  # api_key and base_url from [sources.outreach] or SOURCES__OUTREACH__*

It yields the resources of our own sync (`pipelines.source.resources`, planned by `pipelines.plan`),
with the same incremental behaviour, but keeps what our sync reads back from its warehouse in the
pipeline's own dlt source state instead, so it needs nothing of ours in the destination:

* ``fingerprints`` (campaign id -> fingerprint): quick mode reads stats and recipients only of changed
  campaigns; stored once both `campaign_stats` and `campaign_recipients` extracted everything;
* ``reply_cursor`` (newest `received_at` loaded), ``deferred_replies`` (replies still without a body),
  ``reply_bodies``: the bodies of the replies a quick run re-reads (those within `reply_lookback_s` below
  the cursor), so a re-read list item never wipes a body, and ``bodied_replies``: the ids of the others
  loaded with a body, whose rows a full run leaves as loaded (it has no body to write into them);
* ``event_types_loaded``.

dlt commits the state with the load package only when the whole extraction succeeded. A workspace whose
reads fail raises its error (one line, the cause and the fix) out of the resource, so a run that fails
half way advances nothing. The key is a dlt secret: dlt masks it in traces and never stores it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import dlt
import pyarrow as pa
from dlt.extract.resource import DltResource

from pipelines import settings as S
from pipelines.accounts import Workspace, new_client
from pipelines.batch import Batch, KnownBody, WorkspacePlan
from pipelines.client import connectivity_check
from pipelines.config import OutreachSettings, resolve_settings
from pipelines.errors import ConfigError
from pipelines.page_summaries import summaries
from pipelines.plan import plan_batch
from pipelines.progress import WorkspaceProgress
from pipelines.recipient_pages import StoredCampaign
from pipelines.source import _parse_ts, resources
from pipelines.state import WorkspaceState
from pipelines.warehouse import stored_campaign

log = logging.getLogger(__name__)

__all__ = ["outreach"]

_DEFAULTS = OutreachSettings()  # one set of defaults: our sync's settings
RESOURCES = frozenset(
    {
        "workspaces", "workspace_history", "campaigns", "email_accounts", "webhook_event_types",
        "campaign_stats", "campaign_recipients", "replies",
    }
)  # fmt: skip
#: the fingerprints say what both of these read: they advance once both extracted everything
CAMPAIGN_READS = frozenset({"campaign_stats", "campaign_recipients"})


@dlt.source(name=S.SOURCE_NAME, section="outreach")
def outreach(
    api_key: str = dlt.secrets.value,
    base_url: str = dlt.config.value,
    mode: str = "quick",
    rate_limit_per_minute: int = _DEFAULTS.rate_limit_per_minute,
    reply_body_cap: int = _DEFAULTS.reply_body_cap,
    reply_lookback_s: int = _DEFAULTS.reply_lookback_s,
    request_timeout: float = _DEFAULTS.request_timeout,
    workers: int = _DEFAULTS.workers,
) -> Sequence[DltResource]:
    """Every table of one workspace of the Outreach Campaign Service API.

    Args:
        api_key: the workspace's API key (``[sources.outreach] api_key`` in secrets.toml).
        base_url: the API's base URL, ending in /api/v1 (``[sources.outreach] base_url``).
        mode: ``quick`` (what changed since this pipeline's last run) or ``full`` (everything).
        rate_limit_per_minute: requests per minute for the key; 0 turns pacing off.
        reply_body_cap: GET /replies/{id} calls per run; the rest land without body and are fetched later.
        reply_lookback_s: a quick run re-reads replies this far below the stored cursor.
        request_timeout: seconds per request.
        workers: threads reading the API at once.

    Returns:
        The resources workspaces, workspace_history, campaigns, email_accounts, webhook_event_types,
        campaign_stats (with campaign_variants and campaign_daily_sends), campaign_recipients, replies.
    """
    if mode not in S.MODES:
        raise ConfigError(f"unknown mode {mode!r}: use one of {', '.join(S.MODES)}")
    settings = resolve_settings(
        base_url=base_url,
        rate_limit_per_minute=rate_limit_per_minute,
        reply_body_cap=reply_body_cap,
        reply_lookback_s=reply_lookback_s,
        request_timeout=request_timeout,
        workers=workers,
    )
    # the key and URL are checked now, before anything is extracted; the service's clock at this moment
    # is the scd2 boundary of the versions this run loads, as in our sync
    with new_client(api_key, base_url, rate_limit_per_minute=None, timeout=settings.request_timeout) as client:
        account = connectivity_check(client)
        boundary = client.server_time() or datetime.now(UTC)
        workspace = Workspace(index=0, api_key=api_key, account=account, requests=client.stats.requests)
    reader = StateReader(settings.reply_lookback_s)
    batch = WorkspaceBatch(workspace, settings, reader, mode)
    made = resources(batch, reader, boundary)
    for resource in made:
        if resource.name == "replies":
            resource.add_filter(reader.keep_reply)
        elif resource.name == "campaign_recipients":
            resource.add_map(reader.note_pages)
    return made


class StateReader:
    """What planning and the replies resource read besides the API, from the pipeline's source state.

    Bound to the state dict during extraction (in the dlt thread that may write it), then used from the
    worker threads too: every access holds a lock.
    """

    def __init__(self, lookback_s: int) -> None:
        self.lookback = timedelta(seconds=lookback_s)
        self._state: dict[str, Any] = {}
        self._seen: dict[str, dict[str, tuple[Any, Any, Any]]] = {}  # emitted replies: (body, fetched, received)
        self._listed: dict[str, set[str]] = {}  # every reply row extracted, emitted or not
        self._kept: dict[str, set[str]] = {}  # replies whose loaded row (and body) stands this run
        self._pages: dict[str, dict[str, dict[int, dict[str, Any]]]] = {}  # recipient pages read: summaries
        self._lock = threading.Lock()

    def bind(self, state: dict[str, Any]) -> None:
        with self._lock:
            self._state = state

    def workspace(self, workspace_id: str) -> dict[str, Any]:
        """The workspace's part of the source state (created empty on a first run)."""
        with self._lock:
            entry: dict[str, Any] = self._state.setdefault("workspaces", {}).setdefault(workspace_id, {})
            return entry

    # -- what planning reads (the `pipelines.batch.Reads` of our warehouse) ---------------------------
    def states(self, workspace_ids: Sequence[str]) -> dict[str, WorkspaceState]:
        out = {}
        for workspace_id in workspace_ids:
            entry = self.workspace(workspace_id)
            out[workspace_id] = WorkspaceState(
                fingerprints=dict(entry.get("fingerprints") or {}),
                reply_cursor=entry.get("reply_cursor"),
                event_types_loaded=bool(entry.get("event_types_loaded")),
            )
        return out

    def deferred_reply_ids(self, workspace_ids: Sequence[str]) -> dict[str, list[str]]:
        """Replies still without a body, newest first (as the warehouse query orders them)."""
        out = {}
        for workspace_id in workspace_ids:
            deferred: dict[str, Any] = self.workspace(workspace_id).get("deferred_replies") or {}
            out[workspace_id] = sorted(deferred, key=lambda rid: str(deferred[rid] or ""), reverse=True)
        return out

    def lead_event_campaigns(
        self, events: Sequence[str], since: datetime | None
    ) -> list[tuple[str, str | None, datetime | None]]:
        """None: webhook events are our receiver's, loaded into our warehouse, not into a user's pipeline."""
        return []

    def stored_pages(self, campaign_ids: Sequence[str], per_page: int) -> dict[str, StoredCampaign]:
        """The per-page summaries of the recipients loaded so far (kept in the state as they were read)."""
        with self._lock:
            kept = {
                cid: campaign
                for entry in (self._state.get("workspaces") or {}).values()
                for cid, campaign in (entry.get("campaign_pages") or {}).items()
                if campaign.get("per_page") == per_page
            }
        return {
            cid: stored_campaign(
                [{**row, "page": int(page)} for page, row in kept[cid]["pages"].items()], kept[cid]["status"]
            )
            for cid in campaign_ids
            if cid in kept and kept[cid].get("pages")
        }

    def stored_bodies(self, workspace_id: str, reply_ids: Sequence[str]) -> dict[str, KnownBody]:
        """Bodies of the re-read window from the state. A reply loaded with its body outside the window (only
        a full run lists that far) gets a placeholder instead, so it is not fetched again, and `keep_reply`
        drops its row: the loaded row keeps its body."""
        entry = self.workspace(workspace_id)
        bodies: dict[str, Any] = entry.get("reply_bodies") or {}
        loaded = set(entry.get("bodied_replies") or ())
        out = {}
        with self._lock:
            kept = self._kept.setdefault(workspace_id, set())
            for rid in reply_ids:
                if rid in bodies:
                    out[rid] = KnownBody(bodies[rid][0], _parse_ts(bodies[rid][1]))
                elif rid in loaded:
                    out[rid] = KnownBody("", None)
                    kept.add(rid)
        return out

    # -- what the run saw ------------------------------------------------------------------------------
    def note_pages(self, item: Any) -> Any:
        """Summarise the recipient pages in an arrow table on its way to the destination."""
        if isinstance(item, pa.Table) and item.num_rows:
            workspace_id = str(item.column("workspace_id")[0].as_py())
            found = summaries(item, S.PER_PAGE_RECIPIENTS)
            with self._lock:
                pages = self._pages.setdefault(workspace_id, {})
                for cid, summary in found.items():
                    pages.setdefault(cid, {}).update(summary)
        return item

    def commit_pages(self, workspace_id: str, campaign_ids: Iterable[str], statuses: Mapping[str, Any]) -> None:
        """The summaries of the pages read this run and the status of each campaign whose stats were read;
        campaigns gone from the list are forgotten."""
        entry = self.workspace(workspace_id)
        with self._lock:
            read = self._pages.pop(workspace_id, {})
            kept: dict[str, Any] = entry.get("campaign_pages") or {}
            out = {
                cid: kept[cid]
                for cid in campaign_ids
                if cid in kept and kept[cid].get("per_page") == S.PER_PAGE_RECIPIENTS
            }
            for cid, pages in read.items():
                campaign = out.setdefault(cid, {"per_page": S.PER_PAGE_RECIPIENTS, "status": None, "pages": {}})
                campaign["pages"] = {**campaign["pages"], **{str(page): row for page, row in pages.items()}}
            for cid, status in statuses.items():
                if cid in out:
                    out[cid]["status"] = status
            entry["campaign_pages"] = out

    def keep_reply(self, row: Any) -> bool:
        """Record a reply row on its way to the destination; False for a row whose loaded body stands."""
        if not isinstance(row, Mapping):
            return True
        workspace_id, rid = str(row.get("workspace_id")), str(row.get("id"))
        with self._lock:
            self._listed.setdefault(workspace_id, set()).add(rid)
            if rid in self._kept.get(workspace_id, ()):
                return False
            self._seen.setdefault(workspace_id, {})[rid] = (
                row.get("body"), row.get("body_fetched_at"), row.get("received_at"),
            )  # fmt: skip
        return True

    def commit_replies(self, workspace_id: str, cursor: str | None, full: bool) -> None:
        """The new cursor, the replies still without a body, the bodies of the next run's window and the ids
        of the replies loaded with a body outside it."""
        entry = self.workspace(workspace_id)
        with self._lock:
            seen = self._seen.pop(workspace_id, {})
            listed = self._listed.pop(workspace_id, set())
            deferred = dict(entry.get("deferred_replies") or {})
            loaded = set(entry.get("bodied_replies") or ())
            if full:  # a full run lists every reply: one it did not list is gone from the API
                deferred = {rid: at for rid, at in deferred.items() if rid in listed}
                loaded &= listed
            bodies = dict(entry.get("reply_bodies") or {})
            for rid, (body, fetched_at, received) in seen.items():
                if body is None:
                    deferred[rid] = _text(received)
                else:
                    deferred.pop(rid, None)
                    bodies[rid] = [body, _text(fetched_at), _text(received)]
            newest = _parse_ts(cursor)
            start = newest - self.lookback if newest is not None else None
            window = {rid: kept for rid, kept in bodies.items() if start is None or _not_before(kept[2], start)}
            loaded |= set(bodies) - set(window)
            entry["reply_bodies"] = window
            entry["bodied_replies"] = sorted(loaded - set(window) - set(deferred))
            entry["deferred_replies"] = deferred
            entry["reply_cursor"] = cursor


class WorkspaceBatch(Batch):
    """A batch of the one workspace, planned on first use inside dlt's extraction (where the source
    state can be read and written), whose resources advance that state as each one finishes."""

    def __init__(self, workspace: Workspace, settings: OutreachSettings, reader: StateReader, mode: str) -> None:
        super().__init__(
            mode=mode,
            plans=[],
            synced_at=datetime.now(UTC),
            run_id="",
            reply_lookback_s=settings.reply_lookback_s,
            reply_body_cap=settings.reply_body_cap,
            workers=settings.workers,
        )
        self.workspace = workspace
        self.settings = settings
        self.reader = reader
        self.done: set[str] = set()
        self._planned = False
        self._plan_lock = threading.RLock()

    @property
    def ok_plans(self) -> list[WorkspacePlan]:
        with self._plan_lock:
            if not self._planned:
                self._planned = True  # planning itself reads ok_plans
                self.synced_at = datetime.now(UTC)
                self.reader.bind(dlt.current.source_state())
                plan_batch(
                    self, self.reader, lambda ws: WorkspaceProgress(label=ws.name), self.settings, [self.workspace]
                )
        return [p for p in self.plans if p.ok]

    def finished(self, resource: str) -> None:
        """Raise the workspace's error (so dlt commits nothing of this run), else advance the state the
        resource owns; once every resource finished, log the run's requests."""
        plans = self.ok_plans
        failed = [p.error for p in self.plans if p.error is not None]
        if failed:
            raise failed[0]
        self.done.add(resource)
        for plan in plans:
            entry = self.reader.workspace(plan.workspace_id)
            if resource == "replies":
                self.reader.commit_replies(plan.workspace_id, plan.reply_cursor, self.mode == "full")
            elif resource == "webhook_event_types":
                entry["event_types_loaded"] = plan.state.event_types_loaded or plan.event_types is not None
            if resource in CAMPAIGN_READS and CAMPAIGN_READS <= self.done:
                entry["fingerprints"] = dict(plan.fingerprints)
                statuses = {cid: _campaign_status(data) for cid, data in plan.stats.items()}
                self.reader.commit_pages(plan.workspace_id, plan.fingerprints, statuses)
            if self.done >= RESOURCES:
                plan.client.close()
                log.info(
                    "outreach: workspace %s (%s), %s sync: %d requests, %d rows read",
                    plan.workspace.name, plan.workspace_id, self.mode,
                    plan.workspace.requests + plan.client.stats.requests, sum(plan.rows.values()),
                )  # fmt: skip


def _text(value: Any) -> str | None:
    """A timestamp as state keeps it (ISO text)."""
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _not_before(value: Any, start: datetime) -> bool:
    at = _parse_ts(value)
    return at is None or at >= start


def _campaign_status(stats: Mapping[str, Any]) -> Any:
    """The campaign's status in a stats payload (what `campaign_stats.campaign_status` holds)."""
    campaign = stats.get("campaign")
    return campaign.get("status") if isinstance(campaign, Mapping) else None
