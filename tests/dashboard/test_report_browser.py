"""The report in a real headless Chromium (Debian's chromium; `make test` installs it, never skipped).

From a warehouse synced for real from a `small` sandbox (two workspaces, a simulated day apart):
no console error and no request outside the file, every chart drawn, and the numbers shown on
the page (the KPI tiles' text, the funnel's and the daily chart's plotted values, the funnel in the
page's embedded data, narrowing from contacted to positive) equal to the reporting tables, for every
workspace together, one workspace and one campaign picked in the page's filter. Screenshots go to the
test's tmp dir and to bench/out/ (git-ignored).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from test_report_support import REPORT_READY, build_bi, drawn_marks, embedded_store, open_checked, sql, synthetic_bi
from test_sync_support import admin_keys, sync_sandbox

from dashboard import write_report
from dashboard.metrics import HEALTHY_REPUTATION, HEALTHY_WARMUP, MAX_MAILBOX_LINES
from dashboard.report import CHARTS
from devtools.browser import HeadlessChromium, OpenedPage

pytestmark = pytest.mark.timeout(300)
BENCH_OUT = Path(__file__).resolve().parents[2] / "bench" / "out"


def _synced_bi(sandbox: Any, tmp_path: Path) -> Path:
    """Full sync, a simulated day, quick sync (mailbox history of two days), models, BI file."""
    keys = admin_keys(sandbox, level="read")
    assert len(keys) >= 2
    warehouse = tmp_path / "outreach.duckdb"
    for mode in ("full", "quick"):
        sync_sandbox(sandbox, keys, warehouse, mode, tmp_path)
        if mode == "full":
            sandbox.advance(86_400)
    return build_bi(warehouse)


def _tile_texts(opened: OpenedPage) -> list[str]:
    texts: list[str] = opened.evaluate(
        "Array.from(document.querySelectorAll('#chart-kpi text.number')).map(t => t.textContent)"
    )
    return texts


def _plotted(opened: OpenedPage, chart: str, trace: int, axis: str) -> list[float]:
    """The values a chart's trace was drawn with (plotly's full data: typed arrays decoded)."""
    values: list[float] = opened.evaluate(
        "([chart, trace, axis]) => Array.from(document.getElementById('chart-' + chart)._fullData[trace][axis])",
        [chart, trace, axis],
    )
    return values


def _decoded(values: Any) -> list[float]:
    """A plotly array from the page's JSON: a list, or plotly's typed-array form {dtype, bdata} (base64)."""
    if isinstance(values, list):
        return values
    import base64

    import numpy as np

    return np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"])).tolist()


def _pick(opened: OpenedPage, select: str, value: str, scope: str) -> None:
    """Choose in the page's filter and wait until every chart is drawn again."""
    opened.page.select_option(select, value)
    opened.page.wait_for_function(f"document.body.dataset.scope === {scope!r} && ({REPORT_READY})", timeout=30_000)
    assert opened.evaluate("document.body.dataset.renderError") is None


def _all_drawn(opened: OpenedPage) -> None:
    marks = drawn_marks(opened)
    assert set(marks) == {chart.key for chart in CHARTS}
    assert all(count > 0 for count in marks.values()), marks


def _mailbox_tile(bi: Path, workspace_id: str | None) -> str:
    where = "where workspace_id = ?" if workspace_id else ""
    healthy, total = sql(
        bi,
        "select count(*) filter (where is_active and reputation_score >= ? and (not "
        "is_warmup_enabled or warmup_health_score >= ?)), count(*) from reporting.mailbox_health " + where,
        [HEALTHY_REPUTATION, HEALTHY_WARMUP] + ([workspace_id] if workspace_id else []),
    )[0]
    return f"{healthy} of {total}"


def test_report_in_headless_chromium(make_sandbox: Callable[..., Any], tmp_path: Path) -> None:
    sandbox = make_sandbox(scale="small", rate_limit=0)
    bi = _synced_bi(sandbox, tmp_path)
    out = write_report(bi, tmp_path / "report.html")

    with HeadlessChromium(tmp_path / "profile") as browser:
        opened = open_checked(browser, out, ready=REPORT_READY)
        assert opened.evaluate("document.body.dataset.renderError") is None
        _all_drawn(opened)
        opened.page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
        links = opened.evaluate(
            "Array.from(document.querySelectorAll('[src], [href]'), "
            "el => el.getAttribute('src') || el.getAttribute('href'))"
        )
        assert [link for link in links if not link.startswith(("#", "data:", "blob:"))] == []  # drawn DOM too

        # the reply tile is the human reply rate over contacted recipients (the metric dictionary's)
        contacted, human, positive, bounced = sql(
            bi,
            "select sum(count_contacted), sum(count_human_replied), sum(count_positive_replies), sum(count_bounced) "
            "from reporting.campaign_performance",
        )[0]
        assert _tile_texts(opened) == [
            f"{contacted:,}",
            f"{round(100 * human / contacted, 2):.2f}%",
            f"{positive:,}",
            f"{round(100 * bounced / contacted, 2):.2f}%",
            _mailbox_tile(bi, None),
        ]
        # the page's embedded data (what every chart is drawn from): the funnel narrows from contacted to positive
        store = embedded_store(out.read_text(encoding="utf-8"))
        embedded = store["scopes"]["all"]["funnel"]["data"][0]
        stages = sql(
            bi,
            "select sum(count_contacted), sum(count_replied), sum(count_human_replied), "
            "sum(count_positive_replies) from reporting.campaign_performance",
        )[0]
        assert list(embedded["y"]) == ["contacted", "replied", "replied as a person", "positive"]
        assert _decoded(embedded["x"]) == list(stages) == sorted(stages, reverse=True) and stages[-1] > 0
        assert _plotted(opened, "funnel", 0, "x") == list(stages)
        days = sql(bi, "select sum(count_sent), sum(count_replies_received) from reporting.campaign_daily")[0]
        sent = [v for v in _plotted(opened, "daily", 0, "y") if v is not None]
        assert (sum(sent), sum(_plotted(opened, "daily", 1, "y"))) == days
        workspace_id, ws_human, bounce_rate, ws_positive = sql(
            bi,
            "select workspace_id, human_reply_rate, bounce_rate, count_positive_replies "
            "from reporting.workspace_overview order by workspace_name desc limit 1",
        )[0]
        _pick(opened, "#workspace", workspace_id, f"w:{workspace_id}")
        _all_drawn(opened)
        tiles = _tile_texts(opened)
        assert tiles[1:] == [
            f"{round(100 * ws_human, 2):.2f}%",
            f"{ws_positive:,}",
            f"{round(100 * bounce_rate, 2):.2f}%",
            _mailbox_tile(bi, workspace_id),
        ]
        campaign_id, *funnel = sql(
            bi,
            "select campaign_id, count_contacted, count_replied, count_human_replied, count_positive_replies "
            "from reporting.campaign_performance where workspace_id = ? and count_variants > 1 "
            "order by count_replied desc limit 1",
            [workspace_id],
        )[0]
        _pick(opened, "#campaign", campaign_id, f"c:{campaign_id}")
        _all_drawn(opened)
        assert _plotted(opened, "funnel", 0, "x") == funnel == sorted(funnel, reverse=True)
        daily = dict(
            sql(
                bi,
                "select activity_date::varchar, count_sent from reporting.campaign_daily where campaign_id = ? "
                "order by activity_date",
                [campaign_id],
            )
        )
        drawn = dict(zip(_plotted(opened, "daily", 0, "x"), _plotted(opened, "daily", 0, "y"), strict=True))
        assert {day: drawn[day] for day in daily} == daily  # null (unobserved) days drawn as gaps
        assert all(value is None for day, value in drawn.items() if day not in daily)
        variants = sql(
            bi,
            "select 100 * reply_rate from reporting.variant_performance where campaign_id = ? order by variant_index",
            [campaign_id],
        )
        assert _plotted(opened, "variants", 0, "x") == pytest.approx([r or 0.0 for (r,) in variants])
        assert _tile_texts(opened)[0] == f"{funnel[0]:,}"
        assert opened.page.url.endswith(f"#w={workspace_id}&c={campaign_id}")
        opened.page.screenshot(path=str(tmp_path / "report-campaign.png"), full_page=True)
        assert opened.console_errors == [] and opened.outside_requests == []

        # The link with the selection in its hash opens on that campaign.
        again = open_checked(browser, out, ready=REPORT_READY)
        assert again.evaluate("document.body.dataset.scope") == "all"
        again.page.goto(opened.page.url)
        again.page.reload()
        again.page.wait_for_function(REPORT_READY, timeout=30_000)
        assert again.evaluate("document.body.dataset.scope") == f"c:{campaign_id}"

    for name in ("report.png", "report-campaign.png"):
        assert (tmp_path / name).stat().st_size > 50_000  # a full page of charts, not a blank one
    BENCH_OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(tmp_path / "report.png", BENCH_OUT / "report.png")
    shutil.copy(tmp_path / "report-campaign.png", BENCH_OUT / "report-campaign.png")
    _docs_site_opens(tmp_path / "outreach.duckdb", tmp_path)


# dbt-docs ships templates its page requests before they are expanded: `src="{{ getIcon(...) }}"` in the
# sidebar and `${require('./assets/favicons/favicon.ico')}`. On our loopback server each is a 404 (never a
# request outside the site); any other failed request fails the test.
UNEXPANDED_TEMPLATE = "%7B"  # a literal `{` in the requested path


def _docs_site_opens(warehouse: Path, tmp_path: Path) -> None:
    """`outreach docs`' site of the same warehouse: a mart's page with its columns' docs and types."""
    from models.docs_site import generate_docs
    from models.settings import resolve_target

    site = generate_docs(resolve_target(warehouse))
    with HeadlessChromium(tmp_path / "docs-profile") as browser:
        opened = browser.open(site, ready="document.querySelectorAll('a').length > 20", timeout_s=60, serve=True)
        # the home page: the metric dictionary (models/metrics.yml)
        opened.page.wait_for_function("document.body.innerText.includes('Metric dictionary')", timeout=30_000)
        home = " ".join(opened.evaluate("document.body.innerText").split())
        assert "progress_rate" in home and "reply_rate_per_delivered_message" in home, home[:2000]
        opened.page.goto(opened.page.url.split("#")[0] + "#!/model/model.outreach.campaign_performance")
        opened.page.wait_for_function("document.body.innerText.includes('human_reply_rate')", timeout=30_000)
        text = " ".join(opened.evaluate("document.body.innerText").split())
        # the column's doc from the dictionary's docs block, and its type from the warehouse's catalog
        assert "human_reply_rate DOUBLE" in text and "count_human_replied / count_contacted" in text, text[:2000]
        opened.page.screenshot(path=str(tmp_path / "docs.png"), full_page=True)
    assert opened.outside_requests == [], opened.outside_requests
    assert all(UNEXPANDED_TEMPLATE in url for url in opened.failed_requests), opened.failed_requests
    assert len(opened.console_errors) == len(opened.failed_requests), opened.console_errors
    assert (tmp_path / "docs.png").stat().st_size > 20_000


def test_report_of_a_warehouse_without_activity_says_so_in_every_chart(tmp_path: Path) -> None:
    """Workspaces synced, no campaign or mailbox yet: every chart still draws, with its own note."""
    bi = synthetic_bi(tmp_path, recipients=1000)
    con = duckdb.connect(str(bi))
    for table in (
        "campaign_performance",
        "campaign_daily",
        "variant_performance",
        "reply_outcomes",
        "mailbox_daily",
        "mailbox_health",
        "lead_engagement",
        "send_time_performance",
    ):
        con.execute(f"delete from reporting.{table}")
    con.close()
    out = write_report(bi, tmp_path / "report.html")
    with HeadlessChromium(tmp_path / "profile") as browser:
        opened = open_checked(browser, out, ready=REPORT_READY)
        notes = opened.evaluate(
            """Object.fromEntries(Array.from(document.querySelectorAll('.chart')).map(el => [el.dataset.chart,
               Array.from(el.querySelectorAll('svg.main-svg .annotation-text')).map(t => t.textContent).join('|')]))"""
        )
        assert _tile_texts(opened) == ["0", "-", "0", "-", "0 of 0"]
        opened.page.screenshot(path=str(tmp_path / "empty.png"), full_page=True)
    assert notes == {
        "kpi": "",
        "funnel": "nobody contacted yet",
        "outcomes": "no replies yet",
        "daily": "no sends or replies yet",
        "variants": "no A/B test here (one subject line per campaign)",
        "mailboxes": "no mailbox history yet",
        "send_times": "no sends yet",
    }


def test_report_with_many_mailboxes_draws_their_mean_and_range(tmp_path: Path) -> None:
    bi = synthetic_bi(tmp_path, recipients=1000, mailboxes=MAX_MAILBOX_LINES + 2)
    out = write_report(bi, tmp_path / "report.html")
    with HeadlessChromium(tmp_path / "profile") as browser:
        opened = open_checked(browser, out, ready=REPORT_READY)
        _all_drawn(opened)
        names = opened.evaluate("Array.from(document.getElementById('chart-mailboxes')._fullData, t => t.name)")
        assert f"mean of {2 * (MAX_MAILBOX_LINES + 2)} mailboxes" in names and "min to max" in names
        assert opened.evaluate("document.querySelectorAll('#chart-mailboxes .cartesianlayer path.js-fill').length") == 3


def test_a_browser_that_cannot_unpack_the_figures_says_so_on_the_page(tmp_path: Path) -> None:
    """The figures travel gzip-compressed (dashboard/page.py): a browser without DecompressionStream (Firefox before
    113, Safari before 16.4) shows why nothing is drawn, and which browsers can."""
    out = write_report(synthetic_bi(tmp_path, recipients=1000), tmp_path / "report.html")
    with HeadlessChromium(tmp_path / "profile") as browser:
        opened = browser.open(out, ready=REPORT_READY, init_script="delete window.DecompressionStream;")
        caption = opened.evaluate("document.getElementById('scope-caption').textContent")
        error = opened.evaluate("document.body.dataset.renderError")
        drawn = opened.evaluate("document.querySelectorAll('.chart svg').length")
    assert caption.startswith("this browser cannot unpack the report's data") and "current Chrome" in caption
    assert "DecompressionStream" in error and drawn == 0
    assert [line for line in opened.console_errors if "cannot unpack" in line]


def test_browser_helper_serves_a_site_and_reports_what_leaves_it(tmp_path: Path) -> None:
    """What the report's check rests on: an outside request and a console error are caught, not missed.

    The site reads a JSON file beside its page, as dbt's docs site reads manifest.json (``serve=True``).
    """
    site = tmp_path / "site"
    site.mkdir()
    (site / "manifest.json").write_text('{"nodes": 3}')
    (site / "index.html").write_text(
        "<!doctype html><html><body><p id='n'></p><img src='https://example.com/pixel.png'><script>"
        "fetch('manifest.json').then(r => r.json()).then(m => { document.getElementById('n').textContent = m.nodes; "
        "console.error('on purpose'); document.body.dataset.done = 'yes'; });</script></body></html>"
    )
    with HeadlessChromium(tmp_path / "profile") as browser:
        opened = browser.open(site / "index.html", ready="document.body.dataset.done === 'yes'", serve=True)
        assert opened.evaluate("document.getElementById('n').textContent") == "3"
        assert opened.outside_requests == ["https://example.com/pixel.png"]
        assert "on purpose" in opened.console_errors
        with pytest.raises(AssertionError, match="requested"):
            open_checked(browser, site / "index.html", ready="document.body.dataset.done === 'yes'", serve=True)
