"""The deliverability guard (opt-in, `[alerts] auto_pause = true`): pause what keeps bouncing.

A mailbox with an open `mailbox_bounce_rate` incident is paused with `POST /email-accounts/{id}/pause`, a
campaign with an open `campaign_bounce_rate` incident with `POST /campaigns/{id}/pause`, through the sync's
API client and keys. At most `max_pauses_per_run` a run; an incident is paused once per opening; nothing is
ever resumed by the guard. Every attempt and its reason is a row of `outreach.guard_actions`. A dry run
prints what it would do and writes nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from alerts.db import Db
from alerts.settings import AlertSettings
from alerts.store import TABLE as INCIDENTS
from pipelines.core.config import OutreachSettings
from pipelines.core.constants import segment
from pipelines.core.errors import ForbiddenError, OutreachError
from pipelines.core.shown import shown

TABLE = "outreach.guard_actions"
PAUSES = {"mailbox_bounce_rate": "/email-accounts/{id}/pause", "campaign_bounce_rate": "/campaigns/{id}/pause"}
DDL = f"""
create table if not exists {TABLE} (
    action_id varchar primary key,
    acted_at timestamptz not null,
    workspace_id varchar,
    subject_type varchar,
    subject_id varchar,
    subject_label varchar,
    action varchar,
    rule varchar,
    incident_id varchar,
    incident_opened_at timestamptz,
    value {{double}},
    threshold {{double}},
    reason varchar,
    outcome varchar
)
"""

Echo = Callable[[str], None]


def candidates(db: Db) -> list[dict[str, Any]]:
    """Open bounce-rate incidents not yet paused in their current opening, oldest opening first."""
    if not db.has("reporting", "alert_incidents"):
        return []
    _ensure_table(db)
    rules = ", ".join(f"'{r}'" for r in PAUSES)
    return db.dicts(
        f"select i.* from {INCIDENTS} i where i.state = 'open' and i.rule in ({rules}) and not exists ("
        f"select 1 from {TABLE} g where g.incident_id = i.incident_id and g.incident_opened_at = i.opened_at "
        "and g.outcome = 'paused') order by i.opened_at, i.incident_id"
    )


def run_guard(db: Db, alerts: AlertSettings, sync: OutreachSettings, *, dry_run: bool, echo: Echo) -> int:
    """Pause (or, dry, say it would) up to `max_pauses_per_run` subjects; returns how many were paused."""
    todo = candidates(db)
    if not todo:
        echo("guard: nothing to pause")
        return 0
    limit = alerts.max_pauses_per_run
    if dry_run:
        for inc in todo[:limit]:
            echo(f"guard (dry run): would pause {_what(inc)}: {_reason(inc)}")
        _left(todo, limit, echo)
        return 0
    clients = _clients_by_workspace(sync, echo)
    paused = 0
    told_read_only: set[str] = set()
    try:
        for inc in todo[:limit]:
            client = clients.get(str(inc["workspace_id"]))
            if client is None:
                _record(db, inc, f"failed: no configured API key for workspace {inc['workspace_id']}")
                echo(f"guard: cannot pause {_what(inc)}: no configured API key for its workspace")
                continue
            try:
                client.post(PAUSES[inc["rule"]].format(id=segment(inc["subject_id"])))
            except ForbiddenError:
                _record(db, inc, "failed: the key cannot make changes (403)")
                if inc["workspace_id"] not in told_read_only:
                    told_read_only.add(inc["workspace_id"])
                    echo(
                        f"guard: the guard needs a read-write key: workspace {inc['workspace_id']}'s key was refused "
                        "a change (403); set a read-write admin key in SOURCES__OUTREACH__API_KEYS"
                    )
                continue
            except OutreachError as exc:
                _record(db, inc, f"failed: {str(exc).splitlines()[0]}")
                echo(f"guard: could not pause {_what(inc)}: {str(exc).splitlines()[0]}")
                continue
            _record(db, inc, "paused")
            paused += 1
            echo(f"guard: paused {_what(inc)}: {_reason(inc)}")
    finally:
        for client in clients.values():
            client.close()
    _left(todo, limit, echo)
    return paused


def _left(todo: list[dict[str, Any]], limit: int, echo: Echo) -> None:
    if len(todo) > limit:
        echo(f"guard: {len(todo) - limit} more left for the next run (max_pauses_per_run = {limit})")


def _what(inc: dict[str, Any]) -> str:
    return f"{inc['subject_type']} {shown(inc.get('subject_label') or inc['subject_id'])} ({shown(inc['subject_id'])})"


def _reason(inc: dict[str, Any]) -> str:
    return f"{inc['rule']} {float(inc['value']):.2%} > {float(inc['threshold']):.2%} ({inc.get('detail') or ''})"


def _ensure_table(db: Db) -> None:
    db.execute(DDL.format(double=db.dialect.double))


def _record(db: Db, inc: dict[str, Any], outcome: str) -> None:
    _ensure_table(db)
    now = datetime.now(UTC)
    action_id = hashlib.sha256(f"{inc['incident_id']}{now.isoformat()}".encode()).hexdigest()[:16]
    db.execute(
        f"insert into {TABLE} values (?, ?, ?, ?, ?, ?, 'pause', ?, ?, ?, ?, ?, ?, ?)",
        [
            action_id,
            now,
            inc["workspace_id"],
            inc["subject_type"],
            inc["subject_id"],
            inc.get("subject_label"),
            inc["rule"],
            inc["incident_id"],
            inc["opened_at"],
            inc["value"],
            inc["threshold"],
            _reason(inc),
            outcome,
        ],
    )


def _clients_by_workspace(sync: OutreachSettings, echo: Echo) -> dict[str, Any]:
    """One API client per workspace among the configured keys (GET /account tells whose a key is)."""
    from pipelines.api.accounts import check_keys, client_for

    keys = sync.api_key_list()
    if not keys or not sync.base_url:
        echo("guard: no API key or base URL configured (SOURCES__OUTREACH__API_KEYS, SOURCES__OUTREACH__BASE_URL)")
        return {}
    out: dict[str, Any] = {}
    for checked in check_keys(keys, str(sync.base_url), timeout=sync.request_timeout):
        if isinstance(checked, BaseException):
            echo(f"guard: a configured key cannot be used: {str(checked).splitlines()[0]}")
            continue
        out.setdefault(checked.workspace_id, client_for(checked.api_key, sync))
    return out
