"""The page's plotly.js (dashboard/assets/plotly.min.js, built by devtools/plotly_bundle.py): the plotly.js version
of the installed plotly package, with the trace types the charts draw (tests/dashboard/test_report.py checks that
the charts draw no other), registered in a real browser."""

from __future__ import annotations

from pathlib import Path

from plotly.offline import get_plotlyjs_version

from dashboard.page import PLOTLY_TRACES, plotly_js
from devtools.browser import HeadlessChromium


def test_the_bundle_is_the_plotly_js_version_of_the_installed_plotly() -> None:
    """plotly's figures are its plotly.js version's JSON: after an upgrade of plotly, run
    `.venv/bin/python -m devtools.plotly_bundle` (this fails until then)."""
    banner = plotly_js()[:300]
    assert f" v{get_plotlyjs_version()}\n" in banner, banner
    assert f"partial bundle: {', '.join(PLOTLY_TRACES)} " in banner, banner


def test_the_bundle_registers_the_charts_trace_types_in_a_browser(tmp_path: Path) -> None:
    page = tmp_path / "bundle.html"
    page.write_text(
        f"<!doctype html><html><head><meta charset='utf-8'></head><body><script>{plotly_js()}</script><script>"
        "document.body.dataset.traces = Object.keys(Plotly.PlotSchema.get().traces).sort().join(' ');</script>"
        "</body></html>",
        encoding="utf-8",
    )
    with HeadlessChromium(tmp_path / "profile") as browser:
        opened = browser.open(page, ready="document.body.dataset.traces !== undefined", timeout_s=60)
        registered = str(opened.evaluate("document.body.dataset.traces")).split()
        assert opened.console_errors == []
    assert sorted(PLOTLY_TRACES) == registered
