"""What several commands share: one definition each, so every command offers the same choices and waits alike."""

from __future__ import annotations

import contextlib
from enum import StrEnum
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from pipelines.warehouse.destination import Warehouse


class Destination(StrEnum):
    duckdb = "duckdb"
    postgres = "postgres"


def writer_lock(target: Warehouse, what: str) -> contextlib.AbstractContextManager[object]:
    """The one warehouse lock (`pipelines.warehouse.lock`), exclusive: a command that writes waits for a running
    sync or build (saying for whom), then sees only what it committed; on PostgreSQL loads hold it shared."""
    from pipelines.core.config import resolve_settings
    from pipelines.warehouse.lock import warehouse_writer

    notify = lambda line: typer.echo(line, err=True)  # noqa: E731
    return warehouse_writer(target, what=what, timeout_s=resolve_settings().lock_timeout_s, notify=notify)
