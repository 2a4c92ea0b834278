"""The `outreach` command line (the contract in docs/DESIGN.md).

Each command is a thin wrapper: it parses options and calls one function of the
layer that does the work, importing it lazily so `outreach --help` stays fast.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flows.cli_alerts import after_build_step, alerts_app
from flows.cli_hooks import hooks_app
from flows.cli_sandbox import Scale, sandbox
from flows.errors import OneLineErrors, fail, fail_build, fail_explained

if TYPE_CHECKING:
    from pipelines.warehouse.destination import Warehouse


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


class Destination(StrEnum):
    duckdb = "duckdb"
    postgres = "postgres"


@app.command()
def sync(
    mode: Mode = Mode.quick,
    base_url: Annotated[str | None, typer.Option(help="API base URL ending in /api/v1.")] = None,
    api_key: Annotated[
        list[str] | None, typer.Option(help="API key; repeat once per workspace. Default: dlt config.")
    ] = None,
    duckdb: Annotated[Path | None, typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Destination | None,
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
    spool: Annotated[
        Path | None, typer.Option(help="Webhook spool to load first (default: the warehouse's, <stem>_spool/).")
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
    duckdb: Annotated[Path | None, typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
) -> None:
    """Show where each setting comes from, test each key against the API and that the warehouse can be
    written; one line per problem, non-zero if there is one. Keys are shown masked."""
    from pipelines.commands.check import run_check

    report = run_check(base_url=base_url, api_keys=api_key or None, duckdb_path=duckdb)
    for line in report.lines:
        typer.echo(line)
    if report.problems:
        raise typer.Exit(1)


def _model_target(duckdb: Path | None, destination: Destination | None) -> Warehouse:
    """The warehouse `outreach models` / `outreach docs` work on (the sync's settings unless given)."""
    from models.settings import resolve_target

    if duckdb is not None and destination == Destination.postgres:
        fail("--duckdb and --destination postgres exclude each other: pass one")
    return resolve_target(duckdb, destination.value if destination else None)


def _writer_lock(target: Warehouse, holder: str) -> contextlib.AbstractContextManager[object]:
    """The one warehouse lock (`pipelines.warehouse.lock`), exclusive: the build waits for a running sync (saying
    for whom), then reads only what it committed; on PostgreSQL loads hold it shared, the build alone."""
    from pipelines.core.config import resolve_settings
    from pipelines.warehouse.lock import warehouse_writer

    notify = lambda line: typer.echo(line, err=True)  # noqa: E731
    return warehouse_writer(target, what="model build", timeout_s=resolve_settings().lock_timeout_s, notify=notify)


@app.command()
def status(
    duckdb: Annotated[Path | None, typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
    destination: Annotated[
        Destination | None,
        typer.Option(help="duckdb (default) or postgres (DESTINATION__POSTGRES__CREDENTIALS)."),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON for scripts instead of a table.")] = False,
    runs: Annotated[int, typer.Option(help="Runs shown per workspace.")] = 5,
) -> None:
    """Per workspace: the last runs, rows loaded, cursors, deferred reply bodies, the last error. No API request."""
    import json

    from pipelines.commands.status import read_status
    from pipelines.commands.status_output import as_json, render
    from pipelines.core.errors import OutreachError
    from pipelines.warehouse.destination import warehouse_target

    try:
        target = warehouse_target(duckdb_path=duckdb, destination=destination.value if destination else None)
        found = read_status(target, runs=runs)
    except OutreachError as exc:
        fail(str(exc))
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


@app.command()
def models(
    duckdb: Annotated[Path | None, typer.Option(help="Warehouse file (default: the sync's).")] = None,
    destination: Annotated[
        Destination | None, typer.Option(help="Build on this warehouse (default: SOURCES__OUTREACH__DESTINATION).")
    ] = None,
    publish: Annotated[bool, typer.Option(help="Publish the BI file after a good build (DuckDB).")] = True,
    full_refresh: Annotated[
        bool,
        typer.Option(
            "--full-refresh",
            help="Rebuild the incremental marts from every row, not only the keys the syncs changed since the last "
            "good build (a changed model or var already rebuilds every key).",
        ),
    ] = False,
    dbt_vars: Annotated[
        str | None,
        typer.Option(
            "--vars",
            help="The project's dbt vars to override, as a JSON object, e.g. '{\"extra_reply_classes\": "
            '{"out_of_office_v2": "auto_reply"}}\' (models/dbt_project.yml lists them).',
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show the build's stage and dbt's nodes as it runs.")] = True,
) -> None:
    """Build the reporting schema with dbt (models and data tests, all or nothing); on DuckDB publish the BI file."""
    from pipelines.core.errors import OutreachError
    from pipelines.core.progress import ProgressDisplay

    try:
        from models import PROJECT_DIR
        from models.build import build
        from models.progress import BuildProgress
        from models.settings import parse_dbt_vars

        variables = None if dbt_vars is None else parse_dbt_vars(dbt_vars, PROJECT_DIR)
        target = _model_target(duckdb, destination)
        with _writer_lock(target, "outreach models"):
            shown = BuildProgress()
            step = after_build_step(target, shown)  # the alert rules, before the BI file is published
            with ProgressDisplay(shown, enabled=progress):
                report = build(
                    target,
                    publish=publish,
                    before_publish=step,
                    full_refresh=full_refresh,
                    dbt_vars=variables,
                    progress=shown,
                )
    except (OutreachError, KeyboardInterrupt) as exc:  # a failed build is one; Ctrl-C also while waiting for the lock
        fail_build(exc)
    typer.echo(report.summary())


@app.command()
def report(
    duckdb: Annotated[
        Path | None, typer.Option(help="Warehouse whose BI file to read (default data/outreach.duckdb).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="HTML file to write (default report.html beside the warehouse).")
    ] = None,
) -> None:
    """Write the HTML dashboard, one self-contained file, from the BI file."""
    from dashboard import ReportError, bi_path_for, configured_warehouse, report_path_for, write_report

    warehouse = duckdb or configured_warehouse()
    bi = bi_path_for(warehouse)
    if warehouse.stem.endswith("_bi") and warehouse.exists() and not bi.exists():
        fail(f"{warehouse} is a BI file: pass --duckdb with its warehouse ({warehouse.name[:-10]}.duckdb beside it)")
    try:
        path = write_report(bi, out or report_path_for(warehouse))
    except ReportError as exc:
        fail(str(exc))
    typer.echo(f"report written to {path} ({path.stat().st_size / 2**20:.1f} MB); open {path.resolve().as_uri()}")


@app.command()
def docs(
    duckdb: Annotated[Path | None, typer.Option(help="Warehouse file (default: the sync's).")] = None,
    destination: Annotated[
        Destination | None, typer.Option(help="Document this warehouse (default: SOURCES__OUTREACH__DESTINATION).")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for the site (default: docs/ by the warehouse).")] = None,
) -> None:
    """Generate dbt's static docs site (one self-contained index.html) of the reporting models."""
    from models.docs_site import generate_docs
    from pipelines.core.errors import OutreachError

    try:
        target = _model_target(duckdb, destination)
        with _writer_lock(target, "outreach docs"):
            site = generate_docs(target, out_dir=out)
    except OutreachError as exc:
        fail(str(exc))
    typer.echo(f"docs: {site} (open it in a browser)")


@app.command()
def demo(
    scale: Scale = Scale.small,
    duckdb: Annotated[Path | None, typer.Option(help="Warehouse file (default data/outreach.duckdb).")] = None,
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
