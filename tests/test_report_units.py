"""Unit tests of the dashboard's single functions: intervals, rounding, weekdays, the figure store, escaping."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import plotly.graph_objects as go
import pytest
from scipy.stats import binomtest

from dashboard.charts import kpi_figure, variants_figure
from dashboard.data import iso_weekday
from dashboard.errors import ReportError
from dashboard.metrics import round2, variant_rows, wilson_interval
from dashboard.page import Scope, _script_json, _split_layout, figure_store
from dashboard.report import CHARTS


@pytest.mark.parametrize(("replied", "sent"), [(0, 10), (3, 10), (10, 10), (17, 250), (1, 1), (480, 1000)])
def test_wilson_interval_equals_scipy(replied: int, sent: int) -> None:
    low, high = wilson_interval(replied, sent)
    expected = binomtest(replied, sent).proportion_ci(confidence_level=0.95, method="wilson")
    assert (low, high) == pytest.approx((100 * expected.low, 100 * expected.high), abs=1e-6)


def test_wilson_interval_without_sends_is_none() -> None:
    assert wilson_interval(0, 0) == (None, None)


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
    def figure(height: int, title: str) -> go.Figure:
        return go.Figure(go.Bar(x=[1, 2], y=[3, 4]), layout={"height": height, "title": {"text": title}})

    kpi = CHARTS[0]
    store = figure_store(
        [kpi],
        [
            Scope("all", "", "", {kpi.key: figure(150, "")}),
            Scope("w:1", "1", "", {kpi.key: figure(150, "")}),
            Scope("c:1", "1", "1", {kpi.key: figure(300, "one")}),
        ],
    )
    base = store["base"][kpi.key]
    assert store["scopes"]["w:1"][kpi.key]["layout"] == {}
    delta = store["scopes"]["c:1"][kpi.key]["layout"]
    assert set(delta) == {"height", "title"}
    expected = {k: v for k, v in figure(300, "one").to_plotly_json()["layout"].items() if k != "template"}
    assert {**base, **delta} == expected  # what the page's script merges is the scope's own layout
    assert _split_layout({"a": 1}, {"a": 1, "b": 2}) == {"b": None}


def test_embedded_json_cannot_close_its_script_element() -> None:
    payload = {"name": "</script><script>alert(1)</script> <!-- x"}
    text = _script_json(payload)
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == payload


def test_kpi_without_data_says_so() -> None:
    tiles = pd.DataFrame(
        [("reply_rate", "reply rate", None, "%", "% of delivered")], columns=["key", "label", "value", "suffix", "hint"]
    )
    indicator = kpi_figure(tiles).data[0]
    assert indicator.value is None and "no data yet" in indicator.title.text


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
            "reply_rate": [5.0, 9.0, 5.0, 5.0],
            "p_value": [0.2, 0.2, 1.0, 1.0],
            "is_winner": [False] * 4,
        }
    )
    campaigns = pd.DataFrame({"campaign_id": ["aaaaaa1", "bbbbbb2"], "campaign_name": ["Launch", "Launch"]})
    labels = list(variants_figure(variant_rows(variants, campaigns)).data[0].y)
    assert labels == ["Launch (aaaaaa) · v0", "Launch (aaaaaa) · v1", "Launch (bbbbbb) · v0", "Launch (bbbbbb) · v1"]
