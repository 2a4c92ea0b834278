"""Hundreds of findings in one evaluation, applied set-wise (alerts/store.py `reconcile`): each subject's row goes
where the one-at-a-time rules take it (opened, seen, acknowledged and still seen, resolved, reopened), a rule that
did not run keeps its rows, a subject found twice is one row, and the transitions come in the findings' order, then
the resolved rows'. In DuckDB and in a real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alerts.db import Db, connect
from alerts.finding import Finding
from alerts.store import TABLE, acknowledge, incident_id, reconcile
from pipelines.warehouse.destination import Warehouse

RULE, OTHER = "positive_reply_waiting", "campaign_stalled"
T0 = datetime(2026, 3, 3, tzinfo=UTC)


def _found(first: int, last: int, rule: str = RULE) -> list[Finding]:
    return [
        Finding(rule, f"ws{i % 7}", "reply", f"c{i % 11}:lead{i}@example.com", f"lead{i}@example.com", float(i), 15.0,
                volume=None if i % 2 else float(2 * i), is_estimate=i % 3 == 0, detail=f"waits {i} minutes")
        for i in range(first, last)
    ]  # fmt: skip


def _state(db: Db) -> dict[str, tuple[object, ...]]:
    rows = db.rows(f"select subject_id, state, times_opened, value, volume, is_estimate, detail from {TABLE}")
    return {str(r[0]): tuple(r[1:]) for r in rows}


def test_hundreds_of_findings_open_resolve_and_reopen_as_one_at_a_time_would(empty_warehouse: Warehouse) -> None:
    a, b, other = _found(0, 200), _found(200, 260), _found(300, 330, OTHER)
    with connect(empty_warehouse) as db:
        opened = reconcile(db, [*a, a[5], *other], [RULE, OTHER], T0)
        assert [(t.kind, t.incident["subject_id"]) for t in opened] == [
            ("opened", f.subject_id) for f in [*a, *other]
        ]  # a subject found twice opens once
        first = opened[0].incident
        assert (first["incident_id"], first["state"], first["times_opened"], first["rule"]) == (
            incident_id(RULE, a[0].subject_id), "open", 1, RULE
        )  # fmt: skip
        acked = [f.subject_id for f in a[:10]]
        for subject in acked:
            acknowledge(db, incident_id(RULE, subject))

        # a's last 50 stop being found; b is new; OTHER did not run: its rows stay as they are
        later = reconcile(db, [*a[:150], *b], [RULE], T0 + timedelta(hours=1))
        assert [(t.kind, t.incident["subject_id"]) for t in later] == [
            *(("opened", f.subject_id) for f in b), *(("resolved", f.subject_id) for f in a[150:])
        ]  # fmt: skip
        state = _state(db)
        assert len(state) == 290
        assert all(state[s][0] == "acknowledged" for s in acked)
        assert all(state[f.subject_id][0] == "open" for f in [*a[10:150], *b, *other])
        assert all(state[f.subject_id][0] == "resolved" for f in a[150:])
        resolved_at = db.rows(f"select distinct resolved_at from {TABLE} where state = 'resolved'")
        assert len(resolved_at) == 1

        # found again: a's last 50 reopen (a second time), the others are seen again, nothing else changes
        again = reconcile(db, [*a, *b], [RULE], T0 + timedelta(hours=2))
        assert [(t.kind, t.incident["subject_id"]) for t in again] == [("opened", f.subject_id) for f in a[150:]]
        assert all(t.incident["resolved_at"] is None and t.incident["notified_open_at"] is None for t in again)
        state = _state(db)
        for f in [*a, *b]:
            assert state[f.subject_id][1:] == (2 if f in a[150:] else 1, f.value, f.volume, f.is_estimate, f.detail)
        assert sum(row[0] == "open" for row in state.values()) == 280
        assert db.scalar(f"select count(*) from {TABLE} where rule = ? and last_seen_at > ?", [OTHER, T0]) == 0
