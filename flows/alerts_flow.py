"""Speed to lead: load the webhook spool and evaluate `positive_reply_waiting` between syncs.

The receiver writes each delivery to the spool the moment it arrives; this loop (the `speed-to-lead`
deployment in prefect.yaml, every 5 minutes; `outreach alerts replies` by hand) loads the spool into
`outreach.events` and evaluates the one rule that cannot wait for the next sync. The age of an unread reply is
measured on the service's clock, read from the API's `Date` header (one `GET /account` per workspace key), so a
reply ages even when no later event arrives; without keys it is the newest timestamp in the warehouse.
"""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task

from pipelines.core.config import OutreachSettings, check_spool, resolve_settings
from pipelines.warehouse.destination import warehouse_target

log = logging.getLogger(__name__)


def service_clock(settings: OutreachSettings) -> datetime | None:
    """The HTTP Date of `GET /account` with the first configured key that answers (None without keys or an
    answer). The service has one clock: one request, not one per workspace every few minutes."""
    from pipelines.api.accounts import new_client
    from pipelines.core.errors import OutreachError

    if not settings.base_url:
        return None
    for key in settings.api_key_list():
        try:
            with new_client(key, str(settings.base_url), rate_limit_per_minute=None) as client:
                client.get("/account")
                stamp = client.server_time()
        except OutreachError as exc:
            log.warning("speed to lead: the service clock could not be read: %s", str(exc).splitlines()[0])
            continue
        if stamp is not None:
            return stamp
    return None


def check_replies(settings: OutreachSettings, spool_dir: str | Path | None = None, echo: Any = None) -> Any:
    """Load the spool (if any), then evaluate `positive_reply_waiting`; returns the AlertRun. Holds the
    warehouse writer lock while it writes, as every writer does. DuckDB or PostgreSQL alike."""
    from alerts import after_events
    from models.preflight import check_duckdb_path
    from pipelines.warehouse.lock import warehouse_writer
    from pipelines.warehouse.warehouse_prep import load_spool_events

    target = warehouse_target(settings)
    spool = Path(spool_dir).expanduser().resolve() if spool_dir else settings.spool_path()
    if spool is not None:
        check_spool(spool)
    if target.duckdb_path is not None:  # before the lock file: none beside a path that holds no warehouse
        check_duckdb_path(target.duckdb_path)
    clock = service_clock(settings)
    with warehouse_writer(target, what="speed to lead", timeout_s=settings.lock_timeout_s):
        loaded = load_spool_events(settings, target, spool) if spool is not None and spool.is_dir() else 0
        run = after_events(target, service_clock=clock, echo=echo)
    run.events_loaded = loaded
    return run


@task(name="speed-to-lead")
def check_replies_task(spool_dir: str | None, duckdb_path: str | None) -> str:
    # A schedule can fire before the first sync made the warehouse: nothing to check yet, and the spool waits.
    settings = resolve_settings(duckdb_path=duckdb_path)
    target = warehouse_target(settings)
    if target.duckdb_path is not None and not Path(target.duckdb_path).exists():
        return f"no warehouse at {target.duckdb_path} yet: nothing to check before the first sync"
    run = check_replies(settings, spool_dir)
    return f"{run.events_loaded} event(s) loaded; {run.summary()}"


@flow(name="speed-to-lead", persist_result=False, validate_parameters=True)
def speed_to_lead(spool_dir: str | None = None, duckdb_path: str | None = None) -> str:
    """Load the webhook spool and open `positive_reply_waiting` incidents without waiting for a sync."""
    line = check_replies_task(spool_dir, duckdb_path)
    get_run_logger().info("%s", line)
    return line
