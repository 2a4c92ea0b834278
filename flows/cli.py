"""The `outreach` command line (the contract in shared/DESIGN.md).

Each command is a thin wrapper: it parses options and calls one function of the
layer that does the work, importing it lazily so `outreach --help` stays fast.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

app = typer.Typer(
    help="Sync a cold-email outreach service into DuckDB and build reporting tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
hooks_app = typer.Typer(help="Receive and manage webhook deliveries.", no_args_is_help=True)
app.add_typer(hooks_app, name="hooks")


class Mode(str, Enum):
    quick = "quick"
    full = "full"


class Scale(str, Enum):
    tiny = "tiny"
    small = "small"
    medium = "medium"
    large = "large"


def _fail(message: str, code: int = 1) -> None:
    """Print a one-line reason on stderr and exit non-zero."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.command()
def sandbox(
    host: str = "127.0.0.1",
    port: int = 8765,
    seed: int = 7,
    scale: Scale = Scale.small,
    rate_limit: Annotated[int, typer.Option(help="Requests a minute per key; 0 turns the limit off.")] = 120,
    latency_ms: int = 0,
    insecure_hooks: Annotated[bool, typer.Option(help="Also allow http webhook targets on loopback.")] = False,
) -> None:
    """Serve a local, stateful sandbox of the whole API until stopped."""
    from sandbox.server import serve

    serve(
        host=host,
        port=port,
        seed=seed,
        scale=scale.value,
        rate_limit=rate_limit,
        latency_ms=latency_ms,
        insecure_hooks=insecure_hooks,
    )


class Destination(str, Enum):
    duckdb = "duckdb"
    postgres = "postgres"


@app.command()
def sync(
    mode: Mode = Mode.quick,
    base_url: Annotated[Optional[str], typer.Option(help="API base URL ending in /api/v1.")] = None,
    api_key: Annotated[
        Optional[list[str]], typer.Option(help="API key; repeat once per workspace. Default: dlt config.")
    ] = None,
    duckdb: Annotated[Optional[Path], typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Optional[Destination],
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
    spool: Annotated[Optional[Path], typer.Option(help="Webhook spool to load first (default data/spool/).")] = None,
    workers: Annotated[Optional[int], typer.Option(help="Threads reading the API at once.")] = None,
    batch_size: Annotated[Optional[int], typer.Option(help="Workspaces per dlt load.")] = None,
    progress: Annotated[bool, typer.Option(help="Show a live progress display.")] = True,
) -> None:
    """Run one sync of every configured workspace into the warehouse."""
    from pipelines.errors import OutreachError
    from pipelines.run import run_sync

    try:
        report = run_sync(
            mode=mode.value,
            base_url=base_url,
            api_keys=api_key or None,
            duckdb_path=duckdb,
            destination=destination.value if destination else None,
            spool_dir=spool,
            workers=workers,
            batch_size=batch_size,
            progress=progress,
            notify=lambda line: typer.echo(line, err=True),
        )
    except OutreachError as exc:
        _fail(str(exc))
    typer.echo(report.summary())


@app.command()
def status(
    duckdb: Annotated[Optional[Path], typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Optional[Destination],
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")] = False,
    runs: Annotated[int, typer.Option(help="Runs shown per workspace.")] = 5,
) -> None:
    """Per workspace: the last runs, rows loaded, cursors, deferred reply bodies, the last error. No API request."""
    import json

    from pipelines.destination import warehouse_target
    from pipelines.errors import OutreachError
    from pipelines.status import as_json, read_status, render

    try:
        target = warehouse_target(duckdb_path=duckdb, destination=destination.value if destination else None)
        found = read_status(target, runs=runs)
    except OutreachError as exc:
        _fail(str(exc))
    if json_output:
        typer.echo(json.dumps(as_json(found), indent=1))
        return
    from rich.console import Console

    Console().print(render(found))


@app.command()
def models(
    duckdb: Annotated[Optional[Path], typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
    publish: Annotated[bool, typer.Option(help="Publish the BI file after a good build.")] = True,
) -> None:
    """Build the reporting schema, run the data tests, publish the BI file."""
    from models.runner import ModelError, build
    from pipelines.config import resolve_settings
    from pipelines.destination import warehouse_target
    from pipelines.errors import OutreachError
    from pipelines.lock import warehouse_writer

    try:
        cfg = resolve_settings(duckdb_path=duckdb)
        target = warehouse_target(cfg, destination="duckdb")  # --duckdb, else SOURCES__OUTREACH__DUCKDB_PATH
        # the one warehouse lock: a build waits for a running sync and reads only what it committed
        notify = lambda line: typer.echo(line, err=True)  # noqa: E731
        with warehouse_writer(target, what="model build", timeout_s=cfg.lock_timeout_s, notify=notify):
            report = build(duckdb_path=target.duckdb_path, publish=publish)
    except (ModelError, OutreachError) as exc:
        _fail(str(exc))
    typer.echo(report.summary())


@app.command()
def demo(
    scale: Scale = Scale.small,
    duckdb: Annotated[Optional[Path], typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
) -> None:
    """Start a sandbox, sync it, build the models and print a summary."""
    from flows.demo import run_demo

    run_demo(scale=scale.value, duckdb_path=duckdb)
    _exit_quietly()


def _exit_quietly() -> None:
    """Exit 0 without interpreter finalisation.

    After an in-process Prefect run, duckdb 2.0's nanobind bindings print pages of harmless
    "leaked instance" warnings at shutdown. Everything the demo started is already stopped and
    its files are closed, so flush the streams and leave.
    """
    import logging
    import os
    import sys

    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


@app.command()
def serve() -> None:
    """Serve the Prefect deployments (quick every 15 minutes, full nightly)."""
    from flows.deployments import serve_deployments

    serve_deployments()


@hooks_app.command("listen")
def hooks_listen(
    host: str = "127.0.0.1",
    port: int = 8787,
    spool: Annotated[Optional[Path], typer.Option(help="Spool directory (default data/spool/).")] = None,
) -> None:
    """Receive signed deliveries at POST /webhooks into the spool."""
    from receiver.server import listen

    listen(host=host, port=port, spool_dir=spool)


@hooks_app.command("subscribe")
def hooks_subscribe(
    target: Annotated[str, typer.Option(help="The URL deliveries go to.")],
    event: Annotated[Optional[list[str]], typer.Option(help="Event key; repeat. Default: all six.")] = None,
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
) -> None:
    """Subscribe TARGET to events through the API."""
    from pipelines.errors import OutreachError
    from pipelines.hooks_admin import subscribe

    try:
        for line in subscribe(target=target, events=event or None, base_url=base_url, api_key=api_key):
            typer.echo(line)
    except OutreachError as exc:
        _fail(str(exc))


@hooks_app.command("unsubscribe")
def hooks_unsubscribe(
    subscription_id: Annotated[str, typer.Argument(metavar="ID")],
    base_url: Optional[str] = None,
    api_key: Optional[str] = None,
) -> None:
    """Delete a subscription by id."""
    from pipelines.errors import OutreachError
    from pipelines.hooks_admin import unsubscribe

    try:
        typer.echo(unsubscribe(subscription_id=subscription_id, base_url=base_url, api_key=api_key))
    except OutreachError as exc:
        _fail(str(exc))


@hooks_app.command("events")
def hooks_events(base_url: Optional[str] = None, api_key: Optional[str] = None) -> None:
    """List the subscribable events."""
    from pipelines.errors import OutreachError
    from pipelines.hooks_admin import list_events

    try:
        for line in list_events(base_url=base_url, api_key=api_key):
            typer.echo(line)
    except OutreachError as exc:
        _fail(str(exc))


if __name__ == "__main__":
    app()
