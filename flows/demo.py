"""``outreach demo``: the whole product end to end against a local sandbox, in one command.

Starts a sandbox on a free loopback port, stores its two workspaces' read keys as Prefect
Secret blocks, runs a full ``sync_all`` flow (extract, load, models, data tests, BI publish),
advances the sandbox clock a simulated day, runs a quick ``sync_all``, prints a summary from
the reporting tables, then says how to query the result and how to use a real API key.

The sandbox's rate limit is raised to ``DEMO_RATE_LIMIT`` (and the client paces to the same
figure) so the demo takes seconds, not the minutes 120 requests a minute would need.
"""

from __future__ import annotations

import logging
import shlex
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Literal

from flows import demo_alerts, stages
from flows.shell import command, shown_path
from pipelines import demo_guard
from pipelines.errors import ConfigError

logger = logging.getLogger(__name__)

DEMO_RATE_LIMIT = 6000  # requests a minute, sandbox and client alike
SIMULATED_DAY_S = 86_400


def _say(text: str = "") -> None:
    """Demo output is the command's output: straight to stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def demo_pipelines_dir(warehouse: Path) -> Path:
    """dlt state of the demo lives beside its warehouse, never in the user's ~/.dlt."""
    return warehouse.with_name(f".{warehouse.stem}_demo_dlt")


def demo_files(warehouse: Path) -> list[Path]:
    """Every file the demo writes for a warehouse (the marker last: it is what lets the demo replace them)."""
    return [
        warehouse,
        warehouse.with_name(warehouse.name + ".wal"),
        stages.bi_path_for(warehouse),
        demo_guard.marker_path(warehouse),
    ]


def prepare_warehouse(warehouse: Path) -> None:
    """Remove the previous demo's files; refuse, in one line, to touch anything the demo did not make.

    The demo replaces a warehouse only if its marker says the demo made it and every workspace in
    it is one the demo listed there: real data synced into a demo warehouse is never deleted.
    """
    marker = demo_guard.read_marker(warehouse)
    bi = stages.bi_path_for(warehouse)
    if marker is None and (warehouse.exists() or bi.exists()):
        existing = warehouse if warehouse.exists() else bi
        raise ConfigError(
            f"{shown_path(existing)} exists and was not made by the demo: pass --duckdb with another path, "
            "e.g. --duckdb data/demo.duckdb (the demo replaces its own warehouse only)"
        )
    if marker is not None and warehouse.exists():
        foreign = sorted(demo_guard.workspaces_in(warehouse) - marker.workspace_ids)
        if foreign:
            raise ConfigError(
                f"{shown_path(warehouse)} holds {len(foreign)} workspace(s) the demo did not create "
                f"({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}): the demo leaves it alone; pass --duckdb data/demo.duckdb"
            )
    for path in demo_files(warehouse):
        path.unlink(missing_ok=True)
    shutil.rmtree(demo_pipelines_dir(warehouse), ignore_errors=True)
    warehouse.parent.mkdir(parents=True, exist_ok=True)


def sandbox_workspace_ids(keys: list[dict[str, Any]]) -> list[str]:
    """The workspace ids the sandbox lists at /_sandbox/keys."""
    return sorted({str(entry["workspace_id"]) for entry in keys})


def store_keys_as_secrets(keys: list[dict[str, Any]], prefix: str = "outreach-demo") -> list[str]:
    """Save one read key per workspace as a Prefect Secret block; return the references."""
    from prefect.blocks.system import Secret

    refs: list[str] = []
    seen: set[str] = set()
    for entry in keys:
        if entry.get("level") != "read" or entry["workspace_id"] in seen:
            continue
        seen.add(entry["workspace_id"])
        name = f"{prefix}-{len(refs) + 1}"
        Secret(value=entry["key"]).save(name, overwrite=True)
        refs.append(f"secret:{name}")
    if not refs:
        raise ConfigError("the sandbox listed no read keys at /_sandbox/keys: restart it")
    return refs


def _run(mode: Literal["quick", "full"], refs: list[str], warehouse: Path, base_url: str) -> str:
    """Run ``sync_all`` once; return a line of its figures. Raises if the flow fails."""
    from flows.sync_flow import sync_all

    started = time.monotonic()
    results = sync_all(
        mode=mode,
        key_refs=refs,
        duckdb_path=str(warehouse),
        base_url=base_url,
        rate_limit_per_minute=DEMO_RATE_LIMIT,
        pipelines_dir=str(demo_pipelines_dir(warehouse)),
    )
    reports = [r.sync_report for r in results if r.sync_report is not None]
    requests = sum(r.requests for r in reports)
    throttled = sum(r.rate_limited for r in reports)
    deferred = sum(r.bodies_deferred for r in reports)
    rows = sum(sum(r.rows.values()) for r in reports)
    return (
        f"{mode} sync done in {time.monotonic() - started:.1f} s: {len(reports)} workspaces, "
        f"{requests} requests, {throttled} 429s, {rows:,} rows extracted, {deferred} reply bodies deferred"
    )


def summary_text(bi_path: Path) -> str:
    """The summary the demo prints, from the BI file's reporting tables."""
    from models.summary import demo_summary

    return str(demo_summary(bi_path))


def write_dashboard(warehouse: Path) -> str:
    """Write the HTML dashboard beside the warehouse; the line telling where it is."""
    from dashboard import bi_path_for, report_path_for, write_report

    report = write_report(bi_path_for(warehouse), report_path_for(warehouse))
    return f"Dashboard: {shown_path(report)} (open it in a browser; `outreach report` writes it again)"


def next_steps(warehouse: Path) -> str:
    """How to query the result, and how to point the pipeline at a real key without mixing it with the demo."""
    bi = shown_path(stages.bi_path_for(warehouse))
    mine = shlex.quote(shown_path(warehouse.with_name("mine.duckdb")))
    outreach = command("outreach")
    python = shlex.quote(shown_path(Path(sys.executable)))
    dlt_dir = shlex.quote(shown_path(demo_pipelines_dir(warehouse)))
    demo_files = f"{shlex.quote(shown_path(warehouse))}* {shlex.quote(bi)} {dlt_dir}"
    return "\n".join(
        [
            "Query the result (the BI file holds schema `reporting`; the warehouse also has raw `outreach`):",
            f'  duckdb {bi} -c "select * from reporting.campaign_performance limit 5"   # duckdb CLI',
            (
                f"  {python} -c \"import duckdb; print(duckdb.connect('{bi}', read_only=True)"
                ".execute('select * from reporting.workspace_overview').df())\""
            ),
            "",
            f"Point it at the real API, in a warehouse of its own ({shown_path(warehouse)} holds the demo's sandbox",
            "workspaces and refuses any other):",
            "  export SOURCES__OUTREACH__BASE_URL=https://<your host>/api/v1",
            "  export SOURCES__OUTREACH__API_KEY=<your key>   # or api_keys = [...] in .dlt/secrets.toml",
            f"  {outreach} sync --mode full --duckdb {mine} && {outreach} models --duckdb {mine}",
            "Or remove the demo's files, then use the defaults (outreach sync, outreach models, outreach serve):",
            f"  rm -rf {demo_files}",
        ]
    )


def run_demo(scale: str = "small", duckdb_path: str | Path | None = None) -> None:
    """Run the demo end to end; leaves the warehouse and its BI file, and no process.

    A failure prints ``error: <cause and fix>`` on stderr and exits 1 (the flow runs' logs above
    it hold the details).
    """
    from dashboard import ReportError
    from models.errors import ModelError
    from pipelines.errors import OutreachError

    try:
        _run_demo(scale, duckdb_path)
    except (OutreachError, ModelError, ReportError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(1) from None


def _run_demo(scale: str, duckdb_path: str | Path | None) -> None:
    from flows.prefect_api import prefect_api
    from sandbox.server import SandboxServer

    warehouse = Path(stages.warehouse_path(duckdb_path))
    started = time.monotonic()
    prepare_warehouse(warehouse)
    _say(f"outreach demo: sandbox scale {scale!r}, warehouse {warehouse}")
    sandbox = SandboxServer(scale=scale, rate_limit=DEMO_RATE_LIMIT, scenario=demo_alerts.SCENARIO)
    with prefect_api(ui=False) as api, demo_alerts.alert_sink() as alert_sink:
        _say(f"Prefect API: {api.url}" + (" (a temporary local server, stopped at the end)" if api.temporary else ""))
        sandbox.start()
        try:
            _say(f"sandbox listening on {sandbox.url} (rate limit {DEMO_RATE_LIMIT}/min)")
            keys = sandbox.keys()
            demo_guard.write_marker(warehouse, sandbox_workspace_ids(keys))
            refs = store_keys_as_secrets(keys)
            _say(f"workspaces: {', '.join(refs)} (read keys saved as Prefect Secret blocks)")
            _say("\n[1/2] full sync, models, data tests, BI publish ...")
            _say(_run("full", refs, warehouse, sandbox.base_url))
            now = sandbox.advance(SIMULATED_DAY_S)
            _say(f"\nsandbox clock advanced one simulated day (now {now})")
            _say("[2/2] quick sync, models, data tests, BI publish ...")
            _say(_run("quick", refs, warehouse, sandbox.base_url))
        finally:
            sandbox.stop()
    _say("")
    _say(summary_text(stages.bi_path_for(warehouse)))
    _say("")
    _say(demo_alerts.alerts_text(warehouse, alert_sink))
    _say("")
    _say(write_dashboard(warehouse))
    _say("")
    _say(next_steps(warehouse))
    stopped = "sandbox and Prefect server stopped" if api.temporary else "sandbox stopped"
    _say(f"\ndemo finished in {time.monotonic() - started:.0f} s; {stopped}.")
