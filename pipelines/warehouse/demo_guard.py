"""Demo warehouses hold the demo's sandbox workspaces and nothing else.

``outreach demo`` writes ``<warehouse>.demo`` beside its warehouse, listing the ids of the sandbox
workspaces it syncs. Two rules keep real data and demo data apart:

- a sync into a marked warehouse with a key whose workspace is not listed refuses, in one line,
  before anything is written (:func:`refuse_foreign_workspaces`, called by the sync's run entry
  right after the keys are checked);
- ``outreach demo`` replaces a marked warehouse only if every workspace in it is listed
  (:func:`workspaces_in`; the check lives in ``flows/demo_warehouse.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.core.errors import ConfigError

MARKER_SUFFIX = ".demo"
MADE_BY = "outreach demo"


@dataclass(frozen=True)
class DemoMarker:
    """What the demo recorded about its warehouse."""

    path: Path
    workspace_ids: frozenset[str]


def marker_path(warehouse: str | Path) -> Path:
    """``<warehouse>.demo`` in the same directory."""
    path = Path(warehouse)
    return path.with_name(path.name + MARKER_SUFFIX)


def write_marker(warehouse: str | Path, workspace_ids: Iterable[str]) -> Path:
    """Mark ``warehouse`` as the demo's, holding exactly these sandbox workspaces."""
    path = marker_path(warehouse)
    body = {
        "made_by": MADE_BY,
        "note": "this warehouse holds the demo's sandbox workspaces only; syncs of other workspaces refuse it",
        "sandbox_workspace_ids": sorted(set(workspace_ids)),
    }
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path


def read_marker(warehouse: str | Path) -> DemoMarker | None:
    """The demo's marker of ``warehouse``, or None when there is none.

    A marker the demo wrote before it listed workspaces (plain text) lists none: every workspace
    in such a warehouse counts as one the demo did not create.
    """
    path = marker_path(warehouse)
    if not path.is_file():
        return None
    try:
        body = json.loads(path.read_text())
    except (ValueError, OSError):
        return DemoMarker(path, frozenset())
    ids = body.get("sandbox_workspace_ids") if isinstance(body, dict) else None
    return DemoMarker(path, frozenset(str(i) for i in ids) if isinstance(ids, list) else frozenset())


def _workspace_of(account: Any) -> tuple[str, str] | None:
    """(id, name) of a ``GET /account`` answer; None for a key whose check failed."""
    if not isinstance(account, Mapping) or not isinstance(account.get("workspace"), Mapping):
        return None
    workspace = account["workspace"]
    return str(workspace.get("id")), str(workspace.get("name") or workspace.get("id"))


def refuse_foreign_workspaces(duckdb_path: str | Path | None, accounts: Iterable[Any]) -> None:
    """Raise a one-line ``ConfigError`` if ``duckdb_path`` is a demo warehouse and a key reads another workspace.

    ``accounts``: the ``GET /account`` answers of the run's keys, in key order (entries that are
    not answers, e.g. a failed key's error, are skipped). ``duckdb_path=None`` (not a DuckDB
    destination) never refuses.
    """
    if duckdb_path is None:
        return
    marker = read_marker(duckdb_path)
    if marker is None:
        return
    for index, account in enumerate(accounts):
        workspace = _workspace_of(account)
        if workspace is None or workspace[0] in marker.workspace_ids:
            continue
        raise ConfigError(
            f"{duckdb_path} is the demo's warehouse (sandbox workspaces only; see {marker.path.name}) and key "
            f"#{index + 1} reads workspace {workspace[1]!r} ({workspace[0]}): sync into a warehouse of its own, "
            "e.g. --duckdb data/mine.duckdb, or delete the demo's files first"
        )


def workspaces_in(warehouse: str | Path) -> set[str]:
    """Every ``workspace_id`` found in any table of the warehouse's ``outreach`` schema (read-only)."""
    import duckdb

    path = Path(warehouse)
    con = duckdb.connect()
    try:
        try:
            con.execute("attach ? as w (read_only)", [str(path)])
        except duckdb.Error as exc:
            raise ConfigError(
                f"{path} cannot be opened to check what it holds ({type(exc).__name__}): "
                "stop the process using it, or pass --duckdb with another path"
            ) from exc
        tables = con.execute(
            "select table_name from information_schema.columns "
            "where table_catalog = 'w' and table_schema = 'outreach' and column_name = 'workspace_id'"
        ).fetchall()
        found: set[str] = set()
        for (table,) in tables:
            quoted = '"' + str(table).replace('"', '""') + '"'
            rows = con.execute(
                f"select distinct workspace_id from w.outreach.{quoted} where workspace_id is not null"
            ).fetchall()
            found.update(str(row[0]) for row in rows)
        return found
    finally:
        con.close()
