"""The workspace-grain charts: mailbox health over days, and replies by send weekday and hour."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dashboard.chart_style import AMBER, BLUE, DARK, GOLD, GREEN, RED, day_ticks, empty, layout
from dashboard.metrics import MIN_SAMPLE, WEEKDAYS

_MAILBOX_METRICS = (
    ("reputation_score", "reputation"),
    ("warmup_health_score", "warmup health"),
    ("max_utilisation_pct", "utilisation %"),
)


def mailbox_figure(series: pd.DataFrame) -> go.Figure:
    """Reputation, warmup health and utilisation per day, one row each (mean and range for many mailboxes)."""
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.07,
        subplot_titles=[title for _, title in _MAILBOX_METRICS],
    )
    titles = list(fig.layout.annotations)
    fig.update_layout(layout(520, legend={"orientation": "h", "y": -0.08, "x": 0}))
    fig.update_layout(annotations=titles)
    if series.empty:
        return empty(fig, "no mailbox history yet")
    names = list(dict.fromkeys(series["series"]))
    palette = [BLUE, GREEN, RED, GOLD, "#7b5ea7", AMBER, DARK, "#2aa1b3"]
    for row, (metric, _) in enumerate(_MAILBOX_METRICS, start=1):
        part = series[series["metric"] == metric]
        for index, name in enumerate(names):
            line = part[part["series"] == name]
            if line.empty:
                continue
            days = [str(day) for day in line["activity_date"]]
            colour = palette[index % len(palette)]
            if line["high"].notna().any():
                fig.add_trace(
                    go.Scatter(
                        x=days,
                        y=line["high"].to_numpy(),
                        mode="lines",
                        line={"width": 0},
                        showlegend=False,
                        hoverinfo="skip",
                        legendgroup=name,
                    ),
                    row=row,
                    col=1,
                )
                fig.add_trace(
                    go.Scatter(
                        x=days,
                        y=line["low"].to_numpy(),
                        mode="lines",
                        line={"width": 0},
                        fill="tonexty",
                        fillcolor="rgba(59,111,182,0.15)",
                        name="min to max",
                        showlegend=row == 1,
                        legendgroup="range",
                    ),
                    row=row,
                    col=1,
                )
            fig.add_trace(
                go.Scatter(
                    x=days,
                    y=line["value"].to_numpy(),
                    mode="lines+markers",
                    name=name,
                    line={"color": colour, "width": 2},
                    marker={"size": 5},
                    legendgroup=name,
                    showlegend=row == 1,
                ),
                row=row,
                col=1,
            )
    fig.update_xaxes(type="date", **day_ticks([str(day) for day in series["activity_date"]]))
    return fig


def send_time_figure(grid: pd.DataFrame, rate_label: str) -> go.Figure:
    """Human reply rate by weekday (rows, Monday first) and hour (columns); blank cells had no sends, grey cells
    too few to read (their n shown)."""
    fig = go.Figure(
        layout=layout(
            300,
            showlegend=False,
            xaxis={"title": {"text": "hour"}, "dtick": 2},
            yaxis={"autorange": "reversed", "type": "category"},
        )
    )
    if int(grid["sends"].sum()) == 0:
        return empty(fig, "no sends yet")
    table = grid.pivot(index="weekday", columns="hour", values="human_reply_rate").reindex(range(1, 8))
    sends = grid.pivot(index="weekday", columns="hour", values="sends").reindex(range(1, 8))
    small = grid.pivot(index="weekday", columns="hour", values="is_small").reindex(range(1, 8)).astype(bool)
    z = [[None if pd.isna(v) else float(v) for v in row] for row in table.where(~small).to_numpy()]
    fig.add_trace(
        go.Heatmap(
            z=z,
            x=list(range(24)),
            y=list(WEEKDAYS),
            customdata=sends.to_numpy(),
            colorscale="Blues",
            zmin=0,
            colorbar={"title": {"text": "%"}},
            hoverongaps=False,
            hovertemplate=f"%{{y}} %{{x}}:00<br>{rate_label} %{{z:.2f}}%<br>sends %{{customdata}}<extra></extra>",
            name=rate_label,
        )
    )
    fig.add_trace(
        go.Heatmap(
            z=[[1.0 if flag else None for flag in row] for row in small.to_numpy()],
            x=list(range(24)),
            y=list(WEEKDAYS),
            text=("n=" + sends.astype(int).astype(str)).where(small, "").to_numpy().tolist(),
            texttemplate="%{text}",
            textfont={"size": 9, "color": DARK},
            colorscale=[[0, "#e4e8ec"], [1, "#e4e8ec"]],
            showscale=False,
            hoverongaps=False,
            hovertemplate="%{y} %{x}:00<br>%{text}: too few to read<extra></extra>",
            name=f"under {MIN_SAMPLE}",
        )
    )
    return fig
