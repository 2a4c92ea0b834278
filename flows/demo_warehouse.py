"""The demo's own files beside its warehouse: which they are, their removal before a new demo run, and what the
demo prints about them at its end (how to query them, how to keep a real workspace apart from them).

The demo replaces a warehouse only if its marker (pipelines/warehouse/demo_guard.py) says the demo made it and
every workspace in it is one the demo listed there: real data synced into a demo warehouse is never deleted.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

from flows import stages
from flows.shell import command, shown_path
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


def next_steps(warehouse: Path) -> str:
    """How to query the result, and how to point the pipeline at a real key without mixing it with the demo."""
    bi = shown_path(stages.bi_path_for(warehouse))
    mine = shlex.quote(shown_path(warehouse.with_name("mine.duckdb")))
    outreach = command("outreach")
    python = shlex.quote(shown_path(Path(sys.executable)))
    dlt_dir = shlex.quote(shown_path(demo_pipelines_dir(warehouse)))
    demo_files = f"{shlex.quote(shown_path(warehouse))}* {shlex.quote(bi)} {dlt_dir}"
    return "\n".join(
        [
            "Query the result (the BI file holds schema `reporting`; the warehouse also has raw `outreach`):",
            f'  duckdb {bi} -c "select * from reporting.campaign_performance limit 5"   # duckdb CLI',
            (
                f"  {python} -c \"import duckdb; print(duckdb.connect('{bi}', read_only=True)"
                ".execute('select * from reporting.workspace_overview').df())\""
            ),
            "",
            f"Point it at the real API, in a warehouse of its own ({shown_path(warehouse)} holds the demo's sandbox",
            "workspaces and refuses any other):",
            "  export SOURCES__OUTREACH__BASE_URL=https://<your host>/api/v1",
            "  export SOURCES__OUTREACH__API_KEY=<your key>   # or api_keys = [...] in .dlt/secrets.toml",
            f"  {outreach} sync --mode full --duckdb {mine} && {outreach} models --duckdb {mine}",
            "Or remove the demo's files, then use the defaults (outreach sync, outreach models, outreach serve):",
            f"  rm -rf {demo_files}",
        ]
    )
