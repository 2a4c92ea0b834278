"""Type drift, unknown enum values and broken paging at the sync, against the sandbox's own drift and
`ignore_page` fault (POST /_sandbox/drift, /_sandbox/faults)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, api_truth, query

from pipelines.core.constants import KNOWN_ENUMS, OPEN_ENUMS
from pipelines.core.errors import PagingError
from pipelines.sync.edge import run_sync


def _sync(sb: Any, tmp: Path, mode: str, key: str) -> Any:
    return run_sync(
        mode=mode,
        api_keys=[key],
        base_url=sb.base_url,
        duckdb_path=tmp / "outreach.duckdb",
        pipelines_dir=tmp / "pipelines",
        spool_dir=tmp / "no-spool",
        progress=False,
        rate_limit_per_minute=0,
        reply_body_cap=100_000,
    )


def _variant_columns(db: Path) -> list[tuple[Any, ...]]:
    return query(
        db,
        "select table_name, column_name from information_schema.columns "
        "where table_schema = 'outreach' and column_name like '%\\_\\_v\\_%' escape '\\'",
    )


def _outside(
    records: Iterable[Mapping[str, Any]],
    table: str,
    field: str,
    enums: Mapping[str, Mapping[str, Any]],
    column: str | None = None,
) -> Counter[str]:
    """Counter of "table.column=value" for values of `field` outside the set `enums` gives the column."""
    column = column or field
    allowed = enums[table][column]
    return Counter(
        f"{table}.{column}={r[field]}" for r in records if r.get(field) is not None and r[field] not in allowed
    )


def _numbers(db: Path) -> dict[str, Any]:
    return {
        "current_step": query(db, "select sum(current_step) from outreach.campaign_recipients")[0][0],
        "stats_sent": query(db, "select sum(stats__sent) from outreach.campaigns where _dlt_valid_to is null")[0][0],
        "totals_sent": query(db, "select sum(totals__sent) from outreach.campaign_stats")[0][0],
        "daily_send_limit": query(
            db, "select sum(daily_send_limit) from outreach.email_accounts where _dlt_valid_to is null"
        )[0][0],
    }


def test_numbers_sent_as_text_from_the_first_sync_are_coerced_and_enum_drift_is_counted(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = admin_keys(sb)[0]
    clean = tmp_path / "clean"
    _sync(sb, clean, "full", key)
    expected = _numbers(clean / "outreach.duckdb")

    sb.set_drift(string_numbers=True, unknown_enums=True, new_fields=True)
    drifted = tmp_path / "drifted"
    report = _sync(sb, drifted, "full", key)  # a first sync that only ever saw numbers as text
    db = drifted / "outreach.duckdb"
    assert _numbers(db) == expected
    assert _variant_columns(db) == []
    types = dict(
        query(
            db,
            "select column_name, data_type from information_schema.columns "
            "where table_name = 'campaign_stats' and column_name like 'totals__%'",
        )
    )
    assert types and set(types.values()) == {"BIGINT"}

    ws = report.workspaces[0]
    assert ws.uncoerced == {}
    assert ws.coerced["campaign_recipients.current_step"] > 0 and ws.coerced["campaign_stats.totals__sent"] > 0
    assert ws.coerced["email_accounts.daily_send_limit"] > 0 and ws.coerced["campaigns.stats__sent"] > 0
    truth = api_truth(sb.base_url, key, with_bodies=False)  # the drifted API, paged independently
    assert ws.unknown_values == _outside(
        truth["recipients"].values(), "campaign_recipients", "status", KNOWN_ENUMS
    ) | _outside(truth["campaigns"].values(), "campaigns", "status", KNOWN_ENUMS) | _outside(
        [s["campaign"] for s in truth["stats"].values()],
        "campaign_stats",
        "status",
        KNOWN_ENUMS,
        column="campaign_status",
    )
    assert any(k.startswith("campaign_recipients.status=") for k in ws.unknown_values)
    assert ws.new_values == _outside(truth["replies"].values(), "replies", "reply_type", OPEN_ENUMS) | _outside(
        truth["mailboxes"].values(), "email_accounts", "provider", OPEN_ENUMS
    ) | _outside(truth["campaigns"].values(), "campaigns", "campaign_type", OPEN_ENUMS) | _outside(
        truth["campaigns"].values(), "campaigns", "schedule_type", OPEN_ENUMS
    )
    assert any(k.startswith("replies.reply_type=") and k.endswith("_v2") for k in ws.new_values)
    summary = report.summary()
    assert "WARNING enum values the API spec does not name" in summary and "campaign_recipients.status=" in summary
    assert "new values seen" in summary and "coerced without loss" in summary
    assert "WARNING type drift" not in summary

    # the same API, drift on, into the warehouse synced before: the stored types win, still no variant
    again = _sync(sb, clean, "full", key)
    assert _variant_columns(clean / "outreach.duckdb") == [] and again.workspaces[0].uncoerced == {}
    assert _numbers(clean / "outreach.duckdb") == expected


def test_an_api_that_ignores_page_fails_naming_the_endpoint_and_loads_nothing(
    make_sandbox: Any, tmp_path: Path
) -> None:
    sb = make_sandbox(scale="small", rate_limit=0)
    key = admin_keys(sb)[0]
    _sync(sb, tmp_path, "full", key)
    db = tmp_path / "outreach.duckdb"
    # loads of data (a load holding only the failed run's record, outreach.sync_runs, is not data)
    snapshot = (
        "select (select count(*) from outreach._dlt_loads where load_id not in "
        "(select _dlt_load_id from outreach.sync_runs where outcome = 'failed')), "
        "count(*), sum(hash(id, status, current_step)) from outreach.campaign_recipients"
    )
    before = query(db, snapshot)
    sb.advance(3600)
    sb.set_faults(ignore_page=True)
    with pytest.raises(PagingError) as info:
        _sync(sb, tmp_path, "full", key)
    message = str(info.value)
    assert "\n" not in message and "but the API answered page 1 (meta.current_page)" in message
    assert message.startswith(("GET /campaigns/", "GET /replies"))
    assert query(db, snapshot) == before
    failed = query(db, "select outcome, error from outreach.sync_runs where outcome = 'failed'")
    assert len(failed) == 1 and failed[0][1] == message, "the failed run is recorded with its one-line reason"
