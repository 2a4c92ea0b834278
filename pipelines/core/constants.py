"""Constants of the outreach source: page sizes, table names, column hints, known enum values."""

from __future__ import annotations

import glob
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from dlt.common.schema.typing import TTableSchemaColumns

SOURCE_NAME = "outreach"
DATASET_NAME = "outreach"
# The defaults every layer uses (pipelines, models, flows, dashboard, receiver import them from here, a module
# without dependencies; the settings object, pipelines/core/config.py, takes its defaults from them)
DEFAULT_DUCKDB_PATH = "data/outreach.duckdb"
DEFAULT_SPOOL_DIR = "data/spool"
DEFAULT_STORAGE_VERSION = "v1.0.0"  # DuckDB storage format of a warehouse (and BI file) we create
DEFAULT_MEMORY_LIMIT = "64MB"
BI_SUFFIX = "_bi.duckdb"  # the BI file beside a warehouse: bi_path_for
# Workspaces per dlt load when `batch_size` is not set. Each load costs about 1 s whatever it holds (dlt resolves
# its configuration again in every step), so fewer loads are faster; a full sync's batch holds every row of its
# workspaces, a quick sync's only what changed, so a quick sync's batches can be larger for the same memory.
FULL_BATCH_SIZE = 25
QUICK_BATCH_SIZE = 100
PIPELINE_PREFIX = "outreach_"
EVENTS_PIPELINE_NAME = "outreach_events"

PER_PAGE_CAMPAIGNS = 100
PER_PAGE_REPLIES = 100
PER_PAGE_RECIPIENTS = 200

RECIPIENT_BATCH_ROWS = 10_000
REPLY_BODY_CHUNK_ROWS = 10_000  # replies without a body are settled (hook, cap) this many at a time
FILE_MAX_ROWS = 100_000

MODES = ("quick", "full")

# Values the spec names; anything else still lands, with a warning, and is counted in the sync summary
# as an unknown value.
KNOWN_ENUMS: dict[str, dict[str, frozenset[str]]] = {
    "campaigns": {"status": frozenset({"draft", "active", "paused", "completed"})},
    "campaign_stats": {"campaign_status": frozenset({"draft", "active", "paused", "completed"})},
    "campaign_recipients": {
        "status": frozenset({"pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed"})
    },
}
# Enums whose values the spec does not list ("not shown"): the values the sandbox documents (sandbox/README.md,
# "Enums"). A value outside them is not wrong, only new: the sync summary counts it as a "new value seen".
OPEN_ENUMS: dict[str, dict[str, frozenset[str]]] = {
    "campaigns": {
        "campaign_type": frozenset({"outbound", "nurture", "reengagement"}),
        "schedule_type": frozenset({"immediate", "scheduled"}),
    },
    "replies": {
        "reply_type": frozenset(
            {"interested", "not_interested", "out_of_office", "wrong_person", "unsubscribe", "auto_reply"}
        )
    },
    "email_accounts": {"provider": frozenset({"google", "microsoft", "smtp"})},
}


def _ts() -> dict[str, Any]:
    return {"data_type": "timestamp", "timezone": True}


def _text(**extra: Any) -> dict[str, Any]:
    return {"data_type": "text", **extra}


def _json() -> dict[str, Any]:
    return {"data_type": "json"}


def _typed(data_type: str, **extra: Any) -> dict[str, Any]:
    return {"data_type": data_type, **extra}


def _named(table: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {"name": name, **hint} for name, hint in table.items()}


def columns_for(table: str) -> TTableSchemaColumns:
    """Fresh column hints for `table` (dlt may mutate the dicts it is given)."""
    return cast("TTableSchemaColumns", _named(_COLUMNS_FACTORY[table]()))


_COLUMNS_FACTORY: dict[str, Any] = {
    "workspaces": lambda: {
        "id": _text(nullable=False),
        "workspace_id": _text(),
        "created_at": _ts(),
        "synced_at": _ts(),
        "observed_at": _ts(),  # the service's clock when the account was read
    },
    # GET /account's versions (scd2): the credit balance, plan, name and counts, without the run's clocks
    # (synced_at, observed_at would make every run a change); `workspaces` keeps the current row
    "workspace_history": lambda: {
        "id": _text(nullable=False),
        "workspace_id": _text(merge_key=True),
        "created_at": _ts(),
    },
    "campaigns": lambda: {
        "id": _text(nullable=False),
        "workspace_id": _text(merge_key=True),
        "scheduled_at": _ts(),
        "created_at": _ts(),
        "subject_lines": _json(),
        "email_bodies": _json(),
        "email_account_ids": _json(),
        "send_window__days": _json(),
    },
    "campaign_recipients": lambda: {"deleted_at": _ts()},
    "campaign_stats": lambda: {
        "campaign_id": _text(nullable=False),
        "workspace_id": _text(),
        "synced_at": _ts(),
        "deleted_at": _ts(),
    },
    "campaign_variants": lambda: {
        "campaign_id": _text(nullable=False),
        "index": _typed("bigint", nullable=False),
        "workspace_id": _text(),
        "reply_rate": _typed("double"),
        "synced_at": _ts(),
        "deleted_at": _ts(),
    },
    "campaign_daily_sends": lambda: {
        "campaign_id": _text(nullable=False),
        "date": _typed("date", nullable=False),
        "workspace_id": _text(),
        "sent": _typed("bigint"),
    },
    "replies": lambda: {
        "id": _text(nullable=False),
        "workspace_id": _text(),
        "campaign_id": _text(),
        "email_account_id": _text(),
        "received_at": _ts(),
        "body": _text(),
        "body_fetched_at": _ts(),
        "synced_at": _ts(),
        "deleted_at": _ts(),
    },
    "email_accounts": lambda: {
        "id": _text(nullable=False),
        "workspace_id": _text(merge_key=True),
        "created_at": _ts(),
        "reputation_score": _typed("double"),
        "warmup__health_score": _typed("double"),
    },
    "webhook_event_types": lambda: {
        "key": _text(nullable=False),
        "workspace_id": _text(nullable=False),
    },
}

PRIMARY_KEYS: dict[str, tuple[str, ...]] = {
    "workspaces": ("id",),
    "campaign_recipients": ("id",),
    "campaign_stats": ("campaign_id",),
    "campaign_variants": ("campaign_id", "index"),
    "campaign_daily_sends": ("campaign_id", "date"),
    "replies": ("id",),
    "webhook_event_types": ("workspace_id", "key"),
}

# Tables whose rows a full sync marks with deleted_at when the API stops returning them.
HISTORY_TABLES = ("workspace_history", "campaigns", "email_accounts")  # scd2: versions with validity
SOFT_DELETE_TABLES = ("campaign_recipients", "campaign_stats", "campaign_variants", "replies")

TABLES = (
    "workspaces",
    "workspace_history",
    "campaigns",
    "campaign_recipients",
    "campaign_stats",
    "campaign_variants",
    "campaign_daily_sends",
    "replies",
    "email_accounts",
    "webhook_event_types",
)


def bi_path_for(duckdb_path: str | Path) -> Path:
    """``<stem>_bi.duckdb`` beside the warehouse (the DESIGN.md contract)."""
    path = Path(duckdb_path)
    return path.with_name(f"{path.stem}{BI_SUFFIX}")


def bi_file_problem(path: str | Path) -> str | None:
    """One line when `path` is the BI file of a warehouse beside it (``<stem>_bi.duckdb``): each build replaces
    that copy whole, so a sync into it, or an acknowledgement written there, would be lost."""
    bi = Path(path)
    if not bi.name.endswith(BI_SUFFIX):
        return None
    stem = bi.name.removesuffix(BI_SUFFIX)
    candidates = [*sorted(bi.parent.glob(f"{glob.escape(stem)}.*")), bi.with_name(stem)]
    owner = next((c for c in candidates if c.is_file() and bi_path_for(c) == bi), None)
    if owner is None:
        return None
    return f"{bi} is the BI file of the warehouse {owner}, a copy each build replaces: pass --duckdb {owner}"


def segment(value: object) -> str:
    """An id as one segment of a request's path: a `/` or `..` in it (an id sent malformed) would name another
    resource, which httpx, normalising the URL, then asks for."""
    from urllib.parse import quote

    return quote(str(value), safe="")
