"""The metric dictionary's promises on a warehouse synced for real from a `small` sandbox.

The service's own figures are read straight from the API (httpx, independent of the pipeline). After a
full sync, and again after a simulated day and a quick sync: campaign_performance's six primary rates
equal the stats endpoint's rates / 100 to 4 decimal places; across every reporting table no rate leaves
[0, 1], no duration is negative, human_reply_rate <= reply_rate, no daily or weekly row lies outside its
grain; the BI file has no TIMESTAMPTZ and every table and column carries a comment (UTC on timestamps);
the A/B test never names a winner with an arm under 100 estimated recipients, and adjusts p upwards.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from test_sync_support import admin_keys, sync_sandbox

from models.build import build
from models.settings import bi_path_for
from models.summary import demo_summary

pytestmark = pytest.mark.timeout(300)

PRIMARY = ("open", "click", "reply", "bounce", "unsubscribe", "progress")


def _service_rates(sandbox: Any, keys: list[str]) -> dict[str, dict[str, float]]:
    """Every campaign's `rates` from GET /campaigns/{id}/stats (percentages)."""
    out: dict[str, dict[str, float]] = {}
    for key in keys:
        with httpx.Client(base_url=sandbox.base_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
            page = 1
            while True:
                body = api.get("/campaigns", params={"per_page": 100, "page": page}).json()
                for campaign in body["data"]:
                    out[campaign["id"]] = api.get(f"/campaigns/{campaign['id']}/stats").json()["data"]["rates"]
                if page >= body["meta"]["last_page"]:
                    break
                page += 1
    return out


def _check_primary_rates(bi: Path, service: dict[str, dict[str, float]]) -> None:
    con = duckdb.connect(str(bi), read_only=True)
    try:
        columns = ", ".join(f"{r}_rate" for r in PRIMARY)
        mart = {
            row[0]: row[1:]
            for row in con.execute(f"select campaign_id, {columns} from reporting.campaign_performance").fetchall()
        }
    finally:
        con.close()
    assert set(mart) == set(service) and len(service) >= 8
    for cid, rates in service.items():
        for name, value in zip(PRIMARY, mart[cid], strict=True):
            assert value is not None, (cid, name)
            # the same double: rounded as the service rounds, so equal to 4 decimal places and beyond
            assert value == rates[name] / 100, (cid, name, value, rates[name])


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[str, str, str | None]]]:
    out: dict[str, list[tuple[str, str, str | None]]] = {}
    for table, column, data_type, comment in con.execute(
        "select table_name, column_name, data_type, comment from duckdb_columns() "
        "where schema_name = 'reporting' order by table_name, column_index"
    ).fetchall():
        out.setdefault(table, []).append((column, data_type, comment))
    return out


def _check_invariants(bi: Path) -> None:
    con = duckdb.connect(str(bi), read_only=True)
    try:
        tables = _tables(con)
        rates_checked = 0
        for table, columns in tables.items():
            for column, _, _ in columns:
                if column.endswith("_rate") or "_rate_" in column or column in ("p_value", "adjusted_p_value"):
                    low, high = con.execute(
                        f'select min("{column}"), max("{column}") from reporting.{table}'
                    ).fetchall()[0]
                    rates_checked += 1
                    assert low is None or (0 <= low and high <= 1), (table, column, low, high)
                if column.startswith("hours_") or column.endswith("_hours_to_reply"):
                    low = con.execute(f'select min("{column}") from reporting.{table}').fetchall()[0][0]
                    assert low is None or low >= 0, (table, column, low)
        assert rates_checked >= 30
        for table in ("campaign_performance", "workspace_overview", "send_time_performance"):
            bad = con.execute(f"select count(*) from reporting.{table} where human_reply_rate > reply_rate").fetchall()
            assert bad[0][0] == 0, table
        # the daily grain: no day before the campaign existed unless something happened; sends null exactly
        # on unobserved days; no all-zero unobserved row; weekly: every week has a send, reply or bounce
        daily = con.execute(
            """
            select count(*) filter (where (d.count_sent is null) = d.is_send_observed),
                count(*) filter (where not d.is_send_observed and d.count_opened + d.count_clicked + d.count_replied
                    + d.count_bounced + d.count_replies_received = 0),
                count(*) filter (where d.activity_date < cast(c.created_at as date) and coalesce(d.count_sent, 0) = 0
                    and d.count_opened + d.count_clicked + d.count_replied + d.count_bounced
                    + d.count_replies_received = 0),
                count(*) filter (where not d.is_send_observed)
            from reporting.campaign_daily d join reporting.campaign_performance c using (campaign_id)
            """
        ).fetchall()[0]
        assert daily[:3] == (0, 0, 0) and daily[3] > 0, daily
        weekly = con.execute(
            "select count(*) from reporting.campaign_weekly where coalesce(count_sent, 0) = 0 and count_replies = 0 "
            "and count_bounced = 0"
        ).fetchall()[0][0]
        assert weekly == 0
        ab = con.execute(
            """
            select count(*) filter (where is_winner and min_arm < 100),
                count(*) filter (where adjusted_p_value < p_value),
                count(*) filter (where test_state = 'no winner yet' and count_variants_in_campaign > 1)
            from (select *, min(coalesce(estimated_recipients, 0)) over (partition by campaign_id) as min_arm
                  from reporting.variant_performance)
            """
        ).fetchall()[0]
        assert ab[:2] == (0, 0) and ab[2] > 0, ab
        # BI-safe: no TIMESTAMPTZ; every table and column commented; timestamps say UTC
        for table, columns in tables.items():
            comment = con.execute(
                "select comment from duckdb_tables() where schema_name = 'reporting' and table_name = ?", [table]
            ).fetchall()[0][0]
            assert comment and comment.strip(), table
            for column, data_type, column_comment in columns:
                assert data_type != "TIMESTAMP WITH TIME ZONE", (table, column)
                assert column_comment and column_comment.strip(), (table, column)
                if data_type.startswith("TIMESTAMP"):
                    assert "UTC" in column_comment, (table, column, column_comment)
    finally:
        con.close()


def _check_demo_summary(bi: Path) -> None:
    """The demo prints the dictionary's rates: over contacted recipients, reply >= human >= positive."""
    con = duckdb.connect(str(bi), read_only=True)
    try:
        contacted, replied, human, positive = con.execute(
            "select sum(count_contacted), sum(count_replied), sum(count_human_replied), sum(count_positive_replies) "
            "from reporting.workspace_overview"
        ).fetchall()[0]
    finally:
        con.close()
    line = next(x for x in demo_summary(bi).splitlines() if x.startswith("Of contacted recipients:"))
    rates = [round(100 * n / contacted, 2) for n in (replied, human, positive)]
    assert rates == sorted(rates, reverse=True)
    assert f"reply rate {rates[0]:.1f}%, human reply rate {rates[1]:.1f}%" in line, line
    assert f"positive {rates[2]:.1f}%" in line, line


def test_primary_rates_equal_the_services_and_invariants_hold(make_sandbox: Callable[..., Any], tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="small", rate_limit=0)
    keys = admin_keys(sandbox, level="read")
    warehouse = tmp_path / "outreach.duckdb"
    bi = bi_path_for(warehouse)

    sync_sandbox(sandbox, keys, warehouse, "full", tmp_path)
    assert build(warehouse).passed
    _check_primary_rates(bi, _service_rates(sandbox, keys))
    _check_invariants(bi)
    _check_demo_summary(bi)

    sandbox.advance(86_400)  # a simulated day of sends, opens, replies
    sync_sandbox(sandbox, keys, warehouse, "quick", tmp_path)
    assert build(warehouse).passed
    _check_primary_rates(bi, _service_rates(sandbox, keys))
    _check_invariants(bi)
