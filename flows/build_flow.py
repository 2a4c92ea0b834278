"""``build_reporting``: the models, the data tests, the BI file and the dashboard as a flow of their own.

What ``sync_all`` runs after its syncs, for a caller that syncs first and builds later (``outreach demo``
syncs twice and builds once), with the same tasks, lock and artifact.
"""

from __future__ import annotations

from prefect import flow, get_run_logger

from flows.run_report import StageClock, render_run_markdown
from flows.sync_flow import settings_for
from flows.tasks import models_stages, publish_report_task


@flow(name="build-reporting", persist_result=False, validate_parameters=True)
def build_reporting(duckdb_path: str | None = None) -> dict[str, float]:
    """Build the models, run the data tests, publish the BI file and draw the dashboard; returns the seconds
    of each stage."""
    settings = settings_for(duckdb_path=duckdb_path)
    clock = StageClock()
    build_report, dashboard = models_stages(settings, clock)
    markdown = render_run_markdown(
        title="outreach models",
        mode="build",
        workspaces=[],
        run_stages=clock.seconds,
        build_report=build_report,
        dashboard=dashboard,
    )
    publish_report_task(markdown, "outreach-build-reporting", "models, data tests, BI file and dashboard")
    get_run_logger().info("reporting built in %.1f s", sum(clock.seconds.values()))
    return clock.seconds
