"""`reporting.alert_incidents`: one row per rule and subject, and the transitions that notify.

A finding with no open row opens one (a subject that was resolved before reopens its row); an open or
acknowledged row whose rule no longer finds its subject is resolved. Only these two transitions notify, so
an incident is announced once when it opens and once when it resolves, never on every run. A rule that
could not run (`evaluated` leaves it out) changes none of its rows. dbt keeps this table across builds
(var `kept_relations`), and its test `alert_incidents_one_open` checks one open row per rule and subject.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from alerts.db import Db
from alerts.finding import Finding

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
    value double,
    threshold double,
    volume double,
    is_estimate boolean,
    detail varchar,
    first_seen_at timestamp,
    last_seen_at timestamp,
    opened_at timestamp,
    resolved_at timestamp,
    acknowledged_at timestamp,
    times_opened integer,
    notified_open varchar,
    notified_resolve varchar,
    updated_at timestamp
)
"""
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
    db.execute("create schema if not exists reporting")
    db.execute(DDL)
    for column, text in COMMENTS.items():
        escaped = text.replace("'", "''")
        target = f"table {TABLE}" if not column else f"column {TABLE}.{column}"
        db.execute(f"comment on {target} is '{escaped}'")
    db.forget_tables()


def reconcile(db: Db, findings: Iterable[Finding], evaluated: Iterable[str], now: datetime) -> list[Transition]:
    """Apply one evaluation: open, update and resolve rows; returns the transitions to notify."""
    ensure_table(db)
    wall = datetime.now(UTC)
    current = {(r["rule"], r["subject_id"]): r for r in db.dicts(f"select * from {TABLE}")}
    out: list[Transition] = []
    seen: set[tuple[str, str]] = set()
    for f in findings:
        key = (f.rule, f.subject_id)
        if key in seen:
            continue
        seen.add(key)
        row = current.get(key)
        values = [f.value, f.threshold, f.volume, f.is_estimate, f.detail, f.subject_label, now, wall]
        if row is None:
            iid = incident_id(f.rule, f.subject_id)
            db.execute(
                f"insert into {TABLE} (incident_id, rule, workspace_id, subject_type, subject_id, state, value, "
                "threshold, volume, is_estimate, detail, subject_label, last_seen_at, updated_at, first_seen_at, "
                "opened_at, times_opened) values (?, ?, ?, ?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                [iid, f.rule, f.workspace_id, f.subject_type, f.subject_id, *values, now, now],
            )
        elif row["state"] == RESOLVED:
            db.execute(
                f"update {TABLE} set state = 'open', value = ?, threshold = ?, volume = ?, is_estimate = ?, "
                "detail = ?, subject_label = ?, last_seen_at = ?, updated_at = ?, opened_at = ?, resolved_at = null, "
                "acknowledged_at = null, notified_open = null, notified_resolve = null, "
                "times_opened = times_opened + 1 where incident_id = ?",
                [*values, now, row["incident_id"]],
            )
        else:
            db.execute(
                f"update {TABLE} set value = ?, threshold = ?, volume = ?, is_estimate = ?, detail = ?, "
                "subject_label = ?, last_seen_at = ?, updated_at = ? where incident_id = ?",
                [*values, row["incident_id"]],
            )
            continue
        out.append(Transition("opened", _row(db, f.rule, f.subject_id)))
    rules = set(evaluated)
    for key, row in current.items():
        if key in seen or row["rule"] not in rules or row["state"] == RESOLVED:
            continue
        db.execute(
            f"update {TABLE} set state = 'resolved', resolved_at = ?, updated_at = ? where incident_id = ?",
            [now, wall, row["incident_id"]],
        )
        out.append(Transition("resolved", _row(db, row["rule"], row["subject_id"])))
    return out


def record_notification(db: Db, transition: Transition, outcome: str) -> None:
    column = "notified_open" if transition.kind == "opened" else "notified_resolve"
    db.execute(f"update {TABLE} set {column} = ? where incident_id = ?", [outcome, transition.incident["incident_id"]])


def _row(db: Db, rule: str, subject_id: str) -> dict[str, Any]:
    return db.dicts(f"select * from {TABLE} where rule = ? and subject_id = ?", [rule, subject_id])[0]


def list_incidents(db: Db, include_all: bool = False) -> list[dict[str, Any]]:
    """Open and acknowledged incidents (every row with `include_all`), newest opening first."""
    if not db.has("reporting", "alert_incidents"):
        return []
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
            f"update {TABLE} set state = 'acknowledged', acknowledged_at = ?, updated_at = ? where incident_id = ?",
            [datetime.now(UTC), datetime.now(UTC), iid],
        )
    return db.dicts(f"select * from {TABLE} where incident_id = ?", [iid])[0]
