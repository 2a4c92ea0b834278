"""The engagement marts on a warehouse synced from a `small` sandbox, with events from real signed deliveries.

Every mart is checked against pandas over the raw tables (check_marts, check_engagement_marts); the
webhook events are checked against the API (a bounce or a reply seen by events on a day after the
subscription is one the API's recipients show that day); an unknown reply_type from the service (the
sandbox's drift) warns naming it and counts as `unclassified`, until a var maps it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from test_models_engagement import DEFAULT_REPLY_CLASSES, check_engagement_marts
from test_models_engagement_support import delivered_sandbox
from test_models_marts import check_marts

from models.build import build
from pipelines.events.spool import event_id_for

pytestmark = pytest.mark.timeout(600)

DAY = 86_400


def _mart(warehouse: Path, sql: str) -> pd.DataFrame:
    con = duckdb.connect()
    try:
        con.execute(f"attach '{warehouse}' as w (read_only)")
        con.execute("set TimeZone = 'UTC'")
        return con.execute(sql.replace("reporting.", "w.reporting.").replace("outreach.", "w.outreach.")).df()
    finally:
        con.close()


def test_engagement_marts_on_sandbox_with_real_deliveries(make_sandbox: Callable[..., Any], tmp_path: Path) -> None:
    with delivered_sandbox(make_sandbox, tmp_path) as world:
        world.sync("full")
        world.subscribe()
        subscribed_day = world.service_now().date()
        deliveries = world.advance(DAY)
        world.sync("quick")
        deliveries += world.advance(DAY)
        world.sync("full")

        report = build(world.warehouse)
        assert report.passed, report.problem_lines()
        check_marts(world.warehouse)
        rows = check_engagement_marts(world.warehouse)

        lead_deliveries = {event_id_for(d["payload"]) for d in deliveries if d["event"].startswith("lead.")}
        assert rows["lead_timeline"] == len(lead_deliveries) > 100
        kinds = _mart(
            world.warehouse,
            "select event_key, count(*) as n from reporting.lead_timeline group by 1",
        )
        assert set(kinds["event_key"]) == {"lead.opened", "lead.clicked", "lead.replied", "lead.bounced",
                                           "lead.unsubscribed"}  # fmt: skip

        # what the events saw equals what the API's recipients show, for days after the subscription
        daily = _mart(world.warehouse, "select * from reporting.campaign_event_daily")
        later = daily[pd.to_datetime(daily["activity_date"]).dt.date > subscribed_day]
        assert len(later) > 0 and later["events_replied"].sum() > 0 and later["events_bounced"].sum() > 0
        assert (later["events_replied"] == later["api_replied"]).all()
        assert (later["events_bounced"] == later["api_bounced"]).all()
        assert (daily["cumulative_events_unsubscribed"] <= daily["api_total_unsubscribed"]).all()

        perf = _mart(world.warehouse, "select * from reporting.campaign_performance")
        assert perf["auto_reply_count"].sum() > 0 and perf["unclassified_reply_count"].sum() == 0
        assert perf["human_reply_rate"].notna().sum() > 0
        assert not [t for t in report.tests if t.name.startswith("known_reply_type") and t.status != "pass"]

        # the service starts sending reply types the map does not know
        world.sandbox.set_drift(unknown_enums=True)
        world.advance(DAY)
        world.sync("full")
        report = build(world.warehouse)
        assert report.passed, report.problem_lines()
        warned = [t for t in report.tests if t.name.startswith("known_reply_type_stg_replies") and t.status == "warn"]
        assert len(warned) == 1 and "_v2 n_records=" in warned[0].sample, [t.problem_line() for t in warned]
        check_engagement_marts(world.warehouse)
        outcomes = _mart(
            world.warehouse,
            "select reply_type, reply_class, is_positive from reporting.reply_outcomes",
        )
        unknown = outcomes[outcomes["reply_type"].str.endswith("_v2")]
        assert (
            len(unknown) > 0 and (unknown["reply_class"] == "unclassified").all() and not unknown["is_positive"].any()
        )
        perf = _mart(
            world.warehouse,
            "select sum(unclassified_reply_count) as n from reporting.campaign_performance",
        )
        assert int(perf["n"][0]) == int(_mart(
            world.warehouse,
            "select count(*) as n from outreach.replies where reply_type like '%_v2' and deleted_at is null",
        )["n"][0]) > 0  # fmt: skip

        # a var maps them: no warning, nothing unclassified, the same pandas check with the wider map
        extra = {f"{name}_v2": cls for name, cls in DEFAULT_REPLY_CLASSES.items()}
        report = build(world.warehouse, dbt_vars={"extra_reply_classes": extra})
        assert report.passed
        assert not [t for t in report.tests if t.name.startswith("known_reply_type") and t.status != "pass"]
        check_engagement_marts(world.warehouse, classes={**DEFAULT_REPLY_CLASSES, **extra})
        perf = _mart(
            world.warehouse,
            "select sum(unclassified_reply_count) as n from reporting.campaign_performance",
        )
        assert int(perf["n"][0]) == 0
