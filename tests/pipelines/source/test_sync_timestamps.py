"""Timestamps by contract, through the sandbox's `POST /_sandbox/malform`: every timestamp of every record sent
as RFC 2822, epoch seconds or milliseconds, with a space or an offset loads the same UTC instants as the
API's own ISO form; a value that is no timestamp is rejected, never a NULL or a variant column; and two
warehouses given one pipelines directory never see each other's schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, query, sandbox_sync_args

from pipelines.source.quarantine import RejectedRecordsError
from pipelines.sync.edge import run_sync

INSTANTS = {
    "replies": ("received_at",),
    "campaign_recipients": ("last_sent_at", "opened_at", "clicked_at", "replied_at", "bounced_at"),
    "campaigns": ("created_at", "scheduled_at"),
    "email_accounts": ("created_at",),
    "workspaces": ("created_at",),
}


def _instants(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for table, columns in INSTANTS.items():
        current = " where _dlt_valid_to is null" if table in ("campaigns", "email_accounts") else ""
        out[table] = query(db, f"select id, {', '.join(columns)} from outreach.{table}{current} order by id")
    return out


def _variant_columns(db: Path) -> list[tuple[Any, ...]]:
    return query(
        db,
        "select table_name, column_name from information_schema.columns "
        "where table_schema = 'outreach' and column_name like '%\\_\\_v\\_%' escape '\\'",
    )


def _full(sb: Any, key: str, db: Path, tmp_path: Path, **kw: Any) -> Any:
    return run_sync(mode="full", **sandbox_sync_args(sb, [key], db, tmp_path, reply_body_cap=100_000, **kw))


def test_every_timestamp_form_loads_the_same_instants_and_garbage_is_rejected(
    make_sandbox: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    clean = tmp_path / "clean" / "outreach.duckdb"
    _full(sb, key, clean, tmp_path / "clean")
    expected = _instants(clean)
    assert len(expected["replies"]) > 0 and all(r[1] is not None for r in expected["replies"])

    for form in ("rfc2822", "epoch_s", "epoch_ms", "space", "offset"):
        sb.set_malform(timestamps=form)
        db = tmp_path / form / "outreach.duckdb"
        report = _full(sb, key, db, tmp_path / form)
        assert report.rejected() == {}, form
        assert _instants(db) == expected, form
        assert _variant_columns(db) == [], form
        if form not in ("space", "offset"):  # both are ISO 8601 already: nothing to coerce
            assert report.drift()["coerced"].get("replies.received_at") == len(expected["replies"]), form
    assert "__v_" not in caplog.text  # no line claims values landed in variant columns

    # a value that is no timestamp: every reply rejected, none loaded with a NULL, none marked deleted
    sb.set_malform(timestamps="garbage", timestamp_fields=["received_at"])
    with pytest.raises(RejectedRecordsError) as info:
        _full(sb, key, clean, tmp_path / "clean")
    assert str(info.value).startswith(f"GET /replies: {len(expected['replies'])} records rejected"), info.value
    assert query(clean, "select count(*) from outreach.replies where received_at is null") == [(0,)]
    assert query(clean, "select count(*) from outreach.replies where deleted_at is not null") == [(0,)]
    assert _variant_columns(clean) == []
    reasons = query(clean, "select distinct endpoint, reason from outreach.rejected_records")
    assert reasons == [("GET /replies", "cannot be typed: received_at as timestamp")]
    assert _instants(clean) == expected


def test_two_warehouses_given_one_pipelines_directory_keep_their_own_schemas(make_sandbox: Any, tmp_path: Path) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    shared = tmp_path / "shared-pipelines"
    sb.set_drift(new_fields=True)  # the first warehouse's campaigns get a `priority` column ...
    first = tmp_path / "a" / "outreach.duckdb"
    run_sync(mode="full", **sandbox_sync_args(sb, [key], first, tmp_path, pipelines_dir=shared))
    assert ("priority",) in query(
        first, "select column_name from information_schema.columns where table_name = 'campaigns'"
    )
    sb.set_drift()  # ... the second warehouse never saw one
    second = tmp_path / "b" / "outreach.duckdb"
    run_sync(mode="full", **sandbox_sync_args(sb, [key], second, tmp_path, pipelines_dir=shared))
    columns = {r[0] for r in query(second, "select column_name from information_schema.columns")}
    assert "priority" not in columns and "lead_score" not in columns
    assert (shared / ".outreach_warehouse").read_text().strip() == f"duckdb:{first.resolve()}"
    assert len(list((shared / "warehouses").iterdir())) == 1  # the second warehouse's own directory
