"""``write_report``: BI file in, one self-contained HTML file out.

The figures are computed here for every scope the page can filter to (every workspace
together, each workspace, each campaign), from aggregates only; the page swaps between them
in the browser. Campaign scopes carry only the campaign-grain charts: mailbox health and the
send-time heatmap belong to the campaign's workspace.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from dashboard import charts, metrics, workspace_charts, workspace_metrics
from dashboard.bi_file import check_bi_path
from dashboard.chart_style import Figure
from dashboard.data import ReportData, load
from dashboard.errors import ReportError
from dashboard.incidents import open_incidents_html
from dashboard.page import Chart, Scope, render_page
from dashboard.paths import REPORT_NAME
from dashboard.workers import Workers
from pipelines.core.outputs import replaceable, through_links
from pipelines.core.progress import StageProgress

#: Fewer scopes than this are drawn in this process alone: a worker process starts in about a second (importing
#: pandas and plotly), the time of some 100 scopes (by hand, 2 cores, 2026-11-30: at 503 scopes two workers took
#: 2.0 to 2.7 s, one process 2.5 to 2.7 s).
PARALLEL_MIN_SCOPES = 500
MAX_WORKERS = 4
HTML_STARTS = (b"<!doctype html", b"<html")  # how a page starts: what `--out` may write over
SHARES_PER_WORKER = 4


def _rate_label(data: ReportData) -> str:
    return "human reply rate" if data.features.send_time_performance else "reply rate of leads"


CHARTS: tuple[Chart, ...] = (
    Chart(
        "kpi",
        "Overview",
        lambda d: (
            "Contacted: recipients sent at least one message. Positive: recipients with a positive reply. "
            f"Healthy mailbox: active, reputation at least {metrics.HEALTHY_REPUTATION:g} and warmup health (when on) "
            f"at least {metrics.HEALTHY_WARMUP:g}; a campaign shows its workspace's mailboxes."
        ),
        lambda d: charts.kpi_figure(metrics.kpi_tiles(d.campaigns, d.mailboxes, d.features)),
    ),
    Chart(
        "funnel",
        "Campaign funnel",
        lambda d: (
            "Recipients at each stage, each a subset of the one before (reporting.campaign_performance; the "
            "metric dictionary in `outreach docs` defines each); percentages of contacted."
        ),
        lambda d: charts.funnel_figure(metrics.funnel_stages(d.campaigns, d.features)),
    ),
    Chart(
        "outcomes",
        "Reply outcomes",
        lambda d: (
            "Reply messages by class (reporting.reply_outcomes)."
            if d.features.reply_class
            else "Reply messages by the service's reply_type, green when it counts as positive "
            "(reporting.reply_outcomes; reply classes come with a later models release)."
        ),
        lambda d: charts.outcomes_figure(metrics.outcome_classes(d.outcomes), d.features.reply_class),
    ),
    Chart(
        "daily",
        "Sends and replies per day",
        lambda d: (
            "Every day the warehouse kept (beyond the API's 14 days): messages sent, reply messages received "
            "(reporting.campaign_daily). Sends are known only on days a sync observed: a gap is unknown, not 0."
        ),
        lambda d: charts.daily_figure(metrics.daily_series(d.daily)),
    ),
    Chart(
        "variants",
        "A/B variants",
        lambda d: (
            "Reply rate of each subject line per estimated recipient, with its 95% Wilson interval; a winner (gold) "
            "needs 100+ estimated recipients in every arm and a Holm-adjusted p < 0.05 against each other variant "
            f"(reporting.variant_performance). Grey: under {metrics.MIN_SAMPLE} recipients (n shown)."
        ),
        lambda d: charts.variants_figure(metrics.variant_rows(d.variants, d.campaigns)),
    ),
    Chart(
        "mailboxes",
        "Mailbox health over time",
        lambda d: (
            f"Reputation, warmup health (mailboxes with warmup on) and utilisation per day "
            f"(reporting.mailbox_daily); more than {metrics.MAX_MAILBOX_LINES} mailboxes: their mean and range."
        ),
        lambda d: workspace_charts.mailbox_figure(workspace_metrics.mailbox_series(d.mailbox_daily)),
        workspace_grain=True,
    ),
    Chart(
        "send_times",
        "Reply rate by weekday and hour",
        lambda d: (
            "Human reply rate by the weekday and hour of sending, in each campaign's time zone "
            "(reporting.send_time_performance); several workspaces: weighted by sends. Grey: under "
            f"{metrics.MIN_SAMPLE} recipients (n shown)."
            if d.features.send_time_performance
            else "Share of leads who replied, by the UTC weekday and hour of their last contact "
            "(reporting.lead_engagement; send-time performance comes with a later models release)."
        ),
        lambda d: workspace_charts.send_time_figure(workspace_metrics.send_time_grid(d.send_times), _rate_label(d)),
        workspace_grain=True,
    ),
)


def _figures(data: ReportData, *, campaign: bool) -> dict[str, Figure]:
    return {c.key: c.draw(data) for c in CHARTS if not (campaign and c.workspace_grain)}


def _workspace_scopes(data: ReportData) -> list[Scope]:
    """The scope of each workspace of ``data`` and of each of its campaigns, in order."""
    out = []
    for workspace_id, workspace in data.workspace_parts():
        out.append(Scope(f"w:{workspace_id}", workspace_id, "", _figures(workspace, campaign=False)))
        out.extend(
            Scope(f"c:{campaign_id}", workspace_id, campaign_id, _figures(campaign, campaign=True))
            for campaign_id, campaign in workspace.campaign_parts()
        )
    return out


def workers_for(data: ReportData) -> int:
    """How many processes draw the scopes: one below ``PARALLEL_MIN_SCOPES``, else one per CPU up to
    ``MAX_WORKERS``."""
    if 1 + len(data.workspaces) + len(data.campaigns) < PARALLEL_MIN_SCOPES:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()  # Linux, or others
    return max(1, min(MAX_WORKERS, cpus or 1))


def scopes(data: ReportData, workers: int = 1) -> Iterator[Scope]:
    """Every scope of the page with its figures, in order: all, then each workspace followed by its campaigns.

    With several workers, runs of workspaces are drawn in worker processes while this one draws "all"."""
    if workers <= 1:
        yield Scope("all", "", "", _figures(data, campaign=False))
        yield from _workspace_scopes(data)
        return
    # a few runs per worker, dealt in turn: the workers' loads even out
    with Workers(_workspace_scopes, data.workspace_shares(SHARES_PER_WORKER * workers), workers) as started:
        yield Scope("all", "", "", _figures(data, campaign=False))
        for share in started.results():
            yield from share


def render_report(bi_path: str | Path, progress: StageProgress | None = None) -> str:
    """The report's HTML for the BI file; `progress` shows its stage and the scopes drawn of all."""
    progress = progress or StageProgress("report", "scopes")
    path = Path(bi_path)
    progress.set_stage("reading the BI file")
    data = load(path)
    progress.set_stage("drawing", total=1 + len(data.workspaces) + len(data.campaigns))
    drawn = _counted(scopes(data, workers_for(data)), progress)
    return render_page(data, CHARTS, drawn, source=path.name, alerts=open_incidents_html(path))


def _counted(drawn: Iterator[Scope], progress: StageProgress) -> Iterator[Scope]:
    for scope in drawn:
        progress.advance()
        yield scope
    progress.set_stage("writing the page")  # every figure drawn: the page is made of them next


def write_report(bi_path: str | Path, out_path: str | Path, progress: StageProgress | None = None) -> Path:
    """Write the dashboard of the BI file to ``out_path`` (atomically: a reader never sees half a file).

    The path is checked before the page is drawn (seconds for an agency): a file there that is not an HTML page,
    such as the warehouse given as ``--out`` by mistake, is never replaced, and a path that cannot be written fails
    at once. Raises :class:`dashboard.errors.ReportError` with a one-line cause and fix. A page of
    ``PARALLEL_MIN_SCOPES`` scopes or more is drawn in spawned worker processes, which import the calling script
    again: a script calling this needs Python's ``if __name__ == "__main__":`` guard, as for any
    ``multiprocessing``.
    """
    out = through_links(Path(out_path))
    _refuse_to_replace(out)
    check_bi_path(Path(bi_path))  # before the page's folder is made
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
        os.close(fd)
    except OSError as exc:
        raise _cannot_write(out, exc) from exc
    tmp = Path(name)
    try:
        html = render_report(bi_path, progress)
        try:
            tmp.write_text(html, encoding="utf-8")
            tmp.chmod(0o644)
            os.replace(tmp, out)
        except OSError as exc:
            raise _cannot_write(out, exc) from exc
    finally:
        tmp.unlink(missing_ok=True)
    return Path(out_path)


def _refuse_to_replace(out: Path) -> None:
    """Fails unless ``out`` is free or holds an HTML page (an earlier report)."""
    if out.is_dir():
        raise ReportError(f"{out} is a directory: pass --out with the path of an HTML file ({out / REPORT_NAME})")
    try:
        page = replaceable(out, lambda start: start.lstrip(b"\xef\xbb\xbf \t\r\n").lower().startswith(HTML_STARTS))
    except OSError as exc:
        raise _cannot_write(out, exc) from exc
    if not page:
        raise ReportError(
            f"{out} exists and is not an HTML page, which a report would replace: pass --out with another path"
        )


def _cannot_write(out: Path, exc: OSError) -> ReportError:
    return ReportError(f"cannot write the report to {out}: {exc.strerror or exc} (pass --out with a writable path)")
