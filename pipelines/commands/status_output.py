"""`outreach status` shown: the rich table on a terminal (`render`), plain lines (`lines`), and the dict for
scripts (`as_json`), from the `WarehouseStatus` that `pipelines.commands.status.read_status` reads."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from pipelines.commands.status import WarehouseStatus


def as_json(status: WarehouseStatus) -> dict[str, Any]:
    """Everything, JSON-ready (datetimes as ISO strings)."""
    return _jsonable(asdict(status))  # type: ignore[no-any-return]


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return str(value)
    return value


def render(status: WarehouseStatus) -> Any:
    """A rich renderable: one row per workspace (its last run), or the note."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    if not status.synced:
        return Text(status.note)
    running = Text(status.note) if status.note else None
    freshness = _freshness_table(status.source_freshness)
    table = Table(title=Text(f"outreach status: {status.warehouse}"), expand=False)  # as it is: see _add_row
    for column in (
        "workspace",
        "last run",
        "outcome",
        "rows loaded",
        "newest reply",
        "last full",
        "deferred bodies",
        "last error",
    ):
        table.add_column(column)
    for ws in status.workspaces:
        last = ws.runs[0] if ws.runs else None
        _add_row(
            table,
            f"{ws.workspace_name}\n{ws.workspace_id or '(key not recognised)'}",
            f"{last.mode} {_when(last.started_at)} -> {_when(last.ended_at)}" if last else "-",
            last.outcome if last else "-",
            _pairs(last.rows_loaded) if last else "-",
            _when(ws.newest_reply),
            _when(ws.last_full_at),
            str(ws.deferred_bodies),
            ws.last_error or "-",
        )
    earlier = [(ws, run) for ws in status.workspaces for run in ws.runs[1:]]
    head = [running] if running is not None else []
    tail = [freshness, *_rejected(status.rejected_spool_files)]
    if not earlier:
        return Group(*head, table, *tail)
    runs = Table(title="earlier runs", expand=False)
    for column in ("workspace", "mode", "started", "ended", "outcome", "rows loaded"):
        runs.add_column(column)
    for ws, run in earlier:
        _add_row(
            runs,
            ws.workspace_name,
            run.mode,
            _when(run.started_at),
            _when(run.ended_at),
            run.outcome,
            _pairs(run.rows_loaded),
        )
    return Group(*head, table, runs, *tail)


def _add_row(table: Any, *cells: str) -> None:
    """Each cell as it is (Text): names and errors come from the API, paths from the user, and rich reads a
    string's [brackets] as markup: "Client [old]" lost "[old]", and a "[/x]" failed the command."""
    from rich.text import Text

    table.add_row(*(Text(cell) for cell in cells))


def _rejected(files: list[str]) -> list[Any]:
    from rich.text import Text

    if not files:
        return []
    return [Text(
        f"webhook spool: {len(files)} file(s) in {Path(files[0]).parent} hold lines that are no spool record and "
        "were not loaded: mend them and move the files back into the spool to load them (receiver/README.md)"
    )]  # fmt: skip


def _freshness_table(report: dict[str, Any] | None) -> Any:
    """The last build's source freshness: one row per raw table with a threshold, or a line saying why not."""
    from rich.table import Table
    from rich.text import Text

    if report is None:
        return Text("source freshness: not checked yet (run `outreach models`)")
    if report.get("error"):
        return Text(f"source freshness at {report.get('checked_at')}: not checked ({report['error']})")
    table = Table(title=Text(f"source freshness (last model build, {report.get('checked_at')})"), expand=False)
    for column in ("source", "status", "newest synced_at", "warn after", "error after"):
        table.add_column(column)
    for source in report.get("sources") or []:
        _add_row(
            table,
            str(source.get("source")),
            str(source.get("status")),
            str(source.get("max_loaded_at") or source.get("message") or "-"),
            str(source.get("warn_after") or "-"),
            str(source.get("error_after") or "-"),
        )
    return table


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if isinstance(value, datetime) else "-"


def _pairs(counts: dict[str, int]) -> str:
    shown = {k: v for k, v in counts.items() if v}
    return ", ".join(f"{k} {v}" for k, v in sorted(shown.items())) or "none"


def lines(status: WarehouseStatus) -> Sequence[str]:
    """Plain lines (what `render` shows, without a terminal): used in logs and tests."""
    if not status.synced:
        return [status.note]
    out = [status.note] if status.note else []
    for ws in status.workspaces:
        last = ws.runs[0] if ws.runs else None
        out.append(
            f"{ws.workspace_name} ({ws.workspace_id}): "
            + (f"{last.mode} {last.outcome} at {_when(last.ended_at)}" if last else "no run recorded")
            + f"; newest reply {_when(ws.newest_reply)}; last full {_when(ws.last_full_at)}; "
            f"deferred bodies {ws.deferred_bodies}; last error {ws.last_error or '-'}"
        )
    return out + _freshness_lines(status.source_freshness)


def _freshness_lines(report: dict[str, Any] | None) -> list[str]:
    if report is None:
        return ["source freshness: not checked yet (run `outreach models`)"]
    if report.get("error"):
        return [f"source freshness: not checked ({report['error']})"]
    return [
        f"source freshness {s.get('source')}: {s.get('status')} (newest synced_at {s.get('max_loaded_at') or '-'})"
        for s in report.get("sources") or []
    ]
