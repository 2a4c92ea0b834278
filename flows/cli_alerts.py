"""`outreach alerts`: open incidents, acknowledge one, test the targets, run the guard, check replies now."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flows.cli_common import Destination, path_option, writer_lock
from pipelines.core.shown import shown

if TYPE_CHECKING:
    from models.progress import BuildProgress
    from pipelines.warehouse.destination import Warehouse

alerts_app = typer.Typer(
    help="Alert incidents (reporting.alert_incidents), their notifications and the deliverability guard.",
    invoke_without_command=True,
)

DuckdbOption = Annotated[Path | None, path_option("--duckdb", "Warehouse file (default: the sync's).")]
DestinationOption = Annotated[
    Destination | None,
    typer.Option(help="duckdb or postgres (DESTINATION__POSTGRES__CREDENTIALS); default: the sync's."),
]


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _warehouse(duckdb: Path | None, destination: str | None = None) -> Any:
    from pipelines.warehouse.destination import warehouse_target

    return warehouse_target(duckdb_path=duckdb, destination=destination)


def _given(ctx: typer.Context, duckdb: Path | None, destination: str | None) -> tuple[Path | None, str | None]:
    """A command's --duckdb and --destination, else those given before its name (`outreach alerts --duckdb W ack
    ID`): the guard would otherwise pause on the incidents of another warehouse, the default one."""
    group = ctx.parent.params if ctx.parent is not None else {}
    return duckdb or group.get("duckdb"), destination or group.get("destination")


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in row.items()}


@alerts_app.callback()
def alerts(
    ctx: typer.Context,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Also resolved incidents.")] = False,
    duckdb: DuckdbOption = None,
    destination: DestinationOption = None,
) -> None:
    """List open (and acknowledged) incidents, and whether each one's notification was delivered; every
    incident with --all. No API request."""
    if ctx.invoked_subcommand is not None:
        if json_output or all_:  # they shape the list of incidents, which a command does not print
            _fail(f"--json and --all list incidents: leave them out of `outreach alerts {ctx.invoked_subcommand}`")
        return
    from alerts.db import connect
    from alerts.outbox import status
    from alerts.store import list_incidents
    from pipelines.core.errors import OutreachError

    try:
        with connect(_warehouse(duckdb, destination)) as db:
            rows = list_incidents(db, include_all=all_)
            evaluated = db.has("reporting", "alert_incidents")
    except OutreachError as exc:
        _fail(str(exc))
    if json_output:
        listed = [{**_jsonable(r), "notified": status(r).removeprefix("notified: ")} for r in rows]
        typer.echo(json.dumps(listed, indent=1, default=str))
        return
    if not evaluated:  # "no open incidents" would claim rules that never ran found nothing
        typer.echo("no incidents yet: the rules run after each model build (`outreach models`)")
        return
    if not rows:
        typer.echo("no open incidents" if not all_ else "no incidents")
        return
    for r in rows:
        estimate = " (estimated)" if r.get("is_estimate") else ""
        typer.echo(
            f"{r['incident_id']}  {r['state']:<12} {r['rule']:<24} {r['subject_type']} "
            f"{shown(r.get('subject_label') or r['subject_id'])}: {shown(r.get('detail') or '')} "
            f"[value {float(r['value']):.4g}{estimate}, threshold {float(r['threshold']):.4g}, "
            f"since {str(r['opened_at'])[:16]}] {status(r)}"
        )


@alerts_app.command("ack")
def ack(
    ctx: typer.Context,
    incident_id: Annotated[str, typer.Argument(metavar="ID")],
    duckdb: DuckdbOption = None,
    destination: DestinationOption = None,
) -> None:
    """Acknowledge an open incident: no further notice until it resolves."""
    from alerts.db import connect
    from alerts.store import acknowledge
    from pipelines.core.errors import OutreachError

    try:
        target = _warehouse(*_given(ctx, duckdb, destination))
        # a write waits for a running sync or build, whose evaluation of the rules would write over it
        with writer_lock(target, "alert acknowledgement"), connect(target) as db:
            row = acknowledge(db, incident_id)
    except OutreachError as exc:
        _fail(str(exc))
    if row is None:
        _fail(f"no incident {incident_id}: `outreach alerts --all` lists them")
        return
    typer.echo(f"{incident_id} {row['state']}: {row['rule']} {shown(row.get('subject_label') or row['subject_id'])}")


@alerts_app.command("test")
def test_targets() -> None:
    r"""Send one test notification to every target of \[alerts] targets and report each result."""
    from alerts.notify import notify_all
    from alerts.settings import resolve_alert_settings
    from pipelines.core.errors import OutreachError

    try:
        settings = resolve_alert_settings()
    except OutreachError as exc:
        _fail(str(exc))
        return
    if not settings.target_list():
        _fail("no targets: set [alerts] targets in .dlt/config.toml or ALERTS__TARGETS='[\"json://host/path\"]'")
    deliveries = notify_all("[outreach] test notification", "outreach alerts test: this target works.", settings)
    for d in deliveries:
        typer.echo(d.line())
    if not all(d.ok for d in deliveries):
        raise typer.Exit(1)


@alerts_app.command("guard")
def guard(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be paused; change nothing.")] = False,
    duckdb: DuckdbOption = None,
    destination: DestinationOption = None,
) -> None:
    r"""Pause mailboxes and campaigns with an open bounce-rate incident (\[alerts] auto_pause must be true)."""
    from alerts.db import connect
    from alerts.guard import run_guard
    from alerts.settings import resolve_alert_settings
    from pipelines.core.config import resolve_settings
    from pipelines.core.errors import OutreachError
    from pipelines.warehouse.destination import warehouse_target

    try:
        settings = resolve_alert_settings()
        if not settings.auto_pause and not dry_run:
            _fail("the guard is off: set [alerts] auto_pause = true (or ALERTS__AUTO_PAUSE=true), or pass --dry-run")
        path, kind = _given(ctx, duckdb, destination)
        core = resolve_settings(duckdb_path=path, destination=kind)
        target = warehouse_target(core)
        with writer_lock(target, "deliverability guard"), connect(target) as db:
            run_guard(db, settings, core, dry_run=dry_run, echo=typer.echo)
    except OutreachError as exc:
        _fail(str(exc))


@alerts_app.command("replies")
def replies(
    ctx: typer.Context,
    spool: Annotated[
        Path | None, path_option("--spool", "Webhook spool to load first (default: the warehouse's, <stem>_spool/).")
    ] = None,
    duckdb: DuckdbOption = None,
    destination: DestinationOption = None,
) -> None:
    """Load the webhook spool and evaluate positive_reply_waiting now (the speed-to-lead deployment's step)."""
    from flows.alerts_flow import check_replies
    from pipelines.core.config import resolve_settings
    from pipelines.core.errors import OutreachError

    path, kind = _given(ctx, duckdb, destination)
    try:
        settings = resolve_settings(duckdb_path=path, destination=kind)
        run = check_replies(settings, spool, echo=typer.echo)
    except OutreachError as exc:
        _fail(str(exc))
        return
    typer.echo(f"{run.events_loaded} event(s) loaded; {run.summary()}")
    if run.errors:  # the one rule this command runs did not run: a scheduler must see it fail
        raise typer.Exit(1)


def after_build_step(target: Warehouse, progress: BuildProgress) -> Callable[[], None]:
    """`outreach models`' step between a passing build and the BI publish: evaluate the rules (the stage `progress`
    shows), say one line."""

    def step() -> None:
        from alerts import after_build

        progress.set_stage("alert rules")
        typer.echo(after_build(target, echo=lambda line: typer.echo(line, err=True)), err=True)

    return step
