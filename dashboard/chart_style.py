"""The dashboard's look, shared by every chart: the template, font and colours, the layout keys every figure
sets, day ticks, and the note an empty chart shows.

A figure is plotly's JSON form of it (``{"data": [trace, ...], "layout": {...}}``, each trace with its
``type``), which plotly.js draws as it is. Building plotly's Python objects instead validated every property
of every figure again, most of the report's time for hundreds of campaigns; the tests validate each chart's
figure with ``plotly.graph_objects.Figure`` instead.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

#: plotly's JSON form of a figure: ``{"data": [trace, ...], "layout": {...}}``
Figure = dict[str, Any]

TEMPLATE = "plotly_white"
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
BLUE, GREEN, RED, GREY, GOLD, AMBER, DARK = "#3b6fb6", "#2e9e6a", "#d1495b", "#9aa5b1", "#e0a100", "#f0a35e", "#4a5561"
CLASS_COLOURS = {
    "positive": GREEN,
    "neutral": GREY,
    "negative": RED,
    "auto_reply": "#b8c4d6",
    "bounce": DARK,
    "unclassified": AMBER,
}


def figure(height: int, note: str = "", **extra: Any) -> Figure:
    """A figure without traces yet, with the layout keys every figure sets (a note is the small title under the
    chart's heading); the page applies TEMPLATE once to all of them."""
    layout = {
        "height": height,
        "margin": {"l": 60, "r": 30, "t": 40 if note else 16, "b": 40},
        "font": {"family": FONT, "size": 12},
        "title": {"text": note, "font": {"size": 12, "color": "#5b6673"}, "x": 0.01, "xanchor": "left"},
        "annotations": [],
        "showlegend": True,
        **extra,
    }
    return {"data": [], "layout": layout}


def update_axes(fig: Figure, letter: str, **props: Any) -> Figure:
    """Set ``props`` on the first ``x`` (or ``y``) axis and every other one the figure names, as plotly's
    ``update_xaxes`` does; a None leaves the property unset."""
    layout = fig["layout"]
    for name in dict.fromkeys([f"{letter}axis", *(key for key in layout if key.startswith(f"{letter}axis"))]):
        axis = {**layout.get(name, {}), **props}
        layout[name] = {key: value for key, value in axis.items() if value is not None}
    return fig


DAY_MS = 86_400_000


def day_ticks(days: list[str]) -> dict[str, Any]:
    """Date-axis ticks: one per day for short spans (no 12:00 ticks between days), plotly's choice beyond."""
    if not days:
        return {}
    span = (pd.Timestamp(max(days)) - pd.Timestamp(min(days))).days
    return {"dtick": DAY_MS if span <= 14 else None, "tickformat": "%b %-d" if span <= 14 else None}


def empty(fig: Figure, message: str) -> Figure:
    """The chart with its axes hidden and one note saying why it is empty."""
    fig["layout"]["annotations"] = [
        {
            "text": message,
            "showarrow": False,
            "xref": "paper",
            "yref": "paper",
            "x": 0.5,
            "y": 0.5,
            "font": {"size": 14, "color": "#5b6673"},
        }
    ]
    update_axes(fig, "x", visible=False)
    return update_axes(fig, "y", visible=False)
