"""The dashboard's look, shared by every chart: the template, font and colours, the layout keys every figure
sets, day ticks, and the note an empty chart shows."""

from __future__ import annotations

from typing import Any

import pandas as pd
import plotly.graph_objects as go

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


def layout(height: int, note: str = "", **extra: Any) -> dict[str, Any]:
    """The layout keys every figure sets (a note is the small title under the chart's heading)."""
    return {
        "template": {},  # the page applies TEMPLATE once (a named template costs ~20 ms per figure)
        "height": height,
        "margin": {"l": 60, "r": 30, "t": 40 if note else 16, "b": 40},
        "font": {"family": FONT, "size": 12},
        "title": {"text": note, "font": {"size": 12, "color": "#5b6673"}, "x": 0.01, "xanchor": "left"},
        "annotations": [],
        "showlegend": True,
        **extra,
    }


DAY_MS = 86_400_000


def day_ticks(days: list[str]) -> dict[str, Any]:
    """Date-axis ticks: one per day for short spans (no 12:00 ticks between days), plotly's choice beyond."""
    if not days:
        return {}
    span = (pd.Timestamp(max(days)) - pd.Timestamp(min(days))).days
    return {"dtick": DAY_MS if span <= 14 else None, "tickformat": "%b %-d" if span <= 14 else None}


def empty(fig: go.Figure, message: str) -> go.Figure:
    """The chart with its axes hidden and one note saying why it is empty."""
    fig.layout.annotations = [
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
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return fig
