"""Row shaping and schema drift (pure functions): new fields, odd enum values, bad types, bad records."""

from __future__ import annotations

import logging
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from pipelines.shaping import campaign_fingerprint, recipients_table, stats_rows, workspace_row

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_recipients_drift_lands_without_breaking(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    rows = [
        ("c1", 0, {"id": "r1", "email": "a@x", "status": "sent", "current_step": 2, "opened_at": "2026-01-01T10:00:00Z"}),
        ("c1", 1, {"id": "r2", "email": "b@x", "status": "snoozed", "current_step": "two", "lead_score": 7}),
        ("c1", 2, {"email": "no-id@x"}),
        ("c2", 0, {"id": "r3", "status": "pending", "opened_at": "not a date", "tags": ["a", "b"]}),
    ]
    table = recipients_table(rows, "ws1", NOW)
    assert table.column("id").to_pylist() == ["r1", "r2", "r3"]
    assert table.column("campaign_id").to_pylist() == ["c1", "c1", "c2"]
    assert table.column("list_position").to_pylist() == [0, 1, 0]
    assert table.column("workspace_id").to_pylist() == ["ws1"] * 3
    assert table.column("current_step").to_pylist() == [2, None, None]  # "two" does not fit bigint
    assert table.column("status").to_pylist() == ["sent", "snoozed", "pending"]  # odd enum lands as is
    assert table.schema.field("opened_at").type == pa.timestamp("us", tz="UTC")
    assert table.column("opened_at").to_pylist()[0] == datetime(2026, 1, 1, 10, tzinfo=timezone.utc)
    assert table.column("lead_score").to_pylist() == [None, 7, None]  # new field -> new column
    assert table.column("tags").to_pylist() == [None, None, '["a", "b"]']
    text = caplog.text
    assert "unknown value 'snoozed'" in text and "without id" in text and "did not fit" in text


def test_stats_split_into_three_tables() -> None:
    stats = {
        "campaign": {"id": "c1", "name": "N", "status": "active"},
        "totals": {"sent": 10},
        "rates": {"reply": 1.5},
        "variants": [{"index": 0, "subject": "s", "sent": 6, "replied": 1, "reply_rate": 16.7}, {"subject": "no index"}],
        "daily": [{"date": "2026-01-01", "sent": 4}, {"sent": 1}],
    }
    head, variants, daily = stats_rows(stats, "c1", "ws1", NOW)
    assert head["campaign_id"] == "c1" and head["campaign_status"] == "active" and head["totals"] == {"sent": 10}
    assert [v["index"] for v in variants] == [0] and variants[0]["workspace_id"] == "ws1"
    assert daily == [{"date": "2026-01-01", "sent": 4, "campaign_id": "c1", "workspace_id": "ws1", "synced_at": NOW}]


def test_fingerprint_tracks_status_and_totals_only() -> None:
    base = {"id": "c1", "name": "A", "status": "active", "stats": {"sent": 1, "total_leads": 5}}
    assert campaign_fingerprint(base) == campaign_fingerprint({**base, "name": "renamed"})
    assert campaign_fingerprint(base) != campaign_fingerprint({**base, "status": "paused"})
    assert campaign_fingerprint(base) != campaign_fingerprint({**base, "stats": {"sent": 2, "total_leads": 5}})


def test_workspace_row_flattens_account() -> None:
    row = workspace_row({"workspace": {"id": "w", "name": "N"}, "plan": "pro", "credits": {"balance": 3}}, NOW)
    assert row["id"] == row["workspace_id"] == "w" and row["plan"] == "pro" and row["credits"] == {"balance": 3}
