"""`outreach`: the dlt source of one workspace for a dlt user's own pipeline, into any destination.

    import dlt
    from pipelines import outreach

    pipeline = dlt.pipeline("outreach", destination="duckdb", dataset_name="outreach")
    pipeline.run(outreach())  # api_key and base_url from [sources.outreach] or SOURCES__OUTREACH__*

It yields the resources of our own sync (`pipelines.source.batch_source.resources`, planned by `pipelines.source.plan`),
with the same incremental behaviour, but keeps what our sync reads back from its warehouse in the
pipeline's own dlt source state instead, so it needs nothing of ours in the destination:

* ``fingerprints`` (campaign id -> fingerprint): quick mode reads stats and recipients only of changed
  campaigns; stored once both `campaign_stats` and `campaign_recipients` extracted everything;
* ``reply_cursor`` (newest `received_at` loaded), ``deferred_replies`` (replies still without a body),
  ``reply_bodies``: the bodies of the replies a quick run re-reads (those within `reply_lookback_s` below
  the cursor), so a re-read list item never wipes a body, and ``bodied_replies``: the ids of the others
  loaded with a body, whose rows a full run leaves as loaded (it has no body to write into them);
* ``campaign_pages``: per campaign, its status and a summary of each recipient page as read
  (`pipelines.source.page_summaries`), what our sync sums from its stored recipients, so quick reads only the
  pages that changed;
* ``event_types_loaded``.

dlt commits the state with the load package only when the whole extraction succeeded. A workspace whose
reads fail raises its error (one line, the cause and the fix) out of the resource, so a run that fails
half way advances nothing. The key is a dlt secret: dlt masks it in traces and never stores it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import dlt
from dlt.extract.resource import DltResource

from pipelines.api.accounts import Workspace, connectivity_check, new_client
from pipelines.core import constants
from pipelines.core.config import OutreachSettings, resolve_settings
from pipelines.core.errors import ConfigError
from pipelines.core.progress import WorkspaceProgress
from pipelines.source.batch import Batch, WorkspacePlan
from pipelines.source.batch_source import resources
from pipelines.source.dlt_state import StateReader
from pipelines.source.plan import plan_batch

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


@dlt.source(name=constants.SOURCE_NAME, section="outreach")
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
    if mode not in constants.MODES:
        raise ConfigError(f"unknown mode {mode!r}: use one of {', '.join(constants.MODES)}")
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


def _campaign_status(stats: Mapping[str, Any]) -> Any:
    """The campaign's status in a stats payload (what `campaign_stats.campaign_status` holds)."""
    campaign = stats.get("campaign")
    return campaign.get("status") if isinstance(campaign, Mapping) else None
