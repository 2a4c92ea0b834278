"""`outreach models` and `outreach docs`: the commands that work on the reporting schema, under the warehouse's
writer lock (registered on the app in flows/cli.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flows.cli_alerts import after_build_step
from flows.cli_common import Destination, output_path, path_option, writer_lock
from flows.errors import fail, fail_build

if TYPE_CHECKING:
    from pipelines.warehouse.destination import Warehouse


def model_target(duckdb: Path | None, destination: Destination | None) -> Warehouse:
    """The warehouse `outreach models` / `outreach docs` work on (the sync's settings unless given)."""
    from models.settings import resolve_target

    if duckdb is not None and destination == Destination.postgres:
        fail("--duckdb and --destination postgres exclude each other: pass one")
    return resolve_target(duckdb, destination.value if destination else None)


def models(
    duckdb: Annotated[Path | None, path_option("--duckdb", "Warehouse file (default: the sync's).")] = None,
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
        target = model_target(duckdb, destination)
        with writer_lock(target, "model build", missing_ok=True):
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


def docs(
    duckdb: Annotated[Path | None, path_option("--duckdb", "Warehouse file (default: the sync's).")] = None,
    destination: Annotated[
        Destination | None, typer.Option(help="Document this warehouse (default: SOURCES__OUTREACH__DESTINATION).")
    ] = None,
    out: Annotated[Path | None, path_option("--out", "Folder for the site (default: docs/ by the warehouse).")] = None,
) -> None:
    """Generate dbt's static docs site (one self-contained index.html) of the reporting models."""
    from models.docs_site import generate_docs
    from pipelines.core.errors import OutreachError

    try:
        target = model_target(duckdb, destination)
        with writer_lock(target, "model build", missing_ok=True):
            site = generate_docs(target, out_dir=output_path(out))
    except OutreachError as exc:
        fail(str(exc))
    typer.echo(f"docs: {site} (open it in a browser)")
