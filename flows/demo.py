"""``outreach demo``: the whole product end to end against a local sandbox, in one command.

Starts a sandbox (in a process of its own, on a free loopback port) while the Prefect API starts,
stores its two workspaces' read keys as Prefect Secret blocks, runs a full ``sync_all`` flow,
advances the sandbox clock a simulated day, runs a quick ``sync_all``, then builds the models, runs
the data tests, publishes the BI file and draws the dashboard once (``build_reporting``), prints a summary from
the reporting tables, then says how to query the result and how to use a real API key. Each step
is a small function in ``STEPS`` and prints its time.

The sandbox's rate limit is raised to ``DEMO_RATE_LIMIT`` (and the client paces to the same
figure) so the demo takes seconds, not the minutes 120 requests a minute would need.
"""

from __future__ import annotations

import importlib
import signal
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

from flows import demo_alerts, demo_services, stages
from flows.demo_services import DEMO_RATE_LIMIT
from flows.demo_warehouse import demo_pipelines_dir, next_steps, prepare_warehouse
from flows.shell import command, shown_path
from pipelines.core.deadline import EXIT_CODES
from pipelines.warehouse import demo_guard

DEFAULT_SCALE = "small"
SIMULATED_DAY_S = 86_400


def _say(text: str = "") -> None:
    """Demo output is the command's output: straight to stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def sync_line(mode: str, results: list[Any], seconds: float) -> str:
    """One line of a ``sync_all`` run's figures."""
    reports = [r.sync_report for r in results if r.sync_report is not None]
    requests = sum(r.requests for r in reports)
    throttled = sum(r.rate_limited for r in reports)
    deferred = sum(r.bodies_deferred for r in reports)
    rows = sum(sum(r.rows.values()) for r in reports)
    return (
        f"{mode} sync done in {seconds:.1f} s: {len(reports)} workspaces, {requests} requests, {throttled} 429s, "
        f"{rows:,} rows extracted, {deferred} reply bodies deferred"
    )


def summary_text(bi_path: Path) -> str:
    """The summary the demo prints, from the BI file's reporting tables."""
    from models.summary import demo_summary

    return str(demo_summary(bi_path))


def run_demo(scale: str = DEFAULT_SCALE, duckdb_path: str | Path | None = None) -> None:
    """Run the demo end to end; leaves the warehouse and its BI file, and no process.

    A failure prints ``error: <cause and fix>`` on stderr and exits 1 (the flow runs' logs above
    it hold the details). Ctrl-C (or SIGTERM) stops it at once, whatever step it is in: the sandbox and the
    Prefect server are stopped, one line says where it stopped, and it exits 130 (143).
    """
    from pipelines.core.deadline import interrupted, stop_on_signals
    from pipelines.core.errors import OutreachError

    demo = Demo(scale=scale, warehouse=Path(stages.warehouse_path(duckdb_path)))
    with stop_on_signals(raise_in_main=True, again="its sandbox and Prefect server stop on their own"):
        try:
            _run_demo(demo)
        except KeyboardInterrupt:  # dbt's and Prefect's included (a BuildInterrupted is one)
            _stopped(demo, interrupted() or signal.SIGINT)
        except OutreachError as exc:
            if interrupted():  # a sync's workers stop on the signal with SyncInterrupted
                _stopped(demo, interrupted())
            sys.stderr.write(f"error: {exc}\n")
            raise SystemExit(1) from None


def _stopped(demo: Demo, number: int) -> NoReturn:
    """Say where a signal stopped the demo (its services are stopped by then) and exit as shells report it."""
    where = f"during {demo.step}" if demo.step else "before its first step"
    started = "sandbox" if demo.prefect_configured else "sandbox, Prefect server"  # a configured API is not ours
    sys.stderr.write(
        f"error: demo interrupted by {signal.Signals(number).name} {where}: every process it started ({started}) "
        "is stopped; run `outreach demo` again to start over (it replaces its own files)\n"
    )
    raise SystemExit(EXIT_CODES[signal.Signals(number)])


@dataclass
class Demo:
    """What the steps share: the warehouse, the sandbox, the key references, the clock."""

    scale: str
    warehouse: Path
    started: float = field(default_factory=time.monotonic)
    sandbox: Any = None
    refs: list[str] = field(default_factory=list)
    prefect_temporary: bool = False
    prefect_configured: bool = False  # PREFECT_API_URL names a server: the demo uses it and starts none
    alert_sink: Any = None  # the local JSON webhook the alerts notify (flows.demo_alerts)
    step: str = ""  # the step running now, as its title says it ("[2/5] full sync of ...")


@contextmanager
def step(demo: Demo, title: str) -> Iterator[None]:
    """Print a step's title, then its time when it ends. A signal whose KeyboardInterrupt was lost on its way up
    (`stop_on_signals`) stops the demo at the step's end."""
    from pipelines.core.deadline import interrupted

    demo.step = title
    _say(f"{title} ...")
    started = time.monotonic()
    yield
    if interrupted():
        raise KeyboardInterrupt
    _say(f"  done in {time.monotonic() - started:.1f} s")


def start_services(demo: Demo, stack: ExitStack) -> None:
    """Start the sandbox (building its data) in a thread, and the Prefect API; import what the later steps need
    while the API's server starts. The services stop with ``stack``. The imports run in this thread, where a
    Ctrl-C stops them (a process waits for its other threads to end before it exits), and a Ctrl-C ends the
    sandbox wherever its start is."""
    from flows.prefect_api import configured_api_url, prefect_api

    for module in demo_services.SANDBOX_IMPORTS:
        importlib.import_module(module)
    sandbox = demo_services.new_sandbox(demo.scale)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="demo-sandbox") as pool:
        starting = pool.submit(demo_services.start_sandbox, sandbox)
        try:
            demo.prefect_configured = configured_api_url() is not None
            api = stack.enter_context(prefect_api(ui=False, while_starting=demo_services.import_ahead))
            if not api.temporary:  # no server of ours started: the imports overlap the sandbox's start only
                demo_services.import_ahead()
        except BaseException:  # Ctrl-C included
            sandbox.cancel()
            starting.exception()  # its start fails at once on the ended process: that says nothing new
            sandbox.stop()  # and a sandbox whose start had returned is stopped as any
            raise
        demo.sandbox = starting.result()
    stack.callback(demo.sandbox.stop)
    demo.prefect_temporary = api.temporary
    # the deliverability scenario opens real incidents; their notifications go to a local JSON webhook
    demo.sandbox.apply_scenario(demo_alerts.SCENARIO)
    demo.alert_sink = stack.enter_context(demo_alerts.alert_sink())
    _say(f"  Prefect API: {api.url}" + (" (a temporary local server, stopped at the end)" if api.temporary else ""))
    _say(f"  sandbox: {demo.sandbox.url} (rate limit {DEMO_RATE_LIMIT}/min)")
    keys = demo.sandbox.keys()
    demo_guard.write_marker(demo.warehouse, demo_services.sandbox_workspace_ids(keys))
    demo.refs = demo_services.store_keys_as_secrets(keys)
    _say(f"  workspaces: {', '.join(demo.refs)} (read keys saved as Prefect Secret blocks)")


def run_sync_flow(demo: Demo, mode: Literal["quick", "full"], *, build_models: bool) -> None:
    """One ``sync_all`` flow run; raises if it fails."""
    from flows.sync_flow import sync_all

    started = time.monotonic()
    results = sync_all(
        mode=mode,
        key_refs=demo.refs,
        duckdb_path=str(demo.warehouse),
        base_url=demo.sandbox.base_url,
        rate_limit_per_minute=DEMO_RATE_LIMIT,
        pipelines_dir=str(demo_pipelines_dir(demo.warehouse)),
        build_models=build_models,
    )
    _say("  " + sync_line(mode, results, time.monotonic() - started))


def full_sync(demo: Demo) -> None:
    run_sync_flow(demo, "full", build_models=False)


def advance_day(demo: Demo) -> None:
    _say(f"  sandbox clock now {demo.sandbox.advance(SIMULATED_DAY_S)}")


def quick_sync(demo: Demo) -> None:
    run_sync_flow(demo, "quick", build_models=False)


def build_reporting(demo: Demo) -> None:
    """The models, data tests, BI file and dashboard, built once from both syncs."""
    from flows.build_flow import build_reporting as build_flow

    seconds = build_flow(duckdb_path=str(demo.warehouse))
    _say("  " + ", ".join(f"{stage} {s:.1f} s" for stage, s in seconds.items()))


#: The steps after the services are up, in order; each prints its progress and is timed.
STEPS: list[tuple[str, Callable[[Demo], None]]] = [
    ("full sync of every workspace (Prefect flow sync-all)", full_sync),
    ("sandbox clock advanced one simulated day", advance_day),
    ("quick sync of every workspace (Prefect flow sync-all)", quick_sync),
    ("models, data tests, BI file and dashboard, built once (Prefect flow build-reporting)", build_reporting),
]


def print_results(demo: Demo) -> None:
    """The summary from the reporting tables, where the dashboard is, how to go on."""
    from dashboard import report_path_for

    _say("")
    _say(summary_text(stages.bi_path_for(demo.warehouse)))
    _say("")
    _say(demo_alerts.alerts_text(demo.warehouse, demo.alert_sink))
    _say("")
    report = report_path_for(demo.warehouse)
    if report.is_file():
        _say(f"Dashboard: {shown_path(report)} (open it in a browser; `outreach report` writes it again)")
    else:  # the flow run's artifact says why; `outreach report` says it again
        _say(f"Dashboard: not drawn; `{command('outreach')} report` says why")
    _say("")
    _say(next_steps(demo.warehouse))


def _run_demo(demo: Demo) -> None:
    prepare_warehouse(demo.warehouse)
    _say(f"outreach demo: sandbox scale {demo.scale!r}, warehouse {demo.warehouse}")
    total = len(STEPS) + 1
    with ExitStack() as stack:
        with step(demo, f"[1/{total}] sandbox and Prefect API, started side by side"):
            start_services(demo, stack)
        for number, (title, run_step) in enumerate(STEPS, start=2):
            with step(demo, f"[{number}/{total}] {title}"):
                run_step(demo)
    print_results(demo)
    stopped = "sandbox and Prefect server stopped" if demo.prefect_temporary else "sandbox stopped"
    _say(f"\ndemo finished in {time.monotonic() - demo.started:.1f} s; {stopped}.")
