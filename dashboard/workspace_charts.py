"""The workspace-grain charts: mailbox health over days, and replies by send weekday and hour."""

from __future__ import annotations

import copy
import functools
from typing import Any

import pandas as pd
from plotly.colors import get_colorscale
from plotly.subplots import make_subplots

from dashboard.chart_style import AMBER, BLUE, DARK, GOLD, GREEN, RED, Figure, day_ticks, empty, figure, update_axes
from dashboard.metrics import MIN_SAMPLE, WEEKDAYS

#: plotly's "Blues" as plotly.py defines it (plotly.js has another scale of that name)
_BLUES = get_colorscale("Blues")

_MAILBOX_METRICS = (
    ("reputation_score", "reputation"),
    ("warmup_health_score", "warmup health"),
    ("max_utilisation_pct", "utilisation %"),
)


@functools.cache
def _mailbox_grid() -> dict[str, Any]:
    """The rows' axes and subplot titles as plotly lays out three subplots (each figure takes a copy);
    the traces of row r go on axes x<r> and y<r>. Laid out once: plotly takes tens of ms per layout, paid for every
    workspace."""
    grid: dict[str, Any] = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.07,
        subplot_titles=[title for _, title in _MAILBOX_METRICS],
    ).to_plotly_json()["layout"]
    grid.pop("template", None)
    return grid


def mailbox_figure(series: pd.DataFrame) -> Figure:
    """Reputation, warmup health and utilisation per day, one row each (mean and range for many mailboxes)."""
    fig = figure(520, legend={"orientation": "h", "y": -0.08, "x": 0})
    fig["layout"].update(copy.deepcopy(_mailbox_grid()))
    if series.empty:
        return empty(fig, "no mailbox history yet")
    names = list(dict.fromkeys(series["series"]))
    palette = [BLUE, GREEN, RED, GOLD, "#7b5ea7", AMBER, DARK, "#2aa1b3"]
    lines: dict[tuple[Any, Any], dict[str, list[Any]]] = {}  # one pass in plain Python, not a filter per line
    columns = (series[c] for c in ("series", "activity_date", "metric", "value", "low", "high"))
    for name, day, metric, value, low, high in zip(*columns, strict=True):
        if pd.isna(name) or pd.isna(metric):
            continue  # as pandas' grouping leaves them out
        points = lines.setdefault((metric, name), {"days": [], "value": [], "low": [], "high": []})
        for key, item in (("days", str(day)), ("value", value), ("low", low), ("high", high)):
            points[key].append(item)
    for row, (metric, _) in enumerate(_MAILBOX_METRICS, start=1):
        axes = {"type": "scatter", "xaxis": f"x{row if row > 1 else ''}", "yaxis": f"y{row if row > 1 else ''}"}
        for index, name in enumerate(names):
            line = lines.get((metric, name))
            if line is None:
                continue
            days = line["days"]
            colour = palette[index % len(palette)]
            if not all(pd.isna(high) for high in line["high"]):
                fig["data"] += [
                    {
                        **axes,
                        "x": days,
                        "y": line["high"],
                        "mode": "lines",
                        "line": {"width": 0},
                        "showlegend": False,
                        "hoverinfo": "skip",
                        "legendgroup": name,
                    },
                    {
                        **axes,
                        "x": days,
                        "y": line["low"],
                        "mode": "lines",
                        "line": {"width": 0},
                        "fill": "tonexty",
                        "fillcolor": "rgba(59,111,182,0.15)",
                        "name": "min to max",
                        "showlegend": row == 1,
                        "legendgroup": "range",
                    },
                ]
            fig["data"].append(
                {
                    **axes,
                    "x": days,
                    "y": line["value"],
                    "mode": "lines+markers",
                    "name": name,
                    "line": {"color": colour, "width": 2},
                    "marker": {"size": 5},
                    "legendgroup": name,
                    "showlegend": row == 1,
                }
            )
    return update_axes(fig, "x", type="date", **day_ticks([str(day) for day in series["activity_date"]]))


def send_time_figure(grid: pd.DataFrame, rate_label: str) -> Figure:
    """Human reply rate by weekday (rows, Monday first) and hour (columns); blank cells had no sends, grey cells
    too few to read (their n shown)."""
    fig = figure(
        300,
        showlegend=False,
        xaxis={"title": {"text": "hour"}, "dtick": 2},
        yaxis={"autorange": "reversed", "type": "category"},
    )
    if int(grid["sends"].sum()) == 0:
        return empty(fig, "no sends yet")

    keys = list(zip(grid["weekday"], grid["hour"], strict=True))

    def cells(column: str) -> list[list[Any]]:  # one row per weekday, Monday first, one value per hour
        values = dict(zip(keys, grid[column].tolist(), strict=True))
        return [[values.get((weekday, hour)) for hour in range(24)] for weekday in range(1, 8)]

    rates, sends, small = cells("human_reply_rate"), cells("sends"), cells("is_small")
    z = [
        [None if pd.isna(v) or flag else float(v) for v, flag in zip(row, flags, strict=True)]
        for row, flags in zip(rates, small, strict=True)
    ]
    fig["data"] += [
        {
            "type": "heatmap",
            "z": z,
            "x": list(range(24)),
            "y": list(WEEKDAYS),
            "customdata": sends,
            "colorscale": _BLUES,
            "zmin": 0,
            "colorbar": {"title": {"text": "%"}},
            "hoverongaps": False,
            "hovertemplate": f"%{{y}} %{{x}}:00<br>{rate_label} %{{z:.2f}}%<br>sends %{{customdata}}<extra></extra>",
            "name": rate_label,
        },
        {
            "type": "heatmap",
            "z": [[1.0 if flag else None for flag in row] for row in small],
            "x": list(range(24)),
            "y": list(WEEKDAYS),
            "text": [
                [f"n={int(n)}" if flag else "" for n, flag in zip(counts, flags, strict=True)]
                for counts, flags in zip(sends, small, strict=True)
            ],
            "texttemplate": "%{text}",
            "textfont": {"size": 9, "color": DARK},
            "colorscale": [[0, "#e4e8ec"], [1, "#e4e8ec"]],
            "showscale": False,
            "hoverongaps": False,
            "hovertemplate": "%{y} %{x}:00<br>%{text}: too few to read<extra></extra>",
            "name": f"under {MIN_SAMPLE}",
        },
    ]
    return fig
