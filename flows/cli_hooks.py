"""`outreach hooks`: receive signed webhook deliveries into the spool, and manage the subscriptions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flows.cli_common import output_path, path_option
from flows.errors import fail, stopped_by_ctrl_c

hooks_app = typer.Typer(help="Receive and manage webhook deliveries.", no_args_is_help=True)


@hooks_app.command("listen")
def hooks_listen(
    host: str = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="TCP port; 0 picks a free one.")] = 8787,
    spool: Annotated[
        Path | None, path_option("--spool", "Spool directory (default: the configured warehouse's, <stem>_spool/).")
    ] = None,
) -> None:
    """Receive signed deliveries at POST /webhooks into the spool."""
    from pipelines.core.config import resolve_settings
    from receiver.server import listen

    # where it writes, read as the settings read a path: `--spool=~/spool` spooled into a folder named `~`
    spool_dir = output_path(spool) or resolve_settings().spool_location()
    with stopped_by_ctrl_c():
        listen(host=host, port=port, spool_dir=spool_dir)


HooksRecordOption = Annotated[
    Path | None,
    path_option("--duckdb", "Warehouse whose <stem>_hooks.json records subscriptions (default data/outreach.duckdb)."),
]


@hooks_app.command("subscribe")
def hooks_subscribe(
    target: Annotated[str, typer.Option(help="The URL deliveries go to.")],
    event: Annotated[list[str] | None, typer.Option(help="Event key; repeat. Default: all six.")] = None,
    base_url: str | None = None,
    api_key: str | None = None,
    duckdb: HooksRecordOption = None,
) -> None:
    """Subscribe TARGET to events through the API, and record each subscription."""
    from pipelines.api.hooks_admin import subscribe
    from pipelines.core.errors import OutreachError

    try:
        for line in subscribe(
            target=target, events=event or None, base_url=base_url, api_key=api_key, duckdb_path=duckdb
        ):
            typer.echo(line)
    except OutreachError as exc:
        fail(str(exc))


@hooks_app.command("unsubscribe")
def hooks_unsubscribe(
    subscription_id: Annotated[str, typer.Argument(metavar="ID")],
    base_url: str | None = None,
    api_key: str | None = None,
    duckdb: HooksRecordOption = None,
) -> None:
    """Delete a subscription by id, and mark it deleted in the record."""
    from pipelines.api.hooks_admin import unsubscribe
    from pipelines.core.errors import OutreachError

    try:
        typer.echo(unsubscribe(subscription_id=subscription_id, base_url=base_url, api_key=api_key, duckdb_path=duckdb))
    except OutreachError as exc:
        fail(str(exc))


@hooks_app.command("list")
def hooks_list(
    duckdb: HooksRecordOption = None,
    all_: Annotated[bool, typer.Option("--all", help="Also the deleted ones, with status and time.")] = False,
) -> None:
    """The subscriptions made with `outreach hooks subscribe` (the API cannot list them); no API request."""
    from pipelines.api.hooks_admin import list_subscriptions
    from pipelines.core.errors import OutreachError

    try:
        for line in list_subscriptions(duckdb_path=duckdb, include_deleted=all_):
            typer.echo(line)
    except OutreachError as exc:
        fail(str(exc))


@hooks_app.command("events")
def hooks_events(base_url: str | None = None, api_key: str | None = None) -> None:
    """List the subscribable events."""
    from pipelines.api.hooks_admin import list_events
    from pipelines.core.errors import OutreachError

    try:
        for line in list_events(base_url=base_url, api_key=api_key):
            typer.echo(line)
    except OutreachError as exc:
        fail(str(exc))
