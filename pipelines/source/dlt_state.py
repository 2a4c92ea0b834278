"""What `pipelines.source.dlt_source` keeps in a dlt pipeline's source state, and reads back from it where our
sync reads its warehouse (the `pipelines.source.batch.Reads` of a batch). Layout, under ``workspaces`` ->
workspace id, is described in `pipelines.source.dlt_source`."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from pipelines.core import constants
from pipelines.core.timestamps import parse_optional
from pipelines.source.batch import KnownBody
from pipelines.source.page_summaries import summaries
from pipelines.source.recipient_pages import StoredCampaign
from pipelines.source.state import WorkspaceState
from pipelines.source.stored import stored_campaign

__all__ = ["StateReader"]


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

    # -- what planning reads (the `pipelines.source.batch.Reads` of our warehouse) ---------------------------
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
                    out[rid] = KnownBody(bodies[rid][0], parse_optional(bodies[rid][1]))
                elif rid in loaded:
                    out[rid] = KnownBody("", None)
                    kept.add(rid)
        return out

    # -- what the run saw ------------------------------------------------------------------------------
    def note_pages(self, item: Any) -> Any:
        """Summarise the recipient pages in an arrow table on its way to the destination."""
        if isinstance(item, pa.Table) and item.num_rows:
            workspace_id = str(item.column("workspace_id")[0].as_py())
            found = summaries(item, constants.PER_PAGE_RECIPIENTS)
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
                if cid in kept and kept[cid].get("per_page") == constants.PER_PAGE_RECIPIENTS
            }
            for cid, pages in read.items():
                campaign = out.setdefault(cid, {"per_page": constants.PER_PAGE_RECIPIENTS, "status": None, "pages": {}})
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
            newest = parse_optional(cursor)
            start = newest - self.lookback if newest is not None else None
            window = {rid: kept for rid, kept in bodies.items() if start is None or _not_before(kept[2], start)}
            loaded |= set(bodies) - set(window)
            entry["reply_bodies"] = window
            entry["bodied_replies"] = sorted(loaded - set(window) - set(deferred))
            entry["deferred_replies"] = deferred
            entry["reply_cursor"] = cursor


def _text(value: Any) -> str | None:
    """A timestamp as state keeps it (ISO text)."""
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _not_before(value: Any, start: datetime) -> bool:
    at = parse_optional(value)
    return at is None or at >= start
