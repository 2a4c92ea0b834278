"""Where dlt keeps a DuckDB warehouse's pipelines unless told otherwise, and whether its DuckDB loader can read
load files from there. No dlt import: the sync's edge asks before its first API request."""

from __future__ import annotations

from pathlib import Path


def default_dlt_dir(duckdb_path: Path) -> Path:
    """``.<stem>_dlt`` beside the DuckDB file (``data/.outreach_dlt`` for ``data/outreach.duckdb``)."""
    return duckdb_path.with_name(f".{duckdb_path.stem}_dlt")


def quote_problem(duckdb_path: Path | None, pipelines_dir: str | Path | None) -> str | None:
    """The line for a DuckDB warehouse whose load files would sit under a path with a single quote: dlt's DuckDB
    loader puts that path into SQL unescaped (`read_parquet('...')`), so every load fails, run after run. None
    when there is none, or for a server, which dlt loads without file paths in SQL."""
    if duckdb_path is None:
        return None
    where = (Path(pipelines_dir).expanduser() if pipelines_dir else default_dlt_dir(duckdb_path)).absolute()
    if "'" not in str(where):
        return None
    return (
        f"dlt's working directory {where} has a single quote (') in its path, and dlt's DuckDB loader cannot read "
        "load files from such a path: move the warehouse to a path without one (--duckdb), or set "
        "SOURCES__OUTREACH__PIPELINES_DIR to one"
    )
