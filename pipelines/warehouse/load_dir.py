"""Where dlt keeps a DuckDB warehouse's pipelines unless told otherwise, and whether dlt can work there. No dlt
import: the sync's edge asks before its first API request."""

from __future__ import annotations

from pathlib import Path

#: a character dlt cannot have in its working directory's path -> (its name, why), and whether only a DuckDB
#: warehouse is hurt: dlt %-formats its file names from templates holding that path (every destination), and its
#: DuckDB loader puts load files' paths into SQL unescaped (`read_parquet('...')`); either way every run fails
_REFUSED = {
    "%": ("a percent sign (%)", "which dlt's file name templates cannot hold", False),
    "'": ("a single quote (')", "and dlt's DuckDB loader cannot read load files from such a path", True),
}


def default_dlt_dir(duckdb_path: Path) -> Path:
    """``.<stem>_dlt`` beside the DuckDB file (``data/.outreach_dlt`` for ``data/outreach.duckdb``)."""
    return duckdb_path.with_name(f".{duckdb_path.stem}_dlt")


def chosen_dlt_dir(duckdb_path: Path | None, pipelines_dir: str | Path | None) -> Path | None:
    """The dlt working directory asked for: `pipelines_dir`, else a DuckDB warehouse's default; None for a server's
    default, which is in dlt's own data directory (`destination.dlt_working_dir`)."""
    if pipelines_dir:
        return Path(pipelines_dir).expanduser().resolve()
    return default_dlt_dir(duckdb_path) if duckdb_path is not None else None


def working_dir_problem(duckdb_path: Path | None, pipelines_dir: str | Path | None) -> str | None:
    """The line for a dlt working directory (`chosen_dlt_dir`) whose path dlt cannot work in; None when there is
    none to check."""
    chosen = chosen_dlt_dir(duckdb_path, pipelines_dir)
    if chosen is None:
        return None
    where = chosen.absolute()
    fix = (
        "set SOURCES__OUTREACH__PIPELINES_DIR to a path without one"
        if pipelines_dir
        else "move the warehouse to a path without one (--duckdb), or set SOURCES__OUTREACH__PIPELINES_DIR to one"
    )
    for char, (name, why, duckdb_only) in _REFUSED.items():
        if char in str(where) and (duckdb_path is not None or not duckdb_only):
            return f"dlt's working directory {where} has {name} in its path, {why}: {fix}"
    return None
