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
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from flows import stages
from pipelines.errors import ConfigError

logger = logging.getLogger(__name__)

DEMO_RATE_LIMIT = 6000  # requests a minute, sandbox and client alike
SIMULATED_DAY_S = 86_400
MARKER_SUFFIX = ".demo"  # `<warehouse>.demo` marks a warehouse the demo made and may replace


def _say(text: str = "") -> None:
    """Demo output is the command's output: straight to stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def demo_pipelines_dir(warehouse: Path) -> Path:
    """dlt state of the demo lives beside its warehouse, never in the user's ~/.dlt."""
    return warehouse.with_name(f".{warehouse.stem}_demo_dlt")


def prepare_warehouse(warehouse: Path) -> None:
    """Start from an empty warehouse; refuse to touch one the demo did not make."""
    marker = warehouse.with_name(warehouse.name + MARKER_SUFFIX)
    if warehouse.exists() and not marker.exists():
        raise ConfigError(
            f"{warehouse} exists and was not made by the demo: pass --duckdb with another path "
            "(the demo replaces its own warehouse only)"
        )
    for path in (warehouse, warehouse.with_name(warehouse.name + ".wal"), stages.bi_path_for(warehouse)):
        path.unlink(missing_ok=True)
    shutil.rmtree(demo_pipelines_dir(warehouse), ignore_errors=True)
    warehouse.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("made by `outreach demo`; the next demo run replaces this warehouse\n")


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


def _run(mode: str, refs: list[str], warehouse: Path, base_url: str) -> str:
    """Run ``sync_all`` once; return a line of its figures. Raises if the flow fails."""
    from flows.sync_flow import sync_all

    started = time.monotonic()
    results = sync_all(
        mode=mode,  # type: ignore[arg-type]
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


def _shown(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def next_steps(warehouse: Path) -> str:
    """How to query the result and how to point the pipeline at a real API key."""
    bi = _shown(stages.bi_path_for(warehouse))
    return "\n".join(
        [
            "Query the result (the BI file holds schema `reporting`; the warehouse also has raw `outreach`):",
            f"  duckdb {bi} -c \"select * from reporting.campaign_performance limit 5\"   # duckdb CLI",
            f"  .venv/bin/python -c \"import duckdb; print(duckdb.connect('{bi}', read_only=True)"
            ".execute('select * from reporting.workspace_overview').df())\"",
            "",
            "Point it at the real API:",
            "  export SOURCES__OUTREACH__BASE_URL=https://<your host>/api/v1",
            "  export SOURCES__OUTREACH__API_KEY=<your key>   # or api_keys = [...] in .dlt/secrets.toml",
            "  outreach sync --mode full && outreach models   # one run",
            "  outreach serve                                  # quick every 15 min, full nightly (prefect.yaml)",
        ]
    )


def run_demo(scale: str = "small", duckdb_path: str | Path | None = None) -> None:
    """Run the demo end to end; leaves the warehouse and its BI file, and no process.

    A failure prints ``error: <cause and fix>`` on stderr and exits 1 (the flow runs' logs above
    it hold the details).
    """
    from models.errors import ModelError
    from pipelines.errors import OutreachError

    try:
        _run_demo(scale, duckdb_path)
    except (OutreachError, ModelError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(1) from None


def _run_demo(scale: str, duckdb_path: str | Path | None) -> None:
    from flows.prefect_api import prefect_api
    from sandbox.server import SandboxServer

    warehouse = Path(stages.warehouse_path(duckdb_path))
    started = time.monotonic()
    prepare_warehouse(warehouse)
    _say(f"outreach demo: sandbox scale {scale!r}, warehouse {warehouse}")
    sandbox = SandboxServer(scale=scale, rate_limit=DEMO_RATE_LIMIT)
    from prefect.settings import PREFECT_API_URL

    temporary = not PREFECT_API_URL.value()
    with prefect_api() as api_url:
        _say(f"Prefect API: {api_url}" + (" (a temporary local server, stopped at the end)" if temporary else ""))
        sandbox.start()
        try:
            _say(f"sandbox listening on {sandbox.url} (rate limit {DEMO_RATE_LIMIT}/min)")
            refs = store_keys_as_secrets(sandbox.keys())
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
    _say(next_steps(warehouse))
    _say(f"\ndemo finished in {time.monotonic() - started:.0f} s; sandbox and Prefect server stopped.")
