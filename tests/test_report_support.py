"""Helpers of the dashboard's tests: BI files to draw from, the expected numbers read straight from
them with SQL, and a browser check that every page (the report, dbt's docs site) must pass."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import duckdb

from devtools.browser import HeadlessChromium, OpenedPage

#: the report's own "drawn" signal (dashboard/assets/page.js sets it once every chart is drawn)
REPORT_READY = "document.body.dataset.rendered === 'true' || document.body.dataset.renderError !== undefined"

#: the marks a drawn chart has in its SVG: bars and funnel segments, lines, heatmap images, KPI numbers
DRAWN_MARKS = ".point path[d], path.js-line[d], g.hm image, .indicatorlayer text.number"


#: the element holding the page's figure store (dashboard/page.py: gzip-compressed JSON in base64)
STORE_ELEMENT = re.compile(r'<script type="application/gzip" id="report-data">([^<]*)</script>')


def embedded_store(page: str) -> dict[str, Any]:
    """The figure store a report page carries, unpacked as its script unpacks it in the browser."""
    found = STORE_ELEMENT.findall(page)
    assert len(found) == 1, "the page holds one figure store"
    store: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(found[0])))
    return store


def build_bi(warehouse: Path) -> Path:
    """Build the models on a warehouse and publish its BI file; returns the BI file.

    The one place the tests call the models' build (dbt, all or nothing).
    """
    from models.build import build

    report = build(warehouse)
    assert report.passed and report.bi_path is not None
    return Path(report.bi_path)


def synthetic_bi(directory: Path, *, recipients: int = 5000, workspaces: int = 2, mailboxes: int = 3) -> Path:
    """A BI file built from the synthetic raw warehouse (devtools/synthetic.py); ``mailboxes`` per workspace."""
    from devtools.synthetic import make_raw_warehouse

    warehouse = make_raw_warehouse(
        directory / "outreach.duckdb", recipients=recipients, workspaces=workspaces, mailboxes_per_workspace=mailboxes
    )
    return build_bi(warehouse)


def sql(bi: Path, query: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    """Rows of a query on the BI file, opened read-only (the expected side of every check)."""
    con = duckdb.connect(str(bi), read_only=True)
    try:
        return con.execute(query, params or []).fetchall()
    finally:
        con.close()


def open_checked(browser: HeadlessChromium, page: Path, *, ready: str, serve: bool = False) -> OpenedPage:
    """Open a page and assert it drew without a console error and without reaching outside its origin."""
    opened = browser.open(page, ready=ready, timeout_s=60, serve=serve)
    assert opened.outside_requests == [], f"{page.name} requested {opened.outside_requests}"
    assert opened.console_errors == [], f"{page.name} logged {opened.console_errors}"
    return opened


def drawn_marks(opened: OpenedPage) -> dict[str, int]:
    """Per chart of the report: how many marks its SVG holds (0 = not drawn)."""
    counts: dict[str, int] = opened.evaluate(
        """(selector) => Object.fromEntries(Array.from(document.querySelectorAll('.chart')).map(
            el => [el.dataset.chart, el.querySelector('svg.main-svg') ? el.querySelectorAll(selector).length : 0]))""",
        DRAWN_MARKS,
    )
    return counts
