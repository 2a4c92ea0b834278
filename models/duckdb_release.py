"""The one private use of dbt-duckdb: closing its in-process DuckDB session after a run.

dbt-duckdb keeps one DuckDB instance per process (class attribute `DuckDBConnectionManager._ENV`) and,
for a `:memory:` session with the warehouse attached, keeps it open until the process exits. A flow
that loads, builds and loads again in one process must get the file back, so after every dbt run we
close that instance. tests/models/test_models_build.py fails naming dbt-duckdb if an upgrade changes this.
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)


class DbtDuckdbChanged(RuntimeError):
    """dbt-duckdb no longer exposes what release_duckdb() relies on."""


def release_duckdb() -> None:
    """Close dbt-duckdb's DuckDB instance (and with it the attached warehouse file), if one is open."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    if not hasattr(DuckDBConnectionManager, "_ENV") or not hasattr(DuckDBConnectionManager, "_LOCK"):
        raise DbtDuckdbChanged(
            "dbt-duckdb changed: DuckDBConnectionManager._ENV/_LOCK are gone; update models/duckdb_release.py "
            "for the installed dbt-duckdb (the warehouse would stay open in this process)"
        )
    with DuckDBConnectionManager._LOCK:
        env = DuckDBConnectionManager._ENV
        DuckDBConnectionManager._ENV = None
    if env is not None:
        close = getattr(env, "close", None)
        if close is None:
            raise DbtDuckdbChanged(
                "dbt-duckdb changed: its environment has no close(); update models/duckdb_release.py"
            )
        close()
        log.debug("closed dbt-duckdb's DuckDB session")
