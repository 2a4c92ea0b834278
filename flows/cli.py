"""The `outreach` command line (the contract in docs/DESIGN.md).

Each command is a thin wrapper: it parses options and calls one function of the
layer that does the work, importing it lazily so `outreach --help` stays fast.
"""

from __future__ import annotations

import atexit
import gc
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flows.cli_alerts import alerts_app
from flows.cli_common import Destination, output_path, path_option
from flows.cli_hooks import hooks_app
from flows.cli_models import docs, models
from flows.cli_sandbox import Scale, sandbox
from flows.errors import OneLineErrors, fail, fail_explained

if TYPE_CHECKING:
    pass


# the interpreter's last collections over a command's objects (some 340,000 after a dbt build) took 1.1 s after its
# last line; frozen, they are not walked. Logging's atexit handler, registered earlier, still runs after this one.
atexit.register(gc.freeze)

app = typer.Typer(
    cls=OneLineErrors,
    help="Sync a cold-email outreach service into DuckDB and build reporting tables.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command()(sandbox)
app.add_typer(hooks_app, name="hooks")
app.add_typer(alerts_app, name="alerts")


class Mode(StrEnum):
    quick = "quick"
    full = "full"


@app.command()
def sync(
    mode: Mode = Mode.quick,
    base_url: Annotated[str | None, typer.Option(help="API base URL ending in /api/v1.")] = None,
    api_key: Annotated[
        list[str] | None, typer.Option(help="API key; repeat once per workspace. Default: dlt config.")
    ] = None,
    duckdb: Annotated[Path | None, path_option("--duckdb", "Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Destination | None,
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
    spool: Annotated[
        Path | None, path_option("--spool", "Webhook spool to load first (default: the warehouse's, <stem>_spool/).")
    ] = None,
    workers: Annotated[int | None, typer.Option(help="Threads reading the API at once.")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Workspaces per load (default 25 full, 100 quick).")] = None,
    progress: Annotated[bool, typer.Option(help="Show a live progress display.")] = True,
    reset_state: Annotated[
        bool,
        typer.Option(help="Forget the dlt state of the warehouse's pipelines (keeps the data) and re-read the API."),
    ] = False,
) -> None:
    """Run one sync of every configured workspace into the warehouse."""
    from pipelines.sync.edge import run_sync

    try:  # resolves the settings once (after the fast checks of what was given), then `pipelines.sync.run.sync`
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
            reset_state=reset_state,
        )
    except Exception as exc:  # noqa: BLE001 - reliab: every failure is one line naming its root cause
        fail_explained(exc, duckdb)
    typer.echo(report.summary())


@app.command()
def check(
    base_url: Annotated[str | None, typer.Option(help="API base URL ending in /api/v1.")] = None,
    api_key: Annotated[
        list[str] | None, typer.Option(help="API key; repeat once per workspace. Default: dlt config.")
    ] = None,
    duckdb: Annotated[Path | None, path_option("--duckdb", "Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Destination | None,
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
) -> None:
    """Test the settings, each key against the API, and that the warehouse can be written.

    Shows where each setting comes from (keys masked); one line per problem, non-zero if there is one."""
    from alerts.settings import check_lines
    from pipelines.commands.check import run_check

    report = run_check(
        base_url=base_url,
        api_keys=api_key or None,
        duckdb_path=duckdb,
        destination=destination.value if destination else None,
        more=[("alerts ([alerts], as each build reads them):", check_lines)],
    )
    for line in report.lines:
        typer.echo(line)
    if report.problems:
        raise typer.Exit(1)


@app.command()
def status(
    duckdb: Annotated[Path | None, path_option("--duckdb", "Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Destination | None,
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")] = False,
    runs: Annotated[int, typer.Option(min=1, help="Runs shown per workspace.")] = 5,
) -> None:
    """Per workspace: the last runs, rows loaded, cursors, deferred reply bodies, the last error. No API request."""
    import json

    from pipelines.commands.status import read_status, rejected_spool_files
    from pipelines.commands.status_output import as_json, render
    from pipelines.core.config import resolve_settings
    from pipelines.core.errors import OutreachError
    from pipelines.warehouse.destination import warehouse_target

    try:
        kind = destination.value if destination else None
        settings = resolve_settings(duckdb_path=duckdb, destination=kind)
        target = warehouse_target(settings, duckdb_path=duckdb, destination=kind)
        found = read_status(target, runs=runs)
    except OutreachError as exc:
        fail(str(exc))
    found.rejected_spool_files = rejected_spool_files(settings.spool_location().resolve())
    found.source_freshness = _last_freshness(target.duckdb_path, target.destination)
    if json_output:
        typer.echo(json.dumps(as_json(found), indent=1))
        return
    import sys

    from rich.console import Console

    # off a terminal (a pipe, a file, cron) rich would assume 80 columns and cut the table's cells
    Console(width=None if sys.stdout.isatty() else 1000).print(render(found))


def _last_freshness(duckdb: Path | None, destination: str) -> dict[str, Any] | None:
    """The last model build's `dbt source freshness` outcome for this warehouse (models.freshness), as JSON."""
    from models.freshness import read_freshness
    from pipelines.warehouse.destination import Warehouse

    report = read_freshness(Warehouse(destination=destination, duckdb_path=duckdb))
    return None if report is None else report.to_dict()


app.command()(models)  # flows/cli_models.py; registered here to keep the commands' order in --help


@app.command()
def report(
    duckdb: Annotated[
        Path | None, path_option("--duckdb", "Warehouse whose BI file to read (default data/outreach.duckdb).")
    ] = None,
    out: Annotated[
        Path | None, path_option("--out", "HTML file to write (default report.html beside the warehouse).")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show the stage and the scopes drawn as it runs.")] = True,
) -> None:
    """Write the HTML dashboard, one self-contained file, from the BI file."""
    from dashboard import ReportError, bi_path_for, configured_warehouse, report_path_for, write_report
    from pipelines.core.progress import ProgressDisplay, StageProgress

    warehouse = configured_warehouse(duckdb)
    bi = bi_path_for(warehouse)
    if warehouse.stem.endswith("_bi") and warehouse.exists() and not bi.exists():
        fail(f"{warehouse} is a BI file: pass --duckdb with its warehouse ({warehouse.name[:-10]}.duckdb beside it)")
    try:
        shown = StageProgress("report", "scopes")  # an agency's page (1,000 workspaces) takes about 20 s
        with ProgressDisplay(shown, enabled=progress):
            path = write_report(bi, output_path(out) or report_path_for(warehouse), shown)
    except ReportError as exc:
        fail(str(exc))
    typer.echo(f"report written to {path} ({path.stat().st_size / 2**20:.1f} MB); open {path.resolve().as_uri()}")


app.command()(docs)


@app.command()
def demo(
    scale: Scale = Scale.small,
    duckdb: Annotated[Path | None, path_option("--duckdb", "Warehouse file (default data/outreach.duckdb).")] = None,
) -> None:
    """Start a sandbox, sync it, build the models and print a summary."""
    from flows.demo import run_demo

    run_demo(scale=scale.value, duckdb_path=duckdb)


@app.command()
def serve() -> None:
    """Serve the Prefect deployments of prefect.yaml (quick every 15 minutes, full nightly) until stopped."""
    from flows.deployments import serve_deployments
    from pipelines.core.errors import OutreachError

    try:
        serve_deployments()
    except OutreachError as exc:
        fail(str(exc))


if __name__ == "__main__":
    app()
