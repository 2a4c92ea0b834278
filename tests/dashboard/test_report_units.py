"""Unit tests of the dashboard's single functions: rounding, weekdays, the figure store, escaping, small samples."""

from __future__ import annotations

import math
import multiprocessing
import os
import string
from datetime import date

import duckdb
import pandas as pd
import plotly.graph_objects as go
import pytest
from test_report_support import embedded_store

from dashboard.bi_file import iso_weekday
from dashboard.chart_style import Figure, day_ticks, empty, figure, update_axes
from dashboard.charts import kpi_figure, variants_figure
from dashboard.data import Features, ReportData
from dashboard.errors import ReportError
from dashboard.metrics import (
    MIN_SAMPLE,
    daily_series,
    kpi_tiles,
    outcome_classes,
    pct,
    round2,
    variant_rows,
)
from dashboard.page import Scope, _split_layout, figure_store, store_payload
from dashboard.report import CHARTS
from dashboard.workers import Workers
from dashboard.workspace_metrics import mailbox_series, send_time_grid


@pytest.mark.parametrize(("part", "whole"), [(21, 160), (6, 217), (1, 3), (107, 4000), (0, 5)])
def test_pct_rounds_as_the_service(part: int, whole: int) -> None:
    """The page's percentages round as the service's rates (sandbox/views.py) and the models' ratio()."""
    assert pct(part, whole) == round(100.0 * part / whole, 2)
    assert pct(1, 0) is None


@pytest.mark.parametrize("value", [1.005, 2.675, 0.125, 12.345, 99.995, 7.8349999, 0.0, 33.333333, 66.666666])
def test_round2_rounds_like_duckdb(value: float) -> None:
    assert round2(value) == duckdb.connect().execute("select round(?::double, 2)", [value]).fetchall()[0][0]


@pytest.mark.parametrize(
    ("value", "iso"), [(0, 7), (1, 1), (6, 6), (7, 7), ("3", 3), ("Monday", 1), ("sun", 7), ("Sat", 6)]
)
def test_iso_weekday_reads_both_duckdb_numberings_and_names(value: object, iso: int) -> None:
    assert iso_weekday(value) == iso


@pytest.mark.parametrize("value", [8, -1, "someday"])
def test_iso_weekday_refuses_what_is_no_day(value: object) -> None:
    with pytest.raises(ReportError):
        iso_weekday(value)


def test_store_keeps_base_layout_once_and_differences_per_scope() -> None:
    def bars(height: int, title: str) -> Figure:
        return {
            "data": [{"type": "bar", "x": [1, 2], "y": [3, 4]}],
            "layout": {"height": height, "title": {"text": title}},
        }

    kpi = CHARTS[0]
    store = figure_store(
        [kpi],
        [
            Scope("all", "", "", {kpi.key: bars(150, "")}),
            Scope("w:1", "1", "", {kpi.key: bars(150, "")}),
            Scope("c:1", "1", "1", {kpi.key: bars(300, "one")}),
        ],
    )
    base = store["base"][kpi.key]
    assert store["scopes"]["w:1"][kpi.key]["layout"] == {}
    delta = store["scopes"]["c:1"][kpi.key]["layout"]
    assert set(delta) == {"height", "title"}
    assert {**base, **delta} == bars(300, "one")["layout"]  # what the page's script merges is the scope's own layout
    assert _split_layout({"a": 1}, {"a": 1, "b": 2}) == {"b": None}


def test_the_stored_figures_cannot_close_their_script_element_and_unpack_to_what_was_stored() -> None:
    payload = {"name": "</script><script>alert(1)</script> <!-- x", "n": [1, 2.5, None]}
    text = store_payload(payload)
    assert set(text) <= set(string.ascii_letters + string.digits + "+/=")  # base64: no "<" at all
    assert embedded_store(f'<script type="application/gzip" id="report-data">{text}</script>') == payload
    assert store_payload(payload) == text  # the same bytes for the same figures


def test_kpi_without_data_says_so() -> None:
    tiles = pd.DataFrame(
        [("reply_rate", "reply rate", None, "%", "% of delivered")], columns=["key", "label", "value", "suffix", "hint"]
    )
    indicator = kpi_figure(tiles)["data"][0]
    assert "value" not in indicator and "no data yet" in indicator["title"]["text"]


def test_variant_labels_tell_campaigns_of_one_name_apart() -> None:
    variants = pd.DataFrame(
        {
            "workspace_id": ["w1", "w1", "w2", "w2"],
            "campaign_id": ["aaaaaa1", "aaaaaa1", "bbbbbb2", "bbbbbb2"],
            "variant_index": [0, 1, 0, 1],
            "subject": ["s"] * 4,
            "count_variants_in_campaign": [2] * 4,
            "count_sent": [100, 100, 80, 80],
            "count_replied": [5, 9, 4, 4],
            "estimated_recipients": [50, 50, 40, 40],
            "reply_rate": [0.1, 0.18, 0.1, 0.1],
            "reply_rate_ci_low": [0.04, 0.1, 0.04, 0.04],
            "reply_rate_ci_high": [0.2, 0.3, 0.2, 0.2],
            "p_value": [0.2, 0.2, 1.0, 1.0],
            "adjusted_p_value": [0.2, 0.2, 1.0, 1.0],
            "is_winner": [False] * 4,
            "test_state": ["no winner yet"] * 4,
            "recipients_needed": [300, 300, 9000, 9000],
        }
    )
    campaigns = pd.DataFrame({"campaign_id": ["aaaaaa1", "bbbbbb2"], "campaign_name": ["Launch", "Launch"]})
    labels = variants_figure(variant_rows(variants, campaigns))["data"][0]["y"]
    assert labels == ["Launch (aaaaaa) · v0", "Launch (aaaaaa) · v1", "Launch (bbbbbb) · v0", "Launch (bbbbbb) · v1"]


def test_small_samples_are_greyed_with_their_n_and_single_variants_not_drawn() -> None:
    variants = pd.DataFrame(
        {
            "workspace_id": ["w1"] * 3,
            "campaign_id": ["a", "a", "solo"],
            "variant_index": [0, 1, 0],
            "subject": ["s"] * 3,
            "count_variants_in_campaign": [2, 2, 1],
            "count_sent": [30, 90, 500],
            "count_replied": [3, 9, 50],
            "estimated_recipients": [MIN_SAMPLE - 1, 60, 250],
            "reply_rate": [3 / 19, 0.15, 0.2],
            "reply_rate_ci_low": [0.05, 0.08, 0.15],
            "reply_rate_ci_high": [0.38, 0.26, 0.25],
            "p_value": [0.9, 0.9, None],
            "adjusted_p_value": [0.9, 0.9, None],
            "is_winner": [False] * 3,
            "test_state": ["no winner yet", "no winner yet", "single variant"],
            "recipients_needed": [5000, 4960, None],
        }
    )
    campaigns = pd.DataFrame({"campaign_id": ["a", "solo"], "campaign_name": ["A/B", "Solo"]})
    rows = variant_rows(variants, campaigns)
    assert list(rows["campaign_id"]) == ["a", "a"]  # the campaign without variants is not drawn
    bar = variants_figure(rows)["data"][0]
    assert bar["text"] == [f"n={MIN_SAMPLE - 1}", ""]
    assert bar["marker"]["color"][0] != bar["marker"]["color"][1]
    assert bar["x"] == pytest.approx([100 * 3 / 19, 15.0])
    unsent = variants[variants["campaign_id"] == "a"].assign(count_sent=0, count_replied=0)
    assert variant_rows(unsent, campaigns).empty  # an A/B campaign that sent nothing draws no empty rows
    solo = variant_rows(variants[variants["campaign_id"] == "solo"], campaigns.iloc[1:])
    assert solo.empty and "no A/B test here" in variants_figure(solo)["layout"]["annotations"][0]["text"]
    grid = send_time_grid(
        pd.DataFrame(
            {"weekday": [1, 2], "hour": [9, 10], "sends": [5, 40], "replies": [1, 8], "human_reply_rate": [0.2, 0.2]}
        )
    )
    small = grid[grid["is_small"]]
    assert list(zip(small["weekday"], small["hour"], strict=True)) == [(1, 9)]
    assert grid.loc[(grid["weekday"] == 2) & (grid["hour"] == 10), "human_reply_rate"].item() == 20.0


def test_axes_update_as_plotly_updates_them() -> None:
    """``update_axes`` sets a property on the first axis of a letter and every other one the figure names, and
    None leaves it unset: what plotly's ``update_xaxes`` does."""
    days = ["2026-03-01", "2026-03-02"]
    for extra in ({}, {"xaxis": {"title": {"text": "t"}}, "xaxis2": {"anchor": "y2"}}, {"xaxis3": {"anchor": "y3"}}):
        fig = figure(100, **extra)
        reference = go.Figure(layout=fig["layout"])
        update_axes(fig, "x", type="date", **day_ticks(days))
        reference.update_xaxes(type="date", **day_ticks(days))
        assert {k: v for k, v in fig["layout"].items() if "axis" in k} == {
            k: v for k, v in reference.to_plotly_json()["layout"].items() if "axis" in k
        }
    long_span = update_axes(figure(100), "x", **day_ticks(["2026-01-01", "2026-03-01"]))
    assert long_span["layout"]["xaxis"] == {}  # plotly chooses the ticks
    hidden = empty(figure(100, yaxis2={"overlaying": "y"}), "nothing yet")
    assert hidden["layout"]["xaxis"] == {"visible": False}
    assert hidden["layout"]["yaxis"] == {"visible": False}
    assert hidden["layout"]["yaxis2"] == {"overlaying": "y", "visible": False}


def test_workspace_shares_are_runs_of_about_as_many_scopes_with_every_row_once() -> None:
    campaigns_per_workspace = {"w1": 0, "w2": 5, "w3": 1, "w4": 1, "w5": 1, "w6": 10}
    workspaces = pd.DataFrame({"workspace_id": list(campaigns_per_workspace)})
    campaigns = pd.DataFrame(
        {"workspace_id": [w for w, n in campaigns_per_workspace.items() for _ in range(n)], "campaign_id": range(18)}
    )
    frames = {name: campaigns for name in ("daily", "variants", "mailboxes", "mailbox_daily", "outcomes", "send_times")}
    data = ReportData(workspaces=workspaces, campaigns=campaigns, features=Features(), **frames)
    for count, runs in [(1, [["w1", "w2", "w3", "w4", "w5", "w6"]]), (3, [["w1", "w2"], ["w3", "w4", "w5"], ["w6"]])]:
        shares = data.workspace_shares(count)
        assert [list(s.workspaces["workspace_id"]) for s in shares] == runs
        for name in ("campaigns", *frames):
            assert pd.concat([getattr(s, name) for s in shares]).equals(getattr(data, name))
    assert len(data.workspace_shares(50)) == 6  # never more runs than workspaces


def test_missing_values_read_as_the_tables_define_them() -> None:
    """The metrics sum each scope's rows in plain Python: a missing key is left out, a missing count adds
    nothing, an unobserved day's sends stay unknown, and a missing flag is no."""
    day = [date(2026, 3, 1), date(2026, 3, 1), date(2026, 3, 3), None]
    daily = daily_series(
        pd.DataFrame(
            {
                "activity_date": day,
                "count_sent": [5.0, math.nan, math.nan, 9.0],
                "count_replies_received": [1, 2, 3, 4],
                "count_positive_replies_received": [0, 1, 1, 1],
            }
        )
    )
    assert daily["activity_date"].tolist() == [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]
    assert daily["count_sent"].tolist()[0] == 5.0 and all(math.isnan(v) for v in daily["count_sent"].tolist()[1:])
    assert daily["count_replies_received"].tolist() == [3, 0, 3]
    assert daily["count_positive_replies_received"].tolist() == [1, 0, 1]

    outcomes = outcome_classes(
        pd.DataFrame(
            {
                "reply_class": ["neutral", "positive", None, "negative", "positive"],
                "count_replies": [2, 1, 7, 2, 0],
                "is_positive": [False, True, True, False, False],
            }
        )
    )
    assert outcomes.to_dict("list") == {
        "reply_class": ["negative", "neutral", "positive"],  # most replies first, then by name
        "count_replies": [2, 2, 1],
        "is_positive": [False, False, True],
        "pct_of_replies": [40.0, 40.0, 20.0],
    }

    grid = send_time_grid(
        pd.DataFrame(
            {
                "weekday": [1, 1, 1, 2],
                "hour": [9, 9, 9, 10],
                "sends": [30, 10, 5, 3],
                "replies": [3, 1, 0, 1],
                "human_reply_rate": [0.1, 0.4, math.nan, 1 / 3],
            }
        )
    ).set_index(["weekday", "hour"])
    assert len(grid) == 7 * 24 and grid["sends"].sum() == 48
    assert grid.loc[(1, 9)].tolist() == [45, 4, round(100 * (0.1 * 30 + 0.4 * 10) / 45, 2), False]
    assert grid.loc[(2, 10)].tolist() == [3, 1, 33.33, True] and math.isnan(grid.loc[(3, 0), "human_reply_rate"])

    lines = mailbox_series(
        pd.DataFrame(
            {
                "email_account_id": ["b", "a", "a"],
                "mailbox_email": ["b@x.test", "a@x.test", "a@x.test"],
                "activity_date": [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 1)],
                "reputation_score": [90.0, math.nan, 80.0],
                "warmup_health_score": [70.0, 71.0, 72.0],
                "max_utilisation_pct": [10.0, 20.0, 30.0],
            }
        )
    )
    reputation = lines[lines["metric"] == "reputation_score"]
    assert list(zip(reputation["series"], reputation["activity_date"], strict=True)) == [
        ("a@x.test", date(2026, 3, 1)),
        ("b@x.test", date(2026, 3, 1)),
    ]
    assert lines["metric"].tolist() == sorted(lines["metric"]) and len(lines) == 8

    mailboxes = pd.DataFrame(
        {
            "is_active": [True, None, True, True],
            "reputation_score": [85.0, 95.0, math.nan, 85.0],
            "is_warmup_enabled": [None, False, False, True],
            "warmup_health_score": [math.nan, 90.0, 90.0, 60.0],
        }
    )
    campaigns = pd.DataFrame(
        {c: [1] for c in ("count_contacted", "count_replied", "count_positive_replies", "count_bounced")}
    )
    tiles = kpi_tiles(campaigns, mailboxes, Features()).set_index("key")
    assert tiles.loc["mailboxes_healthy", "value"] == 1  # only the first: active, reputable, warmup off


def test_workers_return_results_in_order_raise_errors_as_themselves_and_report_a_dead_one() -> None:
    before = set(multiprocessing.active_children())
    with Workers(abs, [-1, -2, 3, -4, 5], 2) as workers:
        assert list(workers.results()) == [1, 2, 3, 4, 5]
    with Workers(int, ["1", "x", "3"], 2) as workers, pytest.raises(ValueError, match="'x'"):
        list(workers.results())
    with (
        Workers(os._exit, [3], 1) as workers,
        pytest.raises(ReportError, match="exited with code 3 before it finished"),
    ):
        list(workers.results())  # no result ever comes: reported, not waited for
    with Workers(abs, list(range(-100, 0)), 2) as workers:
        next(workers.results())  # left early: the block terminates them
    assert set(multiprocessing.active_children()) == before
