"""`reporting.alert_incidents`: one row per rule and subject, and the transitions that notify.

A finding with no open row opens one (a subject that was resolved before reopens its row); an open or
acknowledged row whose rule no longer finds its subject is resolved. Only these two transitions notify, so
an incident is announced once when it opens and once when it resolves, never on every run. A rule that
could not run (`evaluated` leaves it out) changes none of its rows. dbt keeps this table across builds
(no build made it: models/macros/atomic_build.sql), and its test `alert_incidents_one_open` checks one open row
per rule and subject.

A transition is saved before anything is sent, with its notification owed (`notified_open_at` or
`notified_resolved_at` empty): `alerts/outbox.py` delivers what is owed, so a crash, a kill or a failing
target between the save and the notification loses nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from alerts.db import Db
from alerts.finding import Finding
from pipelines.warehouse.duckdb_file import sql_string

TABLE = "reporting.alert_incidents"
OPEN, RESOLVED, ACKNOWLEDGED = "open", "resolved", "acknowledged"

DDL = f"""
create table if not exists {TABLE} (
    incident_id varchar not null,
    rule varchar not null,
    workspace_id varchar,
    subject_type varchar not null,
    subject_id varchar not null,
    subject_label varchar,
    state varchar not null,
    value {{double}},
    threshold {{double}},
    volume {{double}},
    is_estimate boolean,
    detail varchar,
    first_seen_at {{ts}},
    last_seen_at {{ts}},
    opened_at {{ts}},
    resolved_at {{ts}},
    acknowledged_at {{ts}},
    times_opened integer,
    notified_open varchar,
    notified_resolve varchar,
    updated_at {{ts}}{{outbox}}
)
"""
#: the outbox's columns, added to a table an older release created (its notified rows count as delivered)
OUTBOX_COLUMNS = {
    "notified_open_at": "{ts}",
    "notified_resolved_at": "{ts}",
    "notify_attempts": "integer",
    "notify_error": "varchar",
    "notify_done": "varchar",
}
COMMENTS = {
    "": "One row per alert rule and subject (workspace, mailbox, campaign or reply): README, Alerts",
    "incident_id": "stable per rule and subject (outreach alerts ack ID takes it; a reopened incident keeps it)",
    "rule": "the rule's name, e.g. mailbox_bounce_rate",
    "workspace_id": "the subject's workspace",
    "subject_type": "workspace, mailbox, campaign or reply",
    "subject_id": "the subject's id; for a reply: campaign id and lead address, as campaign_id:email",
    "subject_label": "the subject's name or address",
    "state": "open, resolved or acknowledged (outreach alerts ack ID)",
    "value": "the rule's measure at the last evaluation (a rate as a fraction, points, days, hours or minutes)",
    "threshold": "the [alerts] setting the value was compared with",
    "volume": "sends or recipients a rate is over",
    "is_estimate": "true when bounces were attributed to the mailbox by its share of a campaign's sends",
    "detail": "the breach in words",
    "first_seen_at": "service clock (UTC) when the subject first breached the rule",
    "last_seen_at": "service clock (UTC) of the last evaluation that found the breach",
    "opened_at": "service clock (UTC) when the incident last opened",
    "resolved_at": "service clock (UTC) when the rule last stopped finding the breach",
    "acknowledged_at": "wall clock (UTC) of outreach alerts ack",
    "times_opened": "how many times the incident opened",
    "notified_open": "outcome of the open notification per target (sent, failed: reason, no targets)",
    "notified_resolve": "outcome of the resolve notification per target",
    "updated_at": "wall clock (UTC) of the last change to the row",
    "notified_open_at": "wall clock (UTC) when the open notification had reached every target; empty while owed",
    "notified_resolved_at": "wall clock (UTC) when the resolve notification had reached every target; empty while owed",
    "notify_attempts": "evaluations that tried to deliver the latest notification",
    "notify_error": "why the latest notification is still owed (one line, targets shown without their secrets)",
    "notify_done": "targets (hashed) the owed notification already reached: a retry never sends to them again",
}


@dataclass
class Transition:
    """An incident that opened or resolved in this evaluation (what gets notified)."""

    kind: str  # opened or resolved
    incident: dict[str, Any]


def incident_id(rule: str, subject_id: str) -> str:
    """Stable per rule and subject: `outreach alerts ack ID` takes it, and a reopened incident keeps it."""
    return hashlib.sha256(f"{rule}\x00{subject_id}".encode()).hexdigest()[:12]


def ensure_table(db: Db) -> None:
    """Create the table (on either engine), or add the outbox's columns to one an older release created."""
    types = {"double": db.dialect.double, "ts": db.dialect.timestamp}
    if db.has("reporting", "alert_incidents"):
        missing = [c for c in OUTBOX_COLUMNS if c not in db.columns("reporting", "alert_incidents")]
        if not missing:
            return
        for column in missing:
            db.execute(
                f"alter table {TABLE} add column if not exists {column} {OUTBOX_COLUMNS[column].format(**types)}"
            )
        # what the older release notified counts as delivered: its outcome was recorded after the send
        db.execute(f"update {TABLE} set notified_open_at = updated_at where notified_open is not null")
        db.execute(f"update {TABLE} set notified_resolved_at = updated_at where notified_resolve is not null")
        _comment(db, missing)
        return
    outbox = "".join(f",\n    {c} {t.format(**types)}" for c, t in OUTBOX_COLUMNS.items())
    db.execute("create schema if not exists reporting")
    db.execute(DDL.format(outbox=outbox, **types))
    _comment(db, list(COMMENTS))
    db.forget_tables()


def _comment(db: Db, columns: list[str]) -> None:
    for column in columns:
        target = f"table {TABLE}" if not column else f"column {TABLE}.{column}"
        db.execute(f"comment on {target} is '{sql_string(COMMENTS[column])}'")


#: the findings of one evaluation, and the incidents it resolves: a temporary table `reconcile` applies
STAGED_COLUMNS = (
    ("incident_id", "varchar"), ("kind", "varchar"), ("seq", "integer"), ("rule", "varchar"),
    ("workspace_id", "varchar"), ("subject_type", "varchar"), ("subject_id", "varchar"), ("subject_label", "varchar"),
    ("value", "{double}"), ("threshold", "{double}"), ("volume", "{double}"), ("is_estimate", "boolean"),
    ("detail", "varchar"),
)  # fmt: skip
_FOUND = "value = f.value, threshold = f.threshold, volume = f.volume, is_estimate = f.is_estimate, detail = f.detail, "
_FOUND += "subject_label = f.subject_label, last_seen_at = ?, updated_at = ?"


def reconcile(db: Db, findings: Iterable[Finding], evaluated: Iterable[str], now: datetime) -> list[Transition]:
    """Apply one evaluation: open, update and resolve rows; returns the transitions to notify.

    The findings are staged in a temporary table and applied in four statements, in one transaction: thousands
    of findings (a reply waiting per lead of an agency) cost what a few do, where a statement per finding cost
    seconds per thousand."""
    ensure_table(db)
    wall = datetime.now(UTC)
    current = {(r[0], r[1]): (r[2], r[3]) for r in db.rows(f"select rule, subject_id, incident_id, state from {TABLE}")}
    staged: list[tuple[Any, ...]] = []
    seen: set[tuple[str, str]] = set()
    for f in findings:
        key = (f.rule, f.subject_id)
        if key in seen:
            continue
        seen.add(key)
        iid, state = current.get(key, (incident_id(f.rule, f.subject_id), None))
        kind = "opened" if state is None else "reopened" if state == RESOLVED else "seen"
        staged.append((iid, kind, len(staged), f.rule, f.workspace_id, f.subject_type, f.subject_id,
                       f.subject_label, f.value, f.threshold, f.volume, f.is_estimate, f.detail))  # fmt: skip
    rules = set(evaluated)
    for key, (iid, state) in current.items():
        if key not in seen and key[0] in rules and state != RESOLVED:
            staged.append((iid, "resolved", len(staged), *[None] * (len(STAGED_COLUMNS) - 3)))
    types = {"double": db.dialect.double}
    with db.transaction():
        staged_at = db.load_temp("alert_findings", [(n, kind.format(**types)) for n, kind in STAGED_COLUMNS], staged)
        db.execute(
            f"insert into {TABLE} (incident_id, rule, workspace_id, subject_type, subject_id, state, value, "
            "threshold, volume, is_estimate, detail, subject_label, last_seen_at, updated_at, first_seen_at, "
            "opened_at, times_opened, notify_attempts) "
            "select incident_id, rule, workspace_id, subject_type, subject_id, 'open', value, threshold, volume, "
            f"is_estimate, detail, subject_label, ?, ?, ?, ?, 1, 0 from {staged_at} where kind = 'opened'",
            [now, wall, now, now],
        )
        db.execute(
            f"update {TABLE} as t set state = 'open', {_FOUND}, opened_at = ?, resolved_at = null, "
            "acknowledged_at = null, notified_open = null, notified_resolve = null, "
            "notified_open_at = null, notified_resolved_at = null, notify_attempts = 0, notify_error = null, "
            f"notify_done = null, times_opened = times_opened + 1 from {staged_at} as f "
            "where t.incident_id = f.incident_id and f.kind = 'reopened'",
            [now, wall, now],
        )
        db.execute(
            f"update {TABLE} as t set {_FOUND} from {staged_at} as f where t.incident_id = f.incident_id "
            "and f.kind = 'seen'",
            [now, wall],
        )
        db.execute(
            # an open notification still owed stays owed (and is sent first); else the resolve starts afresh
            f"update {TABLE} as t set state = 'resolved', resolved_at = ?, updated_at = ?, "
            "notified_resolved_at = null, "
            "notify_attempts = case when notified_open_at is null then notify_attempts else 0 end, "
            "notify_error = case when notified_open_at is null then notify_error end, "
            f"notify_done = case when notified_open_at is null then notify_done end from {staged_at} as f "
            "where t.incident_id = f.incident_id and f.kind = 'resolved'",
            [now, wall],
        )
        changed = db.dicts(
            f"select f.kind as transition_kind, t.* from {TABLE} as t inner join {staged_at} as f "
            "on t.incident_id = f.incident_id where f.kind <> 'seen' order by f.seq"
        )
        db.execute(f"drop table {staged_at}")
    return [Transition("resolved" if row.pop("transition_kind") == "resolved" else "opened", row) for row in changed]


def list_incidents(db: Db, include_all: bool = False) -> list[dict[str, Any]]:
    """Open and acknowledged incidents (every row with `include_all`), newest opening first."""
    if not db.has("reporting", "alert_incidents"):
        return []
    ensure_table(db)  # a table an older release wrote gains the outbox's columns before they are shown
    where = "" if include_all else "where state <> 'resolved'"
    return db.dicts(f"select * from {TABLE} {where} order by opened_at desc, rule, subject_id")


def acknowledge(db: Db, iid: str) -> dict[str, Any] | None:
    """Acknowledge an open incident: it stays until its rule clears it (then it resolves, notified once)."""
    if not db.has("reporting", "alert_incidents"):
        return None
    rows = db.dicts(f"select * from {TABLE} where incident_id = ?", [iid])
    if not rows:
        return None
    if rows[0]["state"] == OPEN:
        db.execute(
            f"update {TABLE} set state = '{ACKNOWLEDGED}', acknowledged_at = ?, updated_at = ? where incident_id = ?",
            [datetime.now(UTC), datetime.now(UTC), iid],
        )
    return db.dicts(f"select * from {TABLE} where incident_id = ?", [iid])[0]
