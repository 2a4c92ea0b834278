"""The notification outbox: every incident transition is saved first, owed, and delivered from the table.

An incident row owes its open notification while `notified_open_at` is empty, and its resolve notification
while it is resolved and `notified_resolved_at` is empty. Every evaluation delivers what is owed, oldest
failures first, then the transitions it just saved: a crash, a kill or targets that refuse between the save
and the send leave the notification owed, and the next evaluation sends it. Each target (every Apprise URL
of `[alerts] targets`, and Prefect's event API when one is configured) that took a notification is recorded
in `notify_done` at once, so a retry never sends it there again. What remains is the moment between a
target's answer and that record: a kill exactly then sends that one notification again on the next run
(at least once, never lost). Before sending, the row's `notify_attempts` goes up and `notify_error` says the
attempt is under way, so a killed attempt is visible (`outreach alerts`: "notified: no (1 attempt: ...)").
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from alerts import notify
from alerts.db import Db
from alerts.settings import AlertSettings, masked_target
from alerts.store import RESOLVED, TABLE

log = logging.getLogger(__name__)

PREFECT = "prefect"
INTERRUPTED = "interrupted: the evaluation ended before every target answered"


@dataclass(frozen=True)
class Target:
    key: str  # a hash of the URL (the URL holds tokens), or "prefect"
    shown: str
    url: str | None = None


@dataclass
class Delivered:
    """What one pass over the outbox did."""

    sent: list[tuple[str, str]] = field(default_factory=list)  # (kind, incident_id) delivered everywhere
    owed: int = 0  # notifications still owed after the pass
    untold: int = 0  # notifications settled with no target set: nobody was told


def targets(settings: AlertSettings) -> list[Target]:
    out = [Target(_key(url), masked_target(url), url) for url in settings.target_list()]
    if notify.prefect_configured():
        out.append(Target(PREFECT, "Prefect event"))
    return out


def _key(url: str) -> str:
    return hashlib.sha256(url.encode()).hexdigest()[:16]


#: the rows that owe their open notification, and those that owe their resolve notification
OWES_OPEN = "opened_at is not null and notified_open_at is null"
OWES_RESOLVE = f"state = '{RESOLVED}' and notified_resolved_at is null"


def owed(db: Db) -> list[dict[str, Any]]:
    """Incidents with a notification owed: those that failed before first, then by their last change."""
    if not db.has("reporting", "alert_incidents"):
        return []
    return db.dicts(
        f"select * from {TABLE} where ({OWES_OPEN}) or ({OWES_RESOLVE}) "
        "order by coalesce(notify_attempts, 0) desc, updated_at, incident_id"
    )


def deliver(db: Db, settings: AlertSettings) -> Delivered:
    """Send every owed notification; never raises for a target. A target that fails is not tried again for
    the other incidents of this pass (a dead webhook costs one timeout, not one per incident)."""
    result = Delivered()
    all_targets = targets(settings)
    if not all_targets:
        result.untold = _delivered_nowhere(db)
        return result
    broken: dict[str, str] = {}
    for row in owed(db):
        for kind in _kinds(row):
            if not _deliver_one(db, row, kind, all_targets, broken, settings):
                result.owed += 1
                break
            result.sent.append((kind, row["incident_id"]))
    return result


def _delivered_nowhere(db: Db) -> int:
    """With no target, every owed notification is settled (a target added later replays nothing), and counted:
    two statements, not one per incident (an agency's first evaluation opens thousands)."""
    untold = sum(len(_kinds(row)) for row in owed(db))
    now, outcome = datetime.now(UTC), notify.outcome([])
    with db.transaction():
        for stamp, column, owes in (("notified_open_at", "notified_open", OWES_OPEN),
                                    ("notified_resolved_at", "notified_resolve", OWES_RESOLVE)):  # fmt: skip
            db.execute(
                f"update {TABLE} set {stamp} = ?, {column} = ?, notify_error = null, notify_done = null where {owes}",
                [now, outcome],
            )
    return untold


def _kinds(row: dict[str, Any]) -> list[str]:
    kinds = [] if row["notified_open_at"] is not None else ["opened"]
    return kinds + (["resolved"] if row["state"] == RESOLVED and row["notified_resolved_at"] is None else [])


def _deliver_one(
    db: Db, row: dict[str, Any], kind: str, all_targets: list[Target], broken: dict[str, str], settings: AlertSettings
) -> bool:
    """One notification of one incident to every target it has not reached; True once it reached them all."""
    iid = row["incident_id"]
    done = set((row.get("notify_done") or "").split())
    todo = [t for t in all_targets if t.key not in done]
    tried = [t for t in todo if t.key not in broken]
    lines = [f"{t.shown}: sent" for t in all_targets if t.key in done]
    if tried:
        db.execute(
            f"update {TABLE} set notify_attempts = coalesce(notify_attempts, 0) + 1, notify_error = ? "
            "where incident_id = ?",
            [INTERRUPTED, iid],
        )
        title, body = notify.message(kind, row)
        for target in tried:
            line, ok = _send(target, kind, row, title, body, settings)
            lines.append(line)
            if ok:
                done.add(target.key)
                # recorded at once: a later target's failure or a kill never makes this one send again
                db.execute(f"update {TABLE} set notify_done = ? where incident_id = ?", [" ".join(sorted(done)), iid])
            else:
                broken[target.key] = line
    lines += [f"{t.shown}: not tried (it failed for another incident in this run)" for t in todo if t not in tried]
    outcome_column = "notified_open" if kind == "opened" else "notified_resolve"
    outcome = "; ".join(lines) if all_targets else notify.outcome([])
    if all(t.key in done for t in all_targets):
        stamp_column = "notified_open_at" if kind == "opened" else "notified_resolved_at"
        db.execute(
            f"update {TABLE} set {stamp_column} = ?, {outcome_column} = ?, notify_error = null, notify_done = null "
            "where incident_id = ?",
            [datetime.now(UTC), outcome, iid],
        )
        row["notify_done"] = None
        return True
    failed = [line for t, line in broken.items() if t in {x.key for x in todo}]
    db.execute(
        f"update {TABLE} set {outcome_column} = ?, notify_error = ? where incident_id = ?",
        [outcome, "; ".join(failed)[:500], iid],
    )
    return False


def _send(
    target: Target, kind: str, row: dict[str, Any], title: str, body: str, settings: AlertSettings
) -> tuple[str, bool]:
    if target.url is None:
        ok = notify.emit_prefect_event(kind, row)
        return (f"{target.shown}: sent" if ok else f"{target.shown}: failed: Prefect did not take the event"), ok
    delivery = notify.send_one(target.url, title, body, settings)  # retried with back-off inside
    if not delivery.ok:
        log.warning("alerts: notification to %s", delivery.line())
    return delivery.line(), delivery.ok


def status(row: dict[str, Any]) -> str:
    """`outreach alerts`' column: whether the row's latest notification was delivered, and if not, why."""
    resolved = row["state"] == RESOLVED
    stamp = row.get("notified_resolved_at") if resolved else row.get("notified_open_at")
    if stamp is not None and (not resolved or row.get("notified_open_at") is not None):
        outcome = row.get("notified_resolve") if resolved else row.get("notified_open")
        if outcome == notify.outcome([]):  # settled with no target set (`_delivered_nowhere`): nobody was told
            return "notified: no (no targets were set: [alerts] targets; one set later is not sent this)"
        return "notified: yes"
    attempts = int(row.get("notify_attempts") or 0)
    if not attempts:
        return "notified: no (not tried yet)"
    return f"notified: no ({attempts} attempt{'s' if attempts != 1 else ''}: {row.get('notify_error') or '?'})"
