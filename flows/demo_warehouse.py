"""The demo's own files beside its warehouse: which they are, and their removal before a new demo run.

The demo replaces a warehouse only if its marker (pipelines/warehouse/demo_guard.py) says the demo made it and
every workspace in it is one the demo listed there: real data synced into a demo warehouse is never deleted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from flows import stages
from flows.shell import shown_path
from pipelines.core.errors import ConfigError
from pipelines.warehouse import demo_guard


def demo_pipelines_dir(warehouse: Path) -> Path:
    """dlt state of the demo lives beside its warehouse, never in the user's ~/.dlt."""
    return warehouse.with_name(f".{warehouse.stem}_demo_dlt")


def demo_files(warehouse: Path) -> list[Path]:
    """Every file the demo writes for a warehouse (the marker last: it is what lets the demo replace them)."""
    return [
        warehouse,
        warehouse.with_name(warehouse.name + ".wal"),
        stages.bi_path_for(warehouse),
        demo_guard.marker_path(warehouse),
    ]


def prepare_warehouse(warehouse: Path) -> None:
    """Remove the previous demo's files; refuse, in one line, to touch anything the demo did not make (the
    rule in this module's docstring)."""
    marker = demo_guard.read_marker(warehouse)
    bi = stages.bi_path_for(warehouse)
    if marker is None and (warehouse.exists() or bi.exists()):
        existing = warehouse if warehouse.exists() else bi
        raise ConfigError(
            f"{shown_path(existing)} exists and was not made by the demo: pass --duckdb with another path, "
            "e.g. --duckdb data/demo.duckdb (the demo replaces its own warehouse only)"
        )
    if marker is not None and warehouse.exists():
        foreign = sorted(demo_guard.workspaces_in(warehouse) - marker.workspace_ids)
        if foreign:
            raise ConfigError(
                f"{shown_path(warehouse)} holds {len(foreign)} workspace(s) the demo did not create "
                f"({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}): the demo leaves it alone; pass --duckdb data/demo.duckdb"
            )
    for path in demo_files(warehouse):
        path.unlink(missing_ok=True)
    shutil.rmtree(demo_pipelines_dir(warehouse), ignore_errors=True)
    warehouse.parent.mkdir(parents=True, exist_ok=True)
