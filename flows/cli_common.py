"""What several commands share: one definition each, so every command offers the same choices and waits alike."""

from __future__ import annotations

import contextlib
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from pipelines.warehouse.destination import Warehouse


class Destination(StrEnum):
    duckdb = "duckdb"
    postgres = "postgres"


def writer_lock(target: Warehouse, what: str, *, missing_ok: bool = False) -> contextlib.AbstractContextManager[object]:
    """The one warehouse lock (`pipelines.warehouse.lock`), exclusive: a command that writes waits for a running
    sync or build (saying for whom), then sees only what it committed; on PostgreSQL loads hold it shared.

    A DuckDB path is checked first, so no lock file is made beside a path that holds no warehouse; `missing_ok`: a
    file not there yet, in a folder that is, is no error (a first sync, still running, may be making it)."""
    from models.preflight import check_duckdb_path
    from pipelines.core.config import resolve_settings
    from pipelines.warehouse.lock import warehouse_writer

    path = target.duckdb_path
    # a sync making the file has made its folder: without one, no lock file (nor folder) is made for a typo
    if path is not None and (path.exists() or not missing_ok or not path.parent.is_dir()):
        check_duckdb_path(path)

    notify = lambda line: typer.echo(line, err=True)  # noqa: E731
    return warehouse_writer(target, what=what, timeout_s=resolve_settings().lock_timeout_s, notify=notify)


def path_option(flag: str, help: str) -> Any:
    """A path option (`flag`) whose blank value is refused: Typer reads "" (an unset shell variable in
    `--spool "$SPOOL"`) as `.`, the current folder, and "   " named a file of spaces."""

    def given(value: str) -> Path:
        from pipelines.core.errors import ConfigError

        if not value.strip():
            raise ConfigError(f"{flag} is blank: give a path, or leave it out for the default")
        return Path(value)

    return typer.Option(flag, help=help, parser=given, metavar="<path>")


def output_path(value: Path | None) -> Path | None:
    """Where a command writes what it makes (`--out`, `--spool`), as the settings read a path: `~` expanded (the
    shell expands none after `=`: `--out=~/r.html` made a folder named `~` beside the command)."""
    return None if value is None else value.expanduser()
