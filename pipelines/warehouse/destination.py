"""Where the sync writes: the warehouse (DuckDB file, PostgreSQL, or another dlt destination) and the dlt
pipelines that load it.

`warehouse_target(settings)` is the one answer to "which warehouse?" for every command and flow (sync,
status, models, report): ``--duckdb``/``--destination`` when given, else ``[sources.outreach]
duckdb_path``/``destination`` from dlt config, else ``data/outreach.duckdb``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.core import constants
from pipelines.core.config import OutreachSettings, path_problem, resolve_settings
from pipelines.core.errors import ConfigError, WarehouseError, postgres_unreachable
from pipelines.warehouse.duckdb_file import create_duckdb_file
from pipelines.warehouse.duckdb_memory import load_threads
from pipelines.warehouse.load_dir import chosen_dlt_dir
from pipelines.warehouse.lock import LockTarget, file_target
from pipelines.warehouse.postgres_credentials import read_credentials

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Warehouse:
    """One warehouse: a DuckDB file (`duckdb_path`) or a dlt destination configured the dlt way."""

    destination: str
    duckdb_path: Path | None = None
    storage_version: str = constants.DEFAULT_STORAGE_VERSION
    memory_limit: str = constants.DEFAULT_MEMORY_LIMIT

    @property
    def is_duckdb(self) -> bool:
        return self.destination == "duckdb"

    @property
    def is_postgres(self) -> bool:
        return self.destination == "postgres"

    @property
    def identity(self) -> str:
        """What tells this warehouse from every other (never a password): the file, or the server's database."""
        if self.duckdb_path is not None:
            return f"duckdb:{self.duckdb_path}"
        if self.is_postgres:
            creds = self.postgres_credentials()
            return f"postgres://{creds.host}:{creds.port}/{creds.database}"
        return self.destination

    @property
    def label(self) -> str:
        """What messages and the summary call it (never a password)."""
        if self.duckdb_path is not None:
            return str(self.duckdb_path)
        if self.is_postgres:
            creds = self.postgres_credentials()
            return f"postgres {creds.database}@{creds.host}:{creds.port}"
        return self.destination

    def lock_target(self) -> LockTarget:
        if self.duckdb_path is not None:
            return file_target(self.duckdb_path)
        if self.is_postgres:
            creds = self.postgres_credentials()
            return LockTarget(
                key=f"postgres:{creds.host}:{creds.port}/{creds.database}/{constants.DATASET_NAME}",
                connect=self.connect,
                scope=constants.DATASET_NAME,
            )
        # another dlt destination: no lock of its own beyond this process
        return LockTarget(
            key=f"{self.destination}:{constants.DATASET_NAME}",
            lock_file=None,
            connect=None,
            scope=constants.DATASET_NAME,
        )

    def schema_lock_target(self) -> LockTarget | None:
        """On a server, the exclusive lock around dlt's schema changes (CREATE SCHEMA / TABLE / ALTER): loads
        run at once there, and two pipelines creating the same table at the same moment collide."""
        if not self.is_postgres:
            return None
        base = self.lock_target()
        return LockTarget(key=base.key + "#schema", connect=self.connect, scope=constants.DATASET_NAME + "#schema")

    def connect(self) -> Any:
        """A DB-API connection to the PostgreSQL database (credentials the dlt way); one that fails is a one-line
        WarehouseError naming the fix (`postgres_unreachable`)."""
        import psycopg2

        try:
            return psycopg2.connect(self.postgres_credentials().to_native_representation())
        except psycopg2.OperationalError as exc:
            raise WarehouseError(postgres_unreachable(self.label, exc)) from exc

    def postgres_credentials(self) -> Any:
        """dlt's resolved PostgreSQL credentials (`postgres_credentials.read_credentials`; holds the password)."""
        return read_credentials()

    def dlt_destination(self, staging_suffix: str = "") -> Any:
        """The dlt destination, its staging dataset ``outreach_staging_<suffix>`` (one per pipeline: a
        load resumed after a crash must never merge another pipeline's staged rows)."""
        layout = f"%s_staging_{staging_suffix}" if staging_suffix else "%s_staging"
        if self.duckdb_path is not None:
            from pipelines.warehouse.duckdb_destination import outreach_duckdb

            credentials = {"database": str(self.duckdb_path), "global_config": self.duckdb_config()}
            return outreach_duckdb(credentials=credentials, staging_dataset_name_layout=layout)
        from dlt.common.destination import Destination

        if self.is_postgres:  # the credentials as resolved here: a DSN without a password works too
            import dlt

            return dlt.destinations.postgres(
                credentials=self.postgres_credentials(), staging_dataset_name_layout=layout
            )
        return Destination.from_reference(self.destination, staging_dataset_name_layout=layout)

    def duckdb_config(self) -> dict[str, Any]:
        """Bound DuckDB's memory during loads (its default is 80% of RAM); it spills to disk instead, on the
        threads that memory can feed (`load_threads`)."""
        config: dict[str, Any] = {"memory_limit": self.memory_limit, "preserve_insertion_order": False}
        threads = load_threads(self.memory_limit)
        if threads is not None:
            config["threads"] = threads
        return config

    def open_for_writing(self) -> None:
        """Open the DuckDB warehouse for writing once, and close it: creates a missing file in
        `storage_version` (dlt would create it in DuckDB's newest format, which older DuckDB releases,
        and so most BI tools, cannot open; DuckDB keeps writing a file in the format it was created in),
        and raises DuckDB's own error for a file another process holds or one that is not a database."""
        if self.duckdb_path is None:
            return
        import duckdb

        self.duckdb_path.parent.mkdir(parents=True, exist_ok=True)
        if not self.duckdb_path.exists() and create_duckdb_file(self.duckdb_path, self.storage_version):
            return  # made and opened just now: writable
        try:
            duckdb.connect(str(self.duckdb_path)).close()
        except duckdb.ConnectionException:
            # this process already has the database open with other settings (dlt's): open, so writable
            log.debug("warehouse %s already open in this process", self.duckdb_path)

    def create_if_missing(self) -> None:
        """Create a missing DuckDB warehouse in `storage_version` (see `open_for_writing`)."""
        if self.duckdb_path is not None and not self.duckdb_path.exists():
            self.open_for_writing()


def warehouse_target(
    settings: OutreachSettings | None = None,
    *,
    duckdb_path: str | Path | None = None,
    destination: str | None = None,
) -> Warehouse:
    """The warehouse every command and flow uses: explicit arguments over `settings` (dlt config)."""
    problem = path_problem("duckdb_path", duckdb_path, given=True)
    if problem:
        raise ConfigError(problem)
    cfg = settings or resolve_settings()
    name = (destination or cfg.destination or "duckdb").strip().lower()
    if name == "duckdb":
        # absolute: dlt would otherwise resolve a relative path against a pipeline's previous working dir
        path = Path(duckdb_path or cfg.duckdb_path or constants.DEFAULT_DUCKDB_PATH).expanduser().resolve()
        return Warehouse("duckdb", path, cfg.duckdb_storage_version, cfg.duckdb_memory_limit)
    if duckdb_path is not None:
        raise ConfigError(f"--duckdb names a DuckDB file but the destination is {name}: pass one of them")
    return Warehouse(name, None, cfg.duckdb_storage_version, cfg.duckdb_memory_limit)


#: dlt makes a pipeline's working folder by wiping it, then creating it (`exists_ok=False`), and reads it back:
#: two threads making the same pipeline at once (a flow's workspaces, each keeping the warehouse open through
#: the one events pipeline) failed there with FileExistsError, "Directory not empty" or an AttributeError.
_MAKING = threading.Lock()


def make_pipeline(name: str, warehouse: Warehouse, pipelines_dir: str | Path | None) -> Any:
    """A dlt pipeline writing to dataset `outreach` of `warehouse`, with its own staging dataset, in the
    warehouse's own dlt working directory (`dlt_working_dir`); one thread of this process at a time."""
    import dlt

    bounded_files()
    destination = warehouse.dlt_destination(name.removeprefix(constants.PIPELINE_PREFIX))
    with _MAKING:
        return dlt.pipeline(
            pipeline_name=name,
            destination=destination,
            dataset_name=constants.DATASET_NAME,
            pipelines_dir=str(dlt_working_dir(warehouse, pipelines_dir)),
        )


_CLAIM_FILE = ".outreach_warehouse"


def dlt_working_dir(warehouse: Warehouse, pipelines_dir: str | Path | None = None, *, claim: bool = True) -> Path:
    """Where dlt keeps the pipelines (schemas, state, pending packages) of `warehouse`: never a directory
    another warehouse uses, so one warehouse's stored schema (its column types) or pending load never
    reaches another. Pipelines are named per workspace, so the dlt working directory of a run is keyed
    by destination, warehouse and workspace.

    `pipelines_dir` given: that directory, claimed by the first warehouse that uses it (a
    ``.outreach_warehouse`` file names it); another warehouse gets ``<dir>/warehouses/<its hash>``.
    Default: beside a DuckDB file, ``.<stem>_dlt`` (``data/.outreach_dlt`` for ``data/outreach.duckdb``);
    for a server, ``outreach_<destination>_<hash of host, port and database>`` in dlt's own default
    (``~/.dlt/pipelines``; ``DLT_DATA_DIR`` moves it). `claim` False (a check): where it is or would be, creating
    nothing.
    """
    identity = warehouse.identity
    chosen = chosen_dlt_dir(warehouse.duckdb_path, pipelines_dir)
    if chosen is None:
        from dlt.common.pipeline import get_dlt_pipelines_dir

        chosen = (
            Path(get_dlt_pipelines_dir()) / f"{constants.PIPELINE_PREFIX}{warehouse.destination}_{_digest(identity)}"
        )
    if _claim(chosen, identity, claim) == identity:
        return chosen
    own = chosen / "warehouses" / _digest(identity)
    log.info("%s holds another warehouse's dlt pipelines: %s uses %s", chosen, warehouse.label, own)
    _claim(own, identity, claim)
    return own


def _claim(directory: Path, identity: str, claim: bool = True) -> str:
    """The warehouse that `directory` belongs to, claiming it for `identity` when nobody has (`claim` False:
    taken as `identity`'s, nothing written)."""
    marker = directory / _CLAIM_FILE
    with contextlib.suppress(FileNotFoundError):
        return marker.read_text().strip()
    if not claim:
        return identity
    directory.mkdir(parents=True, exist_ok=True)
    try:
        with open(marker, "x") as handle:  # "x": of two processes claiming at once, one wins
            handle.write(identity + "\n")
    except FileExistsError:
        pass
    return marker.read_text().strip()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def bounded_files() -> None:
    """Rotate extract/normalize files every `FILE_MAX_ROWS` rows (unless configured otherwise): normalize and
    load then take one bounded file at a time, not a whole run's recipients at once. dlt's extract writer
    reads ``[sources.data_writer]``, normalize ``[normalize.data_writer]``; set through dlt's config
    accessor (this process's dlt config only, no environment variables)."""
    import dlt

    for section in ("sources", "normalize"):
        key = f"{section}.data_writer.file_max_items"
        if dlt.config.get(key) is None:
            dlt.config[key] = constants.FILE_MAX_ROWS
