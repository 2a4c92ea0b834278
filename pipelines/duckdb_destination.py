"""A DuckDB destination whose SQL names carry the catalog: ``"<catalog>"."outreach"."<table>"``.

DuckDB names a file's catalog after its stem, so the contract's default ``data/outreach.duckdb``
has catalog ``outreach``, the same as the dataset (schema) ``outreach``; dlt's two-part names
``outreach.<table>`` are then ambiguous and the load fails ("Ambiguous reference to catalog or
schema"). With three-part names nothing is ambiguous, whatever the file is called. This is dlt's
own DuckDB destination with `catalog_name()` returning the file's catalog (as dlt's MotherDuck
client does). Two memory bounds besides (issue 7): load jobs run one at a time, and the merge
deduplicates staged rows without a window over every column (`RowidDedupMergeJob`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Type

from dlt.common.destination.capabilities import DestinationCapabilitiesContext
from dlt.common.destination.client import FollowupJobRequest, PreparedTableSchema
from dlt.common.schema.typing import TSortOrder
from dlt.destinations.impl.duckdb.duck import DuckDbClient
from dlt.destinations.impl.duckdb.factory import duckdb as duckdb_factory
from dlt.destinations.impl.duckdb.sql_client import DuckDbSqlClient
from dlt.destinations.sql_jobs import SqlMergeFollowupJob


def catalog_for(path: str | Path) -> str:
    """DuckDB's catalog name for a database file: its file name without the extension."""
    return Path(path).name.split(".")[0]


class CatalogDuckDbSqlClient(DuckDbSqlClient):
    def catalog_name(self, quote: bool = True, casefold: bool = True) -> Optional[str]:
        name = catalog_for(self.credentials.database)
        if casefold:
            name = self.capabilities.casefold_identifier(name)
        return self.capabilities.escape_identifier(name) if quote else name


class RowidDedupMergeJob(SqlMergeFollowupJob):
    """dlt's merge, deduplicating staged rows by keeping each key's first staged row (smallest rowid)
    instead of numbering all rows with ROW_NUMBER() OVER (PARTITION BY key).

    The window materialises every column of every staged row at once, so the merge's memory grows
    with the rows staged (about 270 MB for 1M recipients); grouping only the key and a rowid needs a
    fraction of that and runs about twice as fast. dlt's own order is arbitrary ("ORDER BY (SELECT
    NULL)"); with `dedup_sort` or declared-deduplicated data dlt's SQL is used unchanged.
    """

    @classmethod
    def gen_select_from_dedup_sql(
        cls,
        table_name: str,
        primary_keys: Sequence[str],
        columns: Sequence[str],
        dedup_sort: Tuple[str, TSortOrder] = None,
        condition: str = None,
        condition_columns: Sequence[str] = None,
        skip_dedup: bool = False,
    ) -> str:
        if skip_dedup or dedup_sort is not None:
            return super().gen_select_from_dedup_sql(
                table_name, primary_keys, columns, dedup_sort, condition, condition_columns, skip_dedup
            )
        inner = list(columns) + list(condition_columns or [])
        return f"""
            SELECT {", ".join(columns)}
                FROM (
                    SELECT {", ".join(inner)} FROM {table_name}
                    WHERE rowid IN (SELECT min(rowid) FROM {table_name} GROUP BY {", ".join(primary_keys)})
                ) AS _dlt_dedup_first WHERE ({condition or "1 = 1"})
        """


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

    def _create_merge_followup_jobs(self, table_chain: Sequence[PreparedTableSchema]) -> List[FollowupJobRequest]:
        return [RowidDedupMergeJob.from_table_chain(table_chain, self.sql_client)]


class outreach_duckdb(duckdb_factory):  # noqa: N801 - dlt factories are lowercase
    @property
    def client_class(self) -> Type[DuckDbClient]:
        return CatalogDuckDbClient

    def _raw_capabilities(self) -> DestinationCapabilitiesContext:
        # one load job at a time: dlt's default runs every file's COPY at once, and each holds its
        # own read buffers, so a load's memory grew with the number of files (rows) in the package;
        # one DuckDB file takes one writer at a time anyway (measured: same load time)
        caps = super()._raw_capabilities()
        caps.loader_parallelism_strategy = "sequential"
        return caps
