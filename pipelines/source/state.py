"""Per-workspace sync state, kept in the warehouse table ``outreach.sync_state`` (one row per workspace).

Why a table and not dlt's source state: several workspaces share one dlt pipeline (a batch), and which
batch or pipeline a workspace lands in changes with the number of workspaces, `batch_size` and the worker
that runs it. dlt keeps source state per pipeline, so a workspace's cursors would be lost or mixed up
whenever batches change. A row per workspace does not care where it was loaded from.

It commits with the data: the rows are extracted into the same load package as the batch's data (after
the data, so a workspace that failed mid-extract gets no new row), and they are read back only when
that package's load has completed (joined with dlt's ``_dlt_loads``), exactly how dlt's own state
works. A load that dies half way leaves the previous state, or none, never a state ahead of the data:
the next run reads again what it cannot prove was loaded.

Fields: ``fingerprints`` {campaign id: fingerprint} (quick mode re-reads campaigns whose fingerprint
changed), ``reply_cursor`` (newest ``received_at`` loaded), ``event_types_loaded``, ``last_full_at``
(the last full reconcile), ``last_quick_at``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

import dlt
from dlt.common.schema.typing import TTableSchemaColumns

log = logging.getLogger(__name__)

STATE_TABLE = "sync_state"

STATE_COLUMNS = cast(
    TTableSchemaColumns,
    {
        "workspace_id": {"data_type": "text", "nullable": False},
        "workspace_name": {"data_type": "text"},
        "fingerprints": {"data_type": "json"},
        "reply_cursor": {"data_type": "timestamp", "timezone": True},
        "event_types_loaded": {"data_type": "bool"},
        "last_full_at": {"data_type": "timestamp", "timezone": True},
        "last_quick_at": {"data_type": "timestamp", "timezone": True},
        "synced_at": {"data_type": "timestamp", "timezone": True},
    },
)


@dataclass
class WorkspaceState:
    """What the last committed load recorded for one workspace (empty on a first run)."""

    fingerprints: dict[str, str] = field(default_factory=dict)
    reply_cursor: str | None = None
    event_types_loaded: bool = False
    last_full_at: datetime | None = None
    last_quick_at: datetime | None = None
    loaded_at: datetime | None = None  # when the load that committed this state completed (`_dlt_loads`)


def state_row(
    workspace_id: str,
    workspace_name: str,
    *,
    mode: str,
    fingerprints: dict[str, str],
    reply_cursor: str | None,
    event_types_loaded: bool,
    previous: WorkspaceState,
    synced_at: datetime,
) -> dict[str, Any]:
    """The new `sync_state` row of a workspace whose data this run extracted completely."""
    return {
        "workspace_id": workspace_id,
        "workspace_name": workspace_name,
        "fingerprints": dict(fingerprints),
        "reply_cursor": reply_cursor,
        "event_types_loaded": event_types_loaded,
        "last_full_at": synced_at if mode == "full" else previous.last_full_at,
        "last_quick_at": synced_at if mode == "quick" else previous.last_quick_at,
        "synced_at": synced_at,
    }


def state_resource(rows: Callable[[], Sequence[dict[str, Any]]]) -> Any:
    """The state rows of a batch, extracted after the batch's data into the same load package. `rows` is
    called only then, when it is known which workspaces extracted everything."""

    @dlt.resource(name=STATE_TABLE, write_disposition="merge", primary_key="workspace_id", columns=STATE_COLUMNS)
    def sync_state() -> Iterator[list[dict[str, Any]]]:
        ready = list(rows())
        if ready:
            yield ready

    return sync_state()


def read_states(client: Any, workspace_ids: Sequence[str]) -> dict[str, WorkspaceState]:
    """The committed state of `workspace_ids` in one query (`client`: an open dlt sql_client).

    The caller checks that the table exists (a first run has none)."""
    if not workspace_ids:
        return {}
    table = client.make_qualified_table_name(STATE_TABLE)
    loads = client.make_qualified_table_name("_dlt_loads")
    marks = ", ".join(["%s"] * len(workspace_ids))
    rows = client.execute_sql(
        f"select s.workspace_id, s.fingerprints, s.reply_cursor, s.event_types_loaded, s.last_full_at, "
        f"s.last_quick_at, l.inserted_at from {table} s join {loads} l on l.load_id = s._dlt_load_id and l.status = 0 "
        f"where s.workspace_id in ({marks})",
        *workspace_ids,
    )
    out: dict[str, WorkspaceState] = {}
    for ws, fingerprints, cursor, types_loaded, last_full, last_quick, loaded_at in rows or []:
        out[str(ws)] = WorkspaceState(
            fingerprints=_as_dict(fingerprints),
            reply_cursor=_iso(cursor),
            event_types_loaded=bool(types_loaded),
            last_full_at=last_full,
            last_quick_at=last_quick,
            loaded_at=loaded_at,
        )
    return out


def _as_dict(value: Any) -> dict[str, str]:
    """A JSON column as a dict: DuckDB returns text, PostgreSQL a parsed object."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            log.warning("sync_state.fingerprints is not JSON: every campaign counts as changed")
            return {}
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if isinstance(value, datetime) else str(value)
