"""`outreach report` on real BI files: every number equals its reporting table, the page is self-contained
and carries aggregates only, the engagement columns are read when present, and errors name cause and fix.

BI files come from the synthetic raw warehouse (devtools/synthetic.py) built by the models; the browser
test (test_report_browser.py) draws one from a synced sandbox.
"""

from __future__ import annotations

import html.parser
import json
import multiprocessing
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import plotly.graph_objects as go
import psutil
import pytest
from plotly.utils import PlotlyJSONEncoder
from test_report_support import embedded_store, sql, synthetic_bi

from dashboard import ReportError, write_report
from dashboard.data import ReportData, load
from dashboard.metrics import (
    HEALTHY_REPUTATION,
    HEALTHY_WARMUP,
    MAX_MAILBOX_LINES,
    daily_series,
    funnel_stages,
    kpi_tiles,
    outcome_classes,
    variant_rows,
)
from dashboard.page import PLOTLY_TRACES, plotly_js
from dashboard.report import CHARTS, scopes
from dashboard.workspace_metrics import mailbox_series, send_time_grid

pytestmark = pytest.mark.timeout(240)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bi(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_bi(tmp_path_factory.mktemp("report"))


@pytest.fixture(scope="module")
def old_bi(bi: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same BI file as an older build published it (no engagement columns): the charts' fallbacks."""
    old = tmp_path_factory.mktemp("report_old") / "outreach_bi.duckdb"
    shutil.copy(bi, old)
    _drop_engagement_columns(old)
    return old


def _tiles(data: ReportData) -> dict[str, Any]:
    frame = kpi_tiles(data.campaigns, data.mailboxes, data.features)
    return {row.key: (row.label, row.value, row.suffix) for row in frame.itertuples(index=False)}


def _in_workspace(data: ReportData, workspace_id: str) -> ReportData:
    return dict(data.workspace_parts())[workspace_id]


def _workspace(bi: Path) -> str:
    return str(sql(bi, "select workspace_id from reporting.workspace_overview order by workspace_id limit 1")[0][0])


def test_tiles_equal_workspace_overview_and_mailbox_health(old_bi: Path) -> None:
    """Without the models' contacted count and human reply rate: the reply rate over the contacted recipients the
    page derives (recipients - pending), as the metric dictionary defines reply_rate."""
    bi = old_bi
    data = load(bi)
    assert not (data.features.human_reply_rate or data.features.reply_class or data.features.send_time_performance)
    for workspace_id, positive in sql(
        bi, "select workspace_id, count_positive_replies from reporting.workspace_overview"
    ):
        tiles = _tiles(_in_workspace(data, workspace_id))
        contacted, replied, bounced = sql(
            bi,
            "select sum(count_recipients - count_pending) filter (where count_sent > 0), sum(count_replied), "
            "sum(count_bounced) from reporting.campaign_performance where workspace_id = ?",
            [workspace_id],
        )[0]
        healthy, total = sql(
            bi,
            "select count(*) filter (where is_active and reputation_score >= ? and (not is_warmup_enabled "
            "or warmup_health_score >= ?)), count(*) from reporting.mailbox_health where workspace_id = ?",
            [HEALTHY_REPUTATION, HEALTHY_WARMUP, workspace_id],
        )[0]
        assert tiles["contacted"][1] == contacted > 0
        assert tiles["reply_rate"][:2] == ("reply rate", round(100 * replied / contacted, 2))
        assert tiles["positive"][1] == positive > 0
        assert tiles["bounce_rate"][1] == round(100 * bounced / contacted, 2)
        assert tiles["mailboxes_healthy"][1:] == (healthy, f" of {total}")
    every = _tiles(data)
    contacted, bounced = sql(
        bi,
        "select sum(count_recipients - count_pending) filter (where count_sent > 0), sum(count_bounced) "
        "from reporting.campaign_performance",
    )[0]
    assert every["bounce_rate"][1] == pytest.approx(100 * bounced / contacted, abs=0.005)


def _check_daily(daily: pd.DataFrame, expected: list[tuple[Any, ...]]) -> None:
    """The page's days: every day from the first to the last kept; sends NaN (a gap) where the table has null
    or no row, replies 0 where it has no row."""
    table = {row[0]: row[1:] for row in expected}
    missing = (None,) + (0,) * (len(expected[0]) - 2)  # a day without a row: sends unknown, no replies
    assert len(daily) == (max(table) - min(table)).days + 1
    for row in daily.itertuples(index=False):
        sent, *replies = table.get(row.activity_date, missing)
        got_sent = None if pd.isna(row.count_sent) else int(row.count_sent)
        assert (got_sent, *(int(getattr(row, c)) for c in _REPLY_COLUMNS[: len(replies)])) == (sent, *replies)


_REPLY_COLUMNS = ("count_replies_received", "count_positive_replies_received")


def test_campaign_charts_equal_their_tables(bi: Path) -> None:
    data = load(bi)
    parts = dict(_in_workspace(data, _workspace(bi)).campaign_parts())
    campaign_id, part = next(
        (cid, p) for cid, p in parts.items() if len(p.variants) > 1 and int(p.campaigns["count_sent"].iloc[0]) > 0
    )
    row = sql(
        bi,
        "select count_contacted, count_replied, count_human_replied, count_positive_replies "
        "from reporting.campaign_performance where campaign_id = ?",
        [campaign_id],
    )[0]
    stages = list(funnel_stages(part.campaigns, part.features)["count_recipients"])
    assert stages == list(row) and stages == sorted(stages, reverse=True)  # the funnel never widens

    variants = variant_rows(part.variants, part.campaigns)
    expected = sql(
        bi,
        "select variant_index, count_sent, count_replied, estimated_recipients, reply_rate, is_winner "
        "from reporting.variant_performance where campaign_id = ? order by variant_index",
        [campaign_id],
    )
    got = variants[["variant_index", "count_sent", "count_replied", "estimated_recipients", "reply_rate", "is_winner"]]
    assert [tuple(r) for r in got.itertuples(index=False)] == expected
    assert ((variants["ci_low"] <= variants["rate_pct"]) & (variants["rate_pct"] <= variants["ci_high"])).all()
    assert list(variants["rate_pct"]) == pytest.approx([100 * r[4] for r in expected])

    daily = daily_series(part.daily)
    expected_daily = sql(
        bi,
        "select activity_date, count_sent, count_replies_received from reporting.campaign_daily "
        "where campaign_id = ? order by activity_date",
        [campaign_id],
    )
    _check_daily(daily, expected_daily)


def test_workspace_charts_equal_their_tables(old_bi: Path) -> None:
    bi = old_bi
    workspace_id = _workspace(bi)
    data = _in_workspace(load(bi), workspace_id)
    daily = daily_series(data.daily)
    expected = sql(
        bi,
        "select activity_date, sum(count_sent), sum(count_replies_received), "
        "sum(count_positive_replies_received) from reporting.campaign_daily where workspace_id = ? "
        "group by 1 order by 1",
        [workspace_id],
    )
    _check_daily(daily, expected)
    assert len(expected) > 14  # the whole kept history, not the API's 14 days

    outcomes = outcome_classes(data.outcomes)
    expected_outcomes = dict(
        sql(
            bi,
            "select reply_type, sum(count_replies) from reporting.reply_outcomes where workspace_id = ? group by 1",
            [workspace_id],
        )
    )
    assert dict(zip(outcomes["reply_class"], outcomes["count_replies"], strict=True)) == expected_outcomes
    assert outcomes["pct_of_replies"].sum() == pytest.approx(100, abs=0.05)

    series = mailbox_series(data.mailbox_daily)
    reputation = series[series["metric"] == "reputation_score"]
    expected_rep = sql(
        bi,
        "select h.mailbox_email, d.activity_date, d.reputation_score from reporting.mailbox_daily d "
        "join reporting.mailbox_health h using (email_account_id) where d.workspace_id = ? "
        "order by 1, 2",
        [workspace_id],
    )
    assert [(r.series, r.activity_date, r.value) for r in reputation.itertuples()] == expected_rep


def test_many_mailboxes_show_their_daily_mean_and_range(tmp_path: Path) -> None:
    bi = synthetic_bi(tmp_path, recipients=1000, mailboxes=MAX_MAILBOX_LINES + 2)
    workspace_id = _workspace(bi)
    series = mailbox_series(_in_workspace(load(bi), workspace_id).mailbox_daily)
    assert set(series["series"]) == {f"mean of {MAX_MAILBOX_LINES + 2} mailboxes"}
    for metric in ("reputation_score", "max_utilisation_pct"):
        expected = sql(
            bi,
            f"select activity_date, round(avg({metric}), 2), min({metric}), max({metric}) "
            "from reporting.mailbox_daily where workspace_id = ? group by 1 order by 1",
            [workspace_id],
        )
        got = series[series["metric"] == metric]
        assert [(r.activity_date, r.value, r.low, r.high) for r in got.itertuples()] == expected
    warmup = series[series["metric"] == "warmup_health_score"]
    expected = sql(
        bi,
        "select d.activity_date, round(avg(d.warmup_health_score), 2) from reporting.mailbox_daily d "
        "join reporting.mailbox_health h using (email_account_id) where d.workspace_id = ? "
        "and h.is_warmup_enabled group by 1 order by 1",
        [workspace_id],
    )
    assert [(r.activity_date, r.value) for r in warmup.itertuples()] == expected


def test_send_time_fallback_equals_pandas_over_lead_engagement(old_bi: Path) -> None:
    """Before send_time_performance: leads by UTC weekday and hour of last contact, share who replied."""
    bi = old_bi
    workspace_id = _workspace(bi)
    grid = send_time_grid(_in_workspace(load(bi), workspace_id).send_times)
    con = duckdb.connect(str(bi), read_only=True)
    try:
        leads = (
            con.sql(
                "select last_contacted_at, count_campaigns_replied from reporting.lead_engagement "
                "where workspace_id = ? and last_contacted_at is not null",
                params=[workspace_id],
            )
            .to_arrow_table()
            .to_pandas()
        )
    finally:
        con.close()
    when = pd.to_datetime(leads["last_contacted_at"], utc=True)
    leads = leads.assign(
        weekday=when.dt.day_of_week + 1, hour=when.dt.hour, replied=leads["count_campaigns_replied"] > 0
    )
    expected = leads.groupby(["weekday", "hour"]).agg(sends=("replied", "size"), replies=("replied", "sum"))
    assert len(grid) == 7 * 24
    cells = grid[grid["sends"] > 0].set_index(["weekday", "hour"])
    assert cells["sends"].to_dict() == expected["sends"].to_dict()
    assert cells["replies"].to_dict() == expected["replies"].to_dict()
    rates = (100 * expected["replies"] / expected["sends"]).to_dict()
    assert cells["human_reply_rate"].to_dict() == pytest.approx(rates, abs=0.005)
    assert grid.loc[grid["sends"] == 0, "human_reply_rate"].isna().all()


def _drop_engagement_columns(bi: Path) -> None:
    """A BI file as an older build published it (no human reply rate, reply classes or send times)."""
    con = duckdb.connect(str(bi))
    try:
        for column in ("human_reply_rate", "auto_reply_count", "count_contacted"):
            con.execute(f"alter table reporting.campaign_performance drop column {column}")
        con.execute("alter table reporting.reply_outcomes drop column reply_class")
        con.execute("drop table reporting.send_time_performance")
    finally:
        con.close()


def test_engagement_columns_are_read_when_present(bi: Path, tmp_path: Path) -> None:
    """The models' own engagement columns (not a mock-up): the tiles, classes and heatmap read them."""
    data = load(bi)
    assert data.features.human_reply_rate and data.features.reply_class and data.features.send_time_performance
    assert data.features.count_contacted

    human, contacted = sql(
        bi, "select sum(count_human_replied), sum(count_contacted) from reporting.campaign_performance"
    )[0]
    label, value, _ = _tiles(data)["reply_rate"]
    assert label == "human reply rate"
    assert value == round(100 * human / contacted, 2)
    for workspace_id, rate, bounce in sql(
        bi, "select workspace_id, human_reply_rate, bounce_rate from reporting.workspace_overview"
    ):
        tiles = _tiles(_in_workspace(data, workspace_id))  # a workspace's tiles are its overview row's rates
        assert (tiles["reply_rate"][1], tiles["bounce_rate"][1]) == (round(100 * rate, 2), round(100 * bounce, 2))
    campaign_id, rate = sql(
        bi,
        "select campaign_id, human_reply_rate from reporting.campaign_performance where human_reply_rate > 0 limit 1",
    )[0]
    one = dict(load(bi).campaign_parts())[campaign_id]
    assert _tiles(one)["reply_rate"][1] == round(100 * rate, 2)
    assert (
        _tiles(data)["contacted"][1] == sql(bi, "select sum(count_contacted) from reporting.campaign_performance")[0][0]
    )

    classes = outcome_classes(data.outcomes)
    expected = dict(sql(bi, "select reply_class, sum(count_replies) from reporting.reply_outcomes group by 1"))
    assert dict(zip(classes["reply_class"], classes["count_replies"], strict=True)) == expected
    assert {"positive", "negative", "neutral", "auto_reply"} <= set(expected)

    workspace_id = _workspace(bi)
    grid = send_time_grid(_in_workspace(load(bi), workspace_id).send_times).set_index(["weekday", "hour"])
    cells = sql(
        bi,
        "select weekday, hour, sends, human_reply_rate from reporting.send_time_performance where workspace_id = ?",
        [workspace_id],
    )
    assert len(cells) > 24
    for weekday, hour, sends, rate in cells:
        assert grid.loc[(weekday, hour), "sends"] == sends
        assert grid.loc[(weekday, hour), "human_reply_rate"] == pytest.approx(100 * rate, abs=0.005, nan_ok=True)
    page = write_report(bi, tmp_path / "report.html").read_text()
    assert "(reporting.send_time_performance)" in page and "Reply messages by class" in page


class _Refs(html.parser.HTMLParser):
    """Every src/href attribute and every script element of a page."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []
        self.scripts: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.refs += [value or "" for name, value in attrs if name in ("src", "href", "srcset", "action")]
        if tag == "script":
            self.scripts.append(dict(attrs))


def _drawn(data: ReportData, workers: int) -> str:
    return json.dumps(
        [(s.key, s.workspace_id, s.campaign_id, s.figures) for s in scopes(data, workers)], cls=PlotlyJSONEncoder
    )


def test_worker_processes_draw_every_scope_as_one_process_does(bi: Path) -> None:
    """Large pages are drawn by worker processes (report.workers_for): the same scopes, figures and order, and a
    worker's error reaches the caller as itself, with no worker left running."""
    data = load(bi)
    assert len(data.workspaces) == 2 and len(data.campaigns) > 2
    here = _drawn(data, 1)
    assert _drawn(data, 2) == here
    in_a_thread: list[str] = []  # as in a Prefect task: the workers cannot be started ignoring SIGINT there
    thread = threading.Thread(target=lambda: in_a_thread.append(_drawn(data, 2)))
    thread.start()
    thread.join(timeout=120)
    assert in_a_thread == [here]
    broken = replace(data, variants=data.variants.drop(columns="subject"))
    for workers in (1, 2):
        with pytest.raises(KeyError, match="subject"):
            _drawn(broken, workers)
    assert multiprocessing.active_children() == []


def test_a_ctrl_c_stops_the_worker_processes_at_once_and_quietly(bi: Path) -> None:
    """A terminal's Ctrl-C reaches the workers too: they leave it to their caller, which stops them (no traceback
    of theirs on the terminal, none left running)."""
    script = textwrap.dedent(
        f"""
        import sys, time
        from dashboard.data import load
        from dashboard.report import scopes
        drawn = scopes(load({str(bi)!r}), 2)
        next(drawn)  # "all" is drawn; the workers are starting
        try:
            print("drawing", flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            time.sleep(2)  # a worker's traceback would be written by now
            drawn.close()
            sys.exit(130)
        """
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "drawing\n"
    workers = psutil.Process(proc.pid).children()
    assert len([w for w in workers if "spawn_main" in " ".join(w.cmdline())]) == 2
    os.killpg(proc.pid, signal.SIGINT)
    output = proc.communicate(timeout=30)[0]
    assert proc.returncode == 130 and "Traceback" not in output, output
    _, alive = psutil.wait_procs(workers, timeout=10)
    assert alive == []


@pytest.mark.parametrize("which", ["bi", "old_bi"])
def test_every_figure_of_every_scope_is_one_plotly_accepts(which: str, request: pytest.FixtureRequest) -> None:
    """The charts write plotly's JSON form themselves; plotly's figure objects validate every property and value
    of it (a ValueError naming the property otherwise), for the newer marts' columns and the fallbacks. Every
    trace is of a type the page's plotly.js has (it has only those: dashboard/page.py PLOTLY_TRACES)."""
    kinds: dict[str, set[str]] = {chart.key: set() for chart in CHARTS}
    types: set[str] = set()
    for scope in scopes(load(request.getfixturevalue(which))):
        for key, figure in scope.figures.items():
            go.Figure(figure)
            types.update(trace["type"] for trace in figure["data"])
            empty = any("visible" in axis for name, axis in figure["layout"].items() if "axis" in name)
            kinds[key].add("empty" if empty else "drawn")
    assert all("drawn" in drawn for drawn in kinds.values()), kinds  # every chart drew data somewhere
    assert "empty" in kinds["variants"]  # and a campaign without an A/B test shows its empty state
    assert types == set(PLOTLY_TRACES)  # none missing from the bundle, and none in it for nothing


def test_page_is_self_contained_and_ships_aggregates_only(bi: Path, tmp_path: Path) -> None:
    out = write_report(bi, tmp_path / "report.html")
    page = out.read_text(encoding="utf-8")
    refs = _Refs()
    refs.feed(page)
    assert refs.refs == []  # no src, href or action at all: nothing can be fetched
    assert refs.scripts == [{}, {"type": "application/gzip", "id": "report-data"}, {}]  # inline only
    assert page.count(plotly_js()[:500]) == 1  # plotly.js inlined once
    assert "<link" not in page and "@import" not in page

    store = embedded_store(page)
    campaigns = sql(bi, "select count(*) from reporting.campaign_performance")[0][0]
    workspaces = sql(bi, "select count(*) from reporting.workspace_overview")[0][0]
    assert len(store["scopes"]) == 1 + workspaces + campaigns
    leads = [r[0] for r in sql(bi, "select lead_email from reporting.lead_engagement")]
    unpacked = json.dumps(store)
    assert leads and not [lead for lead in leads if lead in page or lead in unpacked]  # no lead (a raw row) is sent
    assert not list(tmp_path.glob(".report.html.*"))  # written through a temporary file, renamed


def _locking_writer(path: Path) -> subprocess.Popen[str]:
    holder = textwrap.dedent(
        """
        import sys, duckdb
        con = duckdb.connect(sys.argv[1])
        print("open", flush=True)
        sys.stdin.readline()
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", holder, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "open"
    return process


def _error(bi: Path, out: Path) -> str:
    with pytest.raises(ReportError) as caught:
        write_report(bi, out)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_errors_name_cause_and_fix(bi: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert "does not exist: run `outreach models`" in _error(tmp_path / "missing_bi.duckdb", out)
    (tmp_path / "folder_bi.duckdb").mkdir()
    assert "is not a file" in _error(tmp_path / "folder_bi.duckdb", out)
    junk = tmp_path / "junk_bi.duckdb"
    junk.write_bytes(b"this is not a database, but it is long enough")
    assert "is not a DuckDB file" in _error(junk, out)

    old = tmp_path / "old_bi.duckdb"
    shutil.copy(bi, old)
    con = duckdb.connect(str(old))
    con.execute("drop table reporting.variant_performance")
    con.close()
    assert "has no reporting.variant_performance: run `outreach models`" in _error(old, out)

    locked = tmp_path / "locked_bi.duckdb"
    shutil.copy(bi, locked)
    writer = _locking_writer(locked)
    try:
        assert "holds it open for writing; close it" in _error(locked, out)
    finally:
        assert writer.stdin is not None
        writer.stdin.write("\n")
        writer.stdin.close()
        writer.wait(timeout=30)

    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert "cannot write the report to" in _error(bi, a_file / "report.html")
    assert not out.exists()


def test_a_file_that_is_not_a_page_is_never_replaced(bi: Path, tmp_path: Path) -> None:
    """`--out` naming the warehouse (or its BI file) replaced the database with the page: every row was gone."""
    warehouse = tmp_path / "w.duckdb"
    shutil.copy(bi, warehouse)
    before = warehouse.read_bytes()
    done = _cli("--duckdb", str(warehouse), "--out", str(warehouse), cwd=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"error: {warehouse} exists and is not an HTML page, which a report would replace: pass --out with another path"
    ]
    assert warehouse.read_bytes() == before
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    assert "is not an HTML page" in _error(bi, notes) and notes.read_text() == "mine"
    assert _error(bi, tmp_path) == (
        f"{tmp_path} is a directory: pass --out with the path of an HTML file ({tmp_path / 'report.html'})"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "w.duckdb"]  # no temporary file left

    # what is not a regular file is refused unread: a named pipe (as `/dev/stdout` is in a pipeline) blocked the
    # check for ever, and a device (`--out /dev/null`) was replaced by the page, the system's /dev/null with it
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    done = _cli("--duckdb", str(warehouse), "--out", str(fifo), cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()) == (
        1, [f"error: {fifo} exists and is not an HTML page, which a report would replace: pass --out with another path"]
    )  # fmt: skip
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    fifo.unlink()

    # an earlier report, and an empty file, are replaced
    page = write_report(bi, tmp_path / "r.html")
    page.write_text("<!DOCTYPE HTML>\n<p>an older page</p>")
    assert write_report(bi, page).read_text().startswith("<!doctype html>")
    (tmp_path / "empty.html").touch()
    assert write_report(bi, tmp_path / "empty.html").stat().st_size > 1_000_000


def test_a_symbolic_link_is_written_through(bi: Path, tmp_path: Path) -> None:
    """`--out` naming a symbolic link (a site's `report.html` into its current release) put the page in place of
    the link, and the release's file kept the old page."""
    release = tmp_path / "release"
    release.mkdir()
    (release / "report.html").write_text("<!doctype html><p>an older page</p>")
    link = tmp_path / "report.html"
    link.symlink_to(release / "report.html")
    assert write_report(bi, link) == link
    assert link.is_symlink() and (release / "report.html").stat().st_size > 1_000_000
    # a link to what is not a page is refused, naming the file it points to; a dangling one makes its file
    (release / "notes.txt").write_text("mine")
    (tmp_path / "notes.html").symlink_to(release / "notes.txt")
    assert _error(bi, tmp_path / "notes.html").startswith(f"{release / 'notes.txt'} exists and is not an HTML page")
    (tmp_path / "new.html").symlink_to(release / "new.html")
    write_report(bi, tmp_path / "new.html")
    assert (tmp_path / "new.html").is_symlink() and (release / "new.html").stat().st_size > 1_000_000
    assert sorted(p.name for p in release.iterdir()) == ["new.html", "notes.txt", "report.html"]  # no temporary file


def _cli(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROOT / ".venv" / "bin" / "outreach"), "report", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        check=False,
    )


def test_cli_default_paths_setting_and_errors(bi: Path, tmp_path: Path) -> None:
    warehouse_dir = tmp_path / "wh"
    warehouse_dir.mkdir()
    shutil.copy(bi, warehouse_dir / "w_bi.duckdb")

    done = _cli(cwd=tmp_path, env={"SOURCES__OUTREACH__DUCKDB_PATH": str(warehouse_dir / "w.duckdb")})
    assert done.returncode == 0, done.stderr
    assert (warehouse_dir / "report.html").stat().st_size > 1_000_000
    assert str(warehouse_dir / "report.html") in done.stdout

    done = _cli("--duckdb", str(warehouse_dir / "w.duckdb"), "--out", "x/r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x" / "r.html").exists()

    # the setting is read as every command reads it: `~` is the home folder (the report looked in a folder named
    # `~`), and a PostgreSQL warehouse has no BI file (the report read the default file's)
    (warehouse_dir / "report.html").unlink()
    done = _cli(cwd=tmp_path, env={"HOME": str(tmp_path), "SOURCES__OUTREACH__DUCKDB_PATH": "~/wh/w.duckdb"})
    assert done.returncode == 0 and (warehouse_dir / "report.html").exists(), done.stderr
    # and the flags the same: `--duckdb=~/...` and `--out=~/...` (no shell expands ~ after `=`) were folders named `~`
    # beside the command, and `--out "   "` a file named so
    done = _cli("--duckdb=~/wh/w.duckdb", "--out=~/mine/r.html", cwd=tmp_path, env={"HOME": str(tmp_path)})
    assert done.returncode == 0 and (tmp_path / "mine" / "r.html").exists(), done.stderr
    done = _cli("--duckdb", "   ", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, (
        "error: --duckdb is blank: give a path, or leave it out for the default\n"
    ))  # fmt: skip
    done = _cli("--out", "   ", "--duckdb", str(warehouse_dir / "w.duckdb"), cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        1,
        "error: --out is blank: give a path, or leave it out for the default\n",
    )
    assert not (tmp_path / "~").exists() and not (tmp_path / "   ").exists()
    done = _cli(cwd=tmp_path, env={"SOURCES__OUTREACH__DESTINATION": "postgres"})
    assert (done.returncode, done.stderr) == (1, (
        "error: the report reads the BI file of a DuckDB warehouse, and the configured one is postgres: pass "
        "--duckdb with a DuckDB warehouse\n"
    ))  # fmt: skip

    done = _cli(cwd=tmp_path)  # default data/outreach.duckdb: no BI file there
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"error: BI file {tmp_path / 'data' / 'outreach_bi.duckdb'} does not exist: run `outreach models` to "
        "publish it (or pass --duckdb with the warehouse it sits beside)"
    )
    done = _cli("--duckdb", str(warehouse_dir / "w_bi.duckdb"), cwd=tmp_path)
    assert done.returncode == 1
    assert (
        done.stderr.strip() == f"error: {warehouse_dir / 'w_bi.duckdb'} is a BI file: pass --duckdb with its "
        "warehouse (w.duckdb beside it)"
    )


def test_the_build_writes_the_dashboard_beside_its_warehouse(bi: Path, tmp_path: Path) -> None:
    from flows.stages import write_dashboard  # the build flow's write-dashboard task (the demo's too)

    shutil.copy(bi, tmp_path / "outreach_bi.duckdb")
    line = write_dashboard(str(tmp_path / "outreach_bi.duckdb"))
    assert line.startswith("[report.html](") and str((tmp_path / "report.html").resolve()) in line, line
    assert (tmp_path / "report.html").stat().st_size > 1_000_000


def test_the_report_says_its_stage_and_the_scopes_drawn_of_all(bi: Path, tmp_path: Path) -> None:
    """An agency's page took about 20 s with nothing shown: the report now shows its stage and its scopes (the
    whole page, each workspace, each campaign) drawn of all, as the build shows its nodes."""
    from pipelines.core.progress import StageProgress

    class Recorded(StageProgress):
        def __init__(self) -> None:
            super().__init__("report", "scopes")
            self.seen: list[tuple[str, int, int]] = []  # each stage left: its name, done, of all

        def set_stage(self, stage: str, total: int = 0) -> None:
            self.seen.append((self.stage, self.done, self.total))
            super().set_stage(stage, total)

    shown = Recorded()
    write_report(bi, tmp_path / "r.html", shown)
    ((workspaces, campaigns),) = sql(
        bi, "select count(distinct workspace_id), count(*) from reporting.campaign_performance"
    )
    scopes_drawn = 1 + workspaces + campaigns
    assert shown.seen == [("starting", 0, 0), ("reading the BI file", 0, 0), ("drawing", scopes_drawn, scopes_drawn)]
    assert shown.stage == "writing the page" and shown.line().startswith("writing the page · ")
    shown.set_stage("drawing", total=9)
    shown.advance(4)
    assert shown.plain_lines()[0][1].startswith("progress report: drawing: 4/9 scopes · ")
