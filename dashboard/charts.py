"""One function per campaign-grain chart: a tidy frame from :mod:`dashboard.metrics` in, a figure out (plotly's
JSON form, ``chart_style.Figure``; the workspace-grain ones are in :mod:`dashboard.workspace_charts`, the shared look
in :mod:`dashboard.chart_style`).

Figures carry their data and layout only; the page adds the shared template once. Every
figure gets the same layout keys (title, annotations, height), so a scope's figure can be
stored as the difference from the first scope's.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dashboard.chart_style import (
    AMBER,
    BLUE,
    CLASS_COLOURS,
    DARK,
    GOLD,
    GREEN,
    GREY,
    Figure,
    day_ticks,
    empty,
    figure,
    update_axes,
)


def kpi_figure(tiles: pd.DataFrame) -> Figure:
    """The overview's KPI tiles, one number each."""
    fig = figure(
        150,
        grid={"rows": 1, "columns": len(tiles), "pattern": "independent"},
        showlegend=False,
        margin={"l": 10, "r": 10, "t": 40, "b": 10},
    )
    for column, tile in enumerate(tiles.itertuples(index=False)):
        is_pct = tile.suffix == "%"
        raw = tile.value  # a Python int or float (itertuples unboxes); None or NaN when there is no data yet
        value = float(raw) if isinstance(raw, int | float) and not math.isnan(raw) else None
        missing = value is None
        fig["data"].append(
            {
                "type": "indicator",
                "mode": "number",
                **({} if missing else {"value": value}),  # no value: the tile shows its note, not a number
                "number": {"valueformat": ".2f" if is_pct else ",d", "suffix": tile.suffix, "font": {"size": 34}},
                "title": {
                    "text": f"{tile.label}<br><span style='font-size:11px;color:#5b6673'>"
                    f"{'no data yet' if missing else str(tile.hint)}</span>",
                    "font": {"size": 14},
                },
                "domain": {"row": 0, "column": column},
                "name": str(tile.key),
            }
        )
    return fig


def funnel_figure(stages: pd.DataFrame) -> Figure:
    """Recipients contacted, replied, replied as a person and positive: each stage a subset of the one before."""
    fig = figure(320, showlegend=False, margin={"l": 130, "r": 30, "t": 16, "b": 20})
    if int(stages["count_recipients"].iloc[0]) == 0:
        return empty(fig, "nobody contacted yet")
    fig["data"].append(
        {
            "type": "funnel",
            "y": list(stages["stage"]),
            "x": stages["count_recipients"].tolist(),
            "texttemplate": "%{value:,d}<br>%{percentInitial:.1%}",
            "marker": {"color": [BLUE, "#5a8bd0", "#7ea6de", GREEN][: len(stages) - 1] + ["#1f7a50"]},
            "name": "recipients",
        }
    )
    return fig


def daily_figure(series: pd.DataFrame) -> Figure:
    """Messages sent (bars) and replies received (lines) per day, over the whole kept history."""
    fig = figure(
        340,
        xaxis={"type": "date", "title": {"text": "UTC day"}},
        yaxis={"title": {"text": "messages sent"}, "rangemode": "tozero"},
        yaxis2={
            "title": {"text": "replies received"},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
        legend={"orientation": "h", "y": 1.12, "x": 0},
        bargap=0.1,
    )
    if series.empty:
        return empty(fig, "no sends or replies yet")
    days = [str(day) for day in series["activity_date"]]
    # an unobserved day is NaN: plotly leaves its bar out (a gap), never a 0
    sent = [None if pd.isna(v) else float(v) for v in series["count_sent"]]
    fig["data"] += [
        {"type": "bar", "x": days, "y": sent, "name": "sent", "marker": {"color": "#b7cbe8"}},
        *(
            {
                "type": "scatter",
                "x": days,
                "y": series[column].tolist(),
                "name": name,
                "yaxis": "y2",
                "mode": "lines",
                "line": {"color": colour, "width": 2},
            }
            for column, name, colour in (
                ("count_replies_received", "replies", BLUE),
                ("count_positive_replies_received", "positive replies", GREEN),
            )
        ),
    ]
    return update_axes(fig, "x", **day_ticks(days))


def _variant_labels(rows: pd.DataFrame) -> list[str]:
    """``<campaign> · v<index>``; a name that two campaigns share (in two workspaces) gets the id's start."""
    ids_by_name: dict[str, set[str]] = {}
    for name, cid in zip(rows["campaign_name"], rows["campaign_id"], strict=True):
        ids_by_name.setdefault(name, set()).add(cid)
    return [
        f"{name} ({str(cid)[:6]}) · v{index}" if len(ids_by_name[name]) > 1 else f"{name} · v{index}"
        for name, cid, index in zip(rows["campaign_name"], rows["campaign_id"], rows["variant_index"], strict=True)
    ]


def variants_figure(rows: pd.DataFrame) -> Figure:
    """Each variant's reply rate (per estimated recipient) with its 95% interval; the winner in gold, a variant
    under the minimum sample greyed with its n."""
    ab = int(rows.attrs.get("ab_campaigns", 0))
    shown = int(rows["campaign_id"].nunique()) if len(rows) else 0
    several = shown > 1 or (shown == 1 and ab > 1)
    note = (
        f"{shown} of {ab} A/B campaigns (most messages sent first); pick a campaign to see its own" if several else ""
    )
    fig = figure(
        max(180, 90 + 26 * len(rows)),
        note,
        showlegend=False,
        xaxis={"title": {"text": "reply rate, % of recipients (bars: 95% interval)"}, "rangemode": "tozero"},
        yaxis={"autorange": "reversed", "automargin": True},
        margin={"l": 10, "r": 30, "t": 40 if note else 16, "b": 40},
    )
    if rows.empty:
        return empty(fig, "no A/B test here (one subject line per campaign)")
    # numpy arrays, not pandas: this runs for each of an agency's thousands of scopes (np.round as pandas rounds)
    rate, low, high = (rows[c].to_numpy(dtype="float64", na_value=math.nan) for c in ("rate_pct", "ci_low", "ci_high"))
    rate, low, high = (np.where(np.isnan(v), 0.0, v) for v in (rate, low, high))
    estimated = rows["estimated_recipients"].to_numpy(dtype="float64", na_value=math.nan)
    adjusted = np.round(rows["adjusted_p_value"].to_numpy(dtype="float64", na_value=math.nan), 4)
    winner, small = rows["is_winner"].astype(bool).tolist(), rows["is_small"].astype(bool).tolist()
    n = [None if math.isnan(v) else int(v) for v in estimated]
    customdata = list(
        zip(
            rows["subject"].tolist(),
            ["n/a" if v is None else v for v in n],
            rows["count_replied"].tolist(),
            np.round(low, 2).tolist(),
            np.round(high, 2).tolist(),
            ["n/a" if math.isnan(p) else p for p in adjusted.tolist()],
            rows["test_state"].tolist(),
            strict=True,
        )
    )
    fig["data"].append(
        {
            "type": "bar",
            "orientation": "h",
            "y": _variant_labels(rows),
            "x": rate.tolist(),
            "error_x": {
                "type": "data",
                "array": np.clip(high - rate, 0, None).tolist(),
                "arrayminus": np.clip(rate - low, 0, None).tolist(),
                "color": DARK,
                "thickness": 1.2,
            },
            "marker": {"color": [GOLD if w else GREY if s else BLUE for w, s in zip(winner, small, strict=True)]},
            "text": ["★ winner" if w else f"n={v or 0}" if s else "" for w, s, v in zip(winner, small, n, strict=True)],
            "textposition": "inside",
            "customdata": customdata,
            "hovertemplate": "%{customdata[0]}<br>about %{customdata[1]} recipients, replied %{customdata[2]}<br>"
            "reply rate %{x:.2f}% (95%: %{customdata[3]} to %{customdata[4]})<br>"
            "adjusted p vs the leader %{customdata[5]} · %{customdata[6]}<extra></extra>",
            "name": "variants",
        }
    )
    return fig


def outcomes_figure(classes: pd.DataFrame, by_class: bool) -> Figure:
    """Reply messages per class (or per reply_type, green when it counts as positive)."""
    fig = figure(
        320,
        showlegend=False,
        yaxis={"title": {"text": "reply messages"}, "rangemode": "tozero"},
        xaxis={"type": "category"},
    )
    if classes.empty:
        return empty(fig, "no replies yet")
    if by_class:
        colours = [CLASS_COLOURS.get(str(c), AMBER) for c in classes["reply_class"]]
    else:
        colours = [GREEN if p else GREY for p in classes["is_positive"]]
    fig["data"].append(
        {
            "type": "bar",
            "x": [str(c) for c in classes["reply_class"]],
            "y": classes["count_replies"].tolist(),
            "marker": {"color": colours},
            "text": [f"{p:.2f}%" if p is not None else "" for p in classes["pct_of_replies"]],
            "textposition": "outside",
            "cliponaxis": False,
            "name": "replies",
        }
    )
    return fig
