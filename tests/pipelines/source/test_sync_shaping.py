"""Row shaping and schema drift (pure functions): new fields, odd enum values, bad types, bad records."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pyarrow as pa
import pytest

from pipelines.source.recipients_arrow import recipients_table
from pipelines.source.shaping import campaign_fingerprint, stats_rows, workspace_row

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def test_recipients_drift_lands_and_bad_records_are_rejected(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    rows = [
        (
            "c1",
            0,
            {"id": "r1", "email": "a@x", "status": "sent", "current_step": 2, "opened_at": "2026-01-01T10:00:00Z"},
        ),
        ("c1", 1, {"id": "r2", "email": "b@x", "status": "snoozed", "current_step": "two", "lead_score": 7}),
        ("c1", 2, {"email": "no-id@x"}),
        ("c2", 0, {"id": "r3", "status": "pending", "opened_at": "not a date", "tags": ["a", "b"]}),
    ]
    rows.append(("c2", 1, {"id": "r4", "status": "snoozed", "current_step": "3", "lead_score": 7, "tags": ["a"]}))
    rejected: list[tuple[int | None, str, object]] = []
    table = recipients_table(rows, "ws1", NOW, lambda pos, reason, raw: rejected.append((pos, reason, raw)))
    assert table.column("id").to_pylist() == ["r1", "r4"]  # "two", no id and "not a date" are rejected ...
    assert [(pos, reason) for pos, reason, _ in rejected] == [
        (1, "cannot be typed: current_step as int64"),
        (2, "no id (primary key)"),
        (0, "cannot be typed: opened_at as timestamp[us, tz=UTC]"),
    ]
    assert rejected[1][2] == {"email": "no-id@x"}  # ... with the record as the API sent it
    assert not [name for name in table.column_names if "__v_" in name]  # never a variant column
    assert table.column("campaign_id").to_pylist() == ["c1", "c2"]
    assert table.column("list_position").to_pylist() == [0, 1]
    assert table.column("workspace_id").to_pylist() == ["ws1"] * 2
    assert table.column("current_step").to_pylist() == [2, 3]
    assert table.column("status").to_pylist() == ["sent", "snoozed"]  # odd enum lands as is
    assert table.schema.field("opened_at").type == pa.timestamp("us", tz="UTC")
    assert table.column("opened_at").to_pylist()[0] == datetime(2026, 1, 1, 10, tzinfo=UTC)
    assert table.column("lead_score").to_pylist() == [None, 7]  # new field -> new column
    assert table.column("tags").to_pylist() == [None, '["a"]']
    text = caplog.text
    assert "unknown value 'snoozed'" in text and "no-id@x" not in text  # a record's content is never logged


def test_stats_split_into_three_tables() -> None:
    stats = {
        "campaign": {"id": "c1", "name": "N", "status": "active"},
        "totals": {"sent": 10},
        "rates": {"reply": 1.5},
        "variants": [
            {"index": 0, "subject": "s", "sent": 6, "replied": 1, "reply_rate": 16.7},
            {"subject": "no index"},
        ],
        "daily": [{"date": "2026-01-01", "sent": 4}],
    }
    head, variants, daily = stats_rows(stats, "c1", "ws1", NOW)
    assert head["campaign_id"] == "c1" and head["campaign_status"] == "active" and head["totals"] == {"sent": 10}
    # a variant without its index is kept for the caller to reject (WorkspacePlan.admit), never dropped here
    assert [v.get("index") for v in variants] == [0, None] and variants[0]["workspace_id"] == "ws1"
    assert daily == [{"date": "2026-01-01", "sent": 4, "campaign_id": "c1", "workspace_id": "ws1", "synced_at": NOW}]


def test_fingerprint_tracks_status_and_totals_only() -> None:
    base = {"id": "c1", "name": "A", "status": "active", "stats": {"sent": 1, "total_leads": 5}}
    assert campaign_fingerprint(base) == campaign_fingerprint({**base, "name": "renamed"})
    assert campaign_fingerprint(base) != campaign_fingerprint({**base, "status": "paused"})
    assert campaign_fingerprint(base) != campaign_fingerprint({**base, "stats": {"sent": 2, "total_leads": 5}})


def test_workspace_row_flattens_account() -> None:
    row = workspace_row({"workspace": {"id": "w", "name": "N"}, "plan": "pro", "credits": {"balance": 3}}, NOW)
    assert row["id"] == row["workspace_id"] == "w" and row["plan"] == "pro" and row["credits"] == {"balance": 3}


# -- type drift and enum values (DriftGuard) -----------------------------------------------------------------
def test_recipients_coerce_numbers_sent_as_text_without_loss() -> None:
    from pipelines.source.drift import DriftGuard
    from pipelines.source.typing_rules import DRIFT_METADATA

    rows = [
        ("c1", 0, {"id": "r1", "status": "sent", "current_step": "3", "first_name": 7}),
        ("c1", 1, {"id": "r2", "status": "hard_bounced", "current_step": 2.0}),
        ("c1", 2, {"id": "r3", "status": "active", "current_step": "2.5"}),
    ]
    rejected: list[str] = []
    table = recipients_table(rows, "ws1", NOW, lambda pos, reason, raw: rejected.append(reason))
    assert table.column("current_step").to_pylist() == [3, 2]
    assert rejected == ["cannot be typed: current_step as int64"]  # 2.5 steps would lose the .5
    assert table.column("first_name").to_pylist() == ["7", None]
    guard = DriftGuard({})
    out = guard.arrow("campaign_recipients", table)
    assert DRIFT_METADATA not in (out.schema.metadata or {})
    assert guard.counts.coerced == {"campaign_recipients.current_step": 2, "campaign_recipients.first_name": 1}
    assert guard.counts.unknown_values == {"campaign_recipients.status=hard_bounced": 1}


def test_json_rows_are_coerced_by_known_column_types_and_drift_is_counted() -> None:
    from pipelines.source.drift import DriftGuard

    guard = DriftGuard(
        {
            "email_accounts": {
                "daily_send_limit": "bigint",
                "reputation_score": "double",
                "is_active": "bool",
                "warmup__health_score": "double",
                "display_name": "text",
            },
            "campaigns": {"stats__sent": "bigint", "subject_lines": "json"},
        }
    )
    mailbox = {
        "id": "m1",
        "daily_send_limit": "42",
        "reputation_score": "97.5",
        "is_active": "true",
        "warmup": {"health_score": "n/a"},
        "display_name": 12,
        "provider": "yahoo",
    }
    assert guard.check("email_accounts", mailbox) == "cannot be typed: warmup__health_score as double"
    assert mailbox["daily_send_limit"] == 42 and mailbox["reputation_score"] == 97.5 and mailbox["is_active"] is True
    assert mailbox["display_name"] == "12" and mailbox["warmup"]["health_score"] == "n/a"
    campaign = {
        "id": "c1",
        "status": "archived",
        "stats": {"sent": "1e3"},
        "subject_lines": ["a"],
        "campaign_type": "x",
    }
    assert guard.check("campaigns", campaign) == "cannot be typed: stats__sent as bigint"
    assert campaign["stats"]["sent"] == "1e3"
    reply = {"id": "r1", "reply_type": "meeting_booked"}
    assert guard.check("replies", reply) is None
    assert guard.check("replies", {"id": "r2", "reply_type": "interested"}) is None
    assert guard.counts.coerced == {
        "email_accounts.daily_send_limit": 1,
        "email_accounts.reputation_score": 1,
        "email_accounts.is_active": 1,
        "email_accounts.display_name": 1,
    }
    assert guard.counts.uncoerced == {"email_accounts.warmup__health_score": 1, "campaigns.stats__sent": 1}
    assert guard.counts.unknown_values == {"campaigns.status=archived": 1}
    assert guard.counts.new_values == {
        "email_accounts.provider=yahoo": 1,
        "campaigns.campaign_type=x": 1,
        "replies.reply_type=meeting_booked": 1,
    }


def test_drift_reaches_the_summary() -> None:
    from pipelines.core.report import SyncReport, WorkspaceReport
    from pipelines.source.drift import DriftGuard

    guard = DriftGuard({"email_accounts": {"daily_send_limit": "bigint"}})
    guard.check("email_accounts", {"id": "m1", "daily_send_limit": "many"})
    guard.check("email_accounts", {"id": "m2", "daily_send_limit": "7"})
    ws = WorkspaceReport(workspace_id="w", workspace_name="W", pipeline_name="p", mode="quick")
    guard.fill(ws)
    summary = SyncReport(mode="quick", workspaces=[ws]).summary()
    lines = [line for line in summary.splitlines() if "email_accounts.daily_send_limit" in line]
    assert lines[0].startswith("WARNING type drift") and "email_accounts.daily_send_limit (1)" in lines[0]
    assert lines[1].startswith("coerced without loss") and "email_accounts.daily_send_limit (1)" in lines[1]


# -- timestamps: one parser (pipelines.core.timestamps) --------------------------------------------------------------
INSTANT = datetime(2026, 11, 20, 14, 3, tzinfo=UTC)


@pytest.mark.parametrize(
    "value",
    [
        "2026-11-20T14:03:00Z",
        "2026-11-20T14:03:00.000+00:00",
        "2026-11-20T15:03:00+01:00",
        "2026-11-20T09:03:00-05:00",
        "2026-11-20 14:03:00",
        "2026-11-20 14:03:00+00:00",
        "Fri, 20 Nov 2026 14:03:00 GMT",
        "Fri, 20 Nov 2026 15:03:00 +0100",
        "20 Nov 2026 14:03:00 -0000",
        1795183380,
        1795183380.0,
        "1795183380",
        1795183380000,
        "1795183380000",
        INSTANT.replace(tzinfo=None),
    ],
)
def test_every_accepted_form_is_the_same_utc_instant(value: object) -> None:
    from pipelines.core.timestamps import parse_instant

    parsed = parse_instant(value)
    assert parsed == INSTANT and parsed.utcoffset() is not None and parsed.utcoffset().total_seconds() == 0


@pytest.mark.parametrize(
    "value", ["not a date", "2026-13-40T00:00:00Z", "Fri, 40 Nov 2026 99:00:00 GMT", True, [], "1e400"]
)
def test_a_value_that_is_no_timestamp_is_refused(value: object) -> None:
    from pipelines.core.timestamps import TimestampError, parse_instant

    with pytest.raises(TimestampError):
        parse_instant(value)


def test_timestamps_of_json_rows_are_typed_or_the_row_is_refused() -> None:
    from pipelines.source.drift import DriftGuard

    guard = DriftGuard.default()
    good = {"id": "r1", "received_at": "Fri, 20 Nov 2026 14:03:00 GMT", "snoozed_until_at": 1795183380}
    assert guard.check("replies", good) is None
    assert good["received_at"] == INSTANT and good["snoozed_until_at"] == INSTANT  # any *_at column too
    assert guard.counts.coerced == {"replies.received_at": 1, "replies.snoozed_until_at": 1}
    assert guard.check("replies", {"id": "r2", "received_at": "yesterday"}) == (
        "cannot be typed: received_at as timestamp"
    )
    assert guard.counts.uncoerced == {"replies.received_at": 1}
