"""A DuckDB destination whose SQL names carry the catalog: ``"<catalog>"."outreach"."<table>"``.

DuckDB names a file's catalog after its stem, so the contract's default ``data/outreach.duckdb``
has catalog ``outreach``, the same as the dataset (schema) ``outreach``; dlt's two-part names
``outreach.<table>`` are then ambiguous and the load fails ("Ambiguous reference to catalog or
schema"). With three-part names nothing is ambiguous, whatever the file is called. This is dlt's
own DuckDB destination with `catalog_name()` returning the file's catalog (as dlt's MotherDuck
client does), nothing else changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional, Type

from dlt.destinations.impl.duckdb.duck import DuckDbClient
from dlt.destinations.impl.duckdb.factory import duckdb as duckdb_factory
from dlt.destinations.impl.duckdb.sql_client import DuckDbSqlClient


def catalog_for(path: str | Path) -> str:
    """DuckDB's catalog name for a database file: its file name without the extension."""
    return Path(path).name.split(".")[0]


class CatalogDuckDbSqlClient(DuckDbSqlClient):
    def catalog_name(self, quote: bool = True, casefold: bool = True) -> Optional[str]:
        name = catalog_for(self.credentials.database)
        if casefold:
            name = self.capabilities.casefold_identifier(name)
        return self.capabilities.escape_identifier(name) if quote else name


class CatalogDuckDbClient(DuckDbClient):
    def __init__(self, schema: Any, config: Any, capabilities: Any) -> None:
        super().__init__(schema, config, capabilities)
        sql_client = CatalogDuckDbSqlClient(
            self.sql_client.dataset_name,
            self.sql_client.staging_dataset_name,
            config.credentials,
            capabilities,
        )
        self.sql_client = sql_client
        # the job client base keeps its own reference
        for attr in ("_sql_client",):
            if hasattr(self, attr):
                setattr(self, attr, sql_client)


class outreach_duckdb(duckdb_factory):  # noqa: N801 - dlt factories are lowercase
    @property
    def client_class(self) -> Type[DuckDbClient]:
        return CatalogDuckDbClient
