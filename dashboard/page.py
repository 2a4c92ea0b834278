"""Page assembly: the figures of every scope, plotly.js, the style and the filter script in one HTML file.

Nothing on the page is fetched: plotly.js, the CSS and the script are inlined once, and the
figures travel as gzip-compressed JSON, in base64, in a ``<script type="application/gzip">`` element,
which the page's script unpacks with the browser's ``DecompressionStream``. Each scope stores
its figures' data and only the layout keys that differ from the first scope's (the shared
plotly template is stored once). Compressed, because 1,000 workspaces and 3,000 campaigns are tens of MB of
JSON (dashboard/README.md gives the measured sizes).
"""

from __future__ import annotations

import base64
import gzip
import html
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.io as pio
from plotly.utils import PlotlyJSONEncoder

from dashboard.chart_style import TEMPLATE, Figure

if TYPE_CHECKING:
    from dashboard.data import ReportData


@dataclass(frozen=True)
class Chart:
    """A chart of the page: its key, heading, caption and how to draw it from a scope's data."""

    key: str
    heading: str
    caption: Callable[[ReportData], str]
    draw: Callable[[ReportData], Figure]
    workspace_grain: bool = False


@dataclass(frozen=True)
class Scope:
    """One selection of the filter: ``all``, ``w:<workspace_id>`` or ``c:<campaign_id>``, with its figures."""

    key: str
    workspace_id: str
    campaign_id: str
    figures: dict[str, Figure]


#: The trace types the charts use: assets/plotly.min.js is plotly.js with these only (devtools/plotly_bundle.py
#: builds it): all of plotly.js was most of what a browser parsed and ran before it drew (dashboard/README.md)
PLOTLY_TRACES = ("bar", "scatter", "heatmap", "funnel", "indicator")


def plotly_js_path() -> Path:
    return Path(str(resources.files("dashboard").joinpath("assets", "plotly.min.js")))


def plotly_js() -> str:
    return _asset("plotly.min.js")


def _asset(name: str) -> str:
    return resources.files("dashboard").joinpath("assets", name).read_text(encoding="utf-8")


def _split_layout(layout: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """The layout keys that differ from the base (a key the base has and this lacks becomes null)."""
    delta = {key: value for key, value in layout.items() if base.get(key) != value}
    delta.update({key: None for key in base if key not in layout})
    return delta


def figure_store(charts: Sequence[Chart], scopes: Iterable[Scope]) -> dict[str, Any]:
    """``{"base": {chart: layout}, "scopes": {key: {chart: {"data": [...], "layout": {delta}}}}}``."""
    base: dict[str, dict[str, Any]] = {}
    stored: dict[str, dict[str, Any]] = {}
    for scope in scopes:
        figures: dict[str, Any] = {}
        for chart in charts:
            figure = scope.figures.get(chart.key)
            if figure is None:
                continue
            layout = figure.get("layout", {})
            if chart.key not in base:
                base[chart.key] = layout
            figures[chart.key] = {"data": figure.get("data", []), "layout": _split_layout(layout, base[chart.key])}
        stored[scope.key] = figures
    return {"base": base, "scopes": stored}


def _workspace_menu(data: ReportData) -> list[dict[str, Any]]:
    # the campaigns sorted once and dealt to their workspaces: a filter per workspace read every campaign per
    # workspace (2.4 s for 1,000 workspaces of 3,000 campaigns)
    campaigns: dict[Any, list[dict[str, str]]] = {}
    for c in data.campaigns.sort_values(["campaign_name", "campaign_id"]).itertuples(index=False):
        campaigns.setdefault(c.workspace_id, []).append(
            {
                "id": str(c.campaign_id),
                "name": str(c.campaign_name or c.campaign_id),
                "status": str(c.campaign_status or ""),
            }
        )
    return [
        {
            "id": str(workspace.workspace_id),
            "name": str(workspace.workspace_name or workspace.workspace_id),
            "campaigns": campaigns.get(workspace.workspace_id, []),
        }
        for workspace in data.workspaces.itertuples(index=False)
    ]


def _as_of(data: ReportData) -> str:
    synced = pd.to_datetime(data.workspaces["synced_at"], utc=True).max()
    return "" if pd.isna(synced) else synced.strftime("%Y-%m-%d %H:%M UTC")


def store_payload(payload: dict[str, Any]) -> str:
    """The figure store as the page carries it: JSON, gzip-compressed (the same bytes for the same store), in
    base64, whose alphabet cannot close the ``<script>`` element that holds it."""
    text = json.dumps(payload, cls=PlotlyJSONEncoder, separators=(",", ":"))
    return base64.b64encode(gzip.compress(text.encode("utf-8"), mtime=0)).decode("ascii")


def render_page(
    data: ReportData, charts: Sequence[Chart], scopes: Iterable[Scope], *, source: str, alerts: str = ""
) -> str:
    """The whole HTML document; `alerts` (dashboard.incidents) goes first."""
    template = pio.templates[TEMPLATE].to_plotly_json()
    store = {
        **figure_store(charts, scopes),
        "template": template,
        "charts": [{"key": c.key, "workspace_grain": c.workspace_grain} for c in charts],
        "workspaces": _workspace_menu(data),
    }
    written = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    as_of = _as_of(data)
    sections = alerts + "\n".join(
        f'<section class="card{" wide" if c.key in _WIDE else ""}" id="card-{c.key}">'
        f'<h2>{html.escape(c.heading)}</h2><p class="caption">{html.escape(c.caption(data))}</p>'
        f'<div class="chart" id="chart-{c.key}" data-chart="{c.key}"></div></section>'
        for c in charts
    )
    return _PAGE.format(
        css=_asset("page.css"),
        source=html.escape(source),
        as_of=html.escape(as_of or "unknown"),
        written=html.escape(written),
        sections=sections,
        plotly_js=plotly_js(),
        data=store_payload(store),
        page_js=_asset("page.js"),
    )


_WIDE = {"kpi", "daily", "variants", "mailboxes", "send_times"}

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Outreach report</title>
<style>
{css}
</style>
</head>
<body>
<header>
  <h1>Outreach report</h1>
  <p class="meta">From <code>{source}</code> · data as of {as_of} · written {written}</p>
  <form class="filters" onsubmit="return false">
    <label>Workspace <select id="workspace"></select></label>
    <label>Campaign <select id="campaign"></select></label>
    <span id="scope-caption"></span>
  </form>
</header>
<main>
{sections}
</main>
<script>{plotly_js}</script>
<script type="application/gzip" id="report-data">{data}</script>
<script>
{page_js}
</script>
</body>
</html>
"""
