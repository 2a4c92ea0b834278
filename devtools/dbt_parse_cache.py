"""dbt's partial-parse manifest shared between the test suite's warehouses, cached outside the clone.

Every warehouse has its own dbt target/ (models/settings.py keeps them apart), so the first dbt command
on a new warehouse parses the whole project: in the test suite, which builds dozens of new warehouses,
that full parse is about half of each build. dbt's own partial parsing checks a saved manifest against
dbt's version, the vars, the profile's connection keys, dbt_project.yml and every project file's checksum,
and parses again whatever differs; so seeding a new target/ with the manifest an earlier command saved
changes what dbt does only in time. The cache is keyed by those same inputs (and the project's path),
so it offers a manifest only where dbt would have written the same one.

One input is left out, in this process only: dbt's profile check hashes the connection's values, so the
warehouse file's path alone (in profiles.yml's `attach` and `temp_directory`) would make every warehouse
parse again. No model, test or macro reads it at parse time (they name the attached catalog, `warehouse`),
so the check here hashes every connection value with that path replaced by a placeholder. This uses
dbt's private `ManifestLoader`: kept in this one module, for the suite only, and
tests/models/test_dbt_parse_cache.py fails when dbt changes it.

`install()` wraps dbt's programmatic runner of this process (the test suite calls it from conftest.py);
the product never uses this module. Files live under ``$OUTREACH_CACHE_DIR/dbt-parse`` (see
devtools/readers.py for the cache root), one per key; delete the folder to start cold.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pprint
import shutil
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from devtools.readers import CACHE as READERS_CACHE

CACHE = READERS_CACHE.parent / "dbt-parse"
PARSE_FILE = "partial_parse.msgpack"  # what dbt reads from and writes to its target path
#: what models/profiles.yml reads: the target (part of the key) and the warehouse file (left out of dbt's check)
DESTINATION_ENV = "SOURCES__OUTREACH__DESTINATION"
DUCKDB_PATH_ENV = "SOURCES__OUTREACH__DUCKDB_PATH"
_PACKAGES = ("dbt-core", "dbt-duckdb", "dbt-postgres")
_SKIPPED_DIRS = {"__pycache__", "target", "logs", "dbt_packages"}


def _option(args: list[str], name: str) -> str | None:
    """The value after `name` in a dbt argument list."""
    for index, arg in enumerate(args[:-1]):
        if arg == name:
            return args[index + 1]
    return None


def _installed(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "-"


def cache_key(args: list[str]) -> str | None:
    """The key of the manifest dbt would save for this invocation; None without a project dir."""
    project = _option(args, "--project-dir")
    if project is None:
        return None
    root = Path(project).resolve()
    digest = hashlib.sha256()
    for part in (
        *(f"{p}={_installed(p)}" for p in _PACKAGES),
        str(root),
        _option(args, "--vars") or "",
        os.environ.get(DESTINATION_ENV, "duckdb"),
    ):
        digest.update(part.encode() + b"\0")
    for path in sorted(root.rglob("*")):
        if path.is_file() and not _SKIPPED_DIRS.intersection(path.relative_to(root).parts):
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:32]


def seed(args: list[str]) -> tuple[Path, Path] | None:
    """Before an invocation: copy a cached manifest into a target path that has none.

    Returns (cached file, target file) for `store`, or None when the invocation names no target path.
    """
    key, target_path = cache_key(args), _option(args, "--target-path")
    if key is None or target_path is None:
        return None
    cached, target = CACHE / f"{key}.msgpack", Path(target_path) / PARSE_FILE
    if cached.exists() and not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(cached, target)
    return cached, target


def store(cached: Path, target: Path) -> None:
    """After an invocation: keep the manifest dbt saved (it saves one after every parse, full or partial)."""
    if not target.exists():
        return
    cached.parent.mkdir(parents=True, exist_ok=True)
    partial = cached.with_name(f".{cached.name}.{os.getpid()}")
    shutil.copyfile(target, partial)
    os.replace(partial, cached)  # atomic: a concurrent reader sees the whole file or none


def _profile_check_without_path() -> None:
    """dbt's profile hash with the warehouse file's path as a placeholder (see the module's docstring)."""
    from dbt.artifacts.resources.base import FileHash
    from dbt.parser.manifest import ManifestLoader

    original = ManifestLoader.build_manifest_state_check

    def build_manifest_state_check(self: Any) -> Any:
        check = original(self)  # type: ignore[no-untyped-call]
        values = pprint.pformat(sorted(self.root_project.credentials.connection_info()))
        warehouse = os.environ.get(DUCKDB_PATH_ENV)
        if warehouse:
            values = values.replace(warehouse, "<warehouse>")
        check.profile_hash = FileHash.from_contents(values)
        return check

    ManifestLoader.build_manifest_state_check = build_manifest_state_check  # type: ignore[method-assign]


def install() -> None:
    """Make every `dbtRunner(...).invoke(args)` of this process seed from and feed the cache."""
    import dbt.cli.main as dbt_main

    runner = dbt_main.dbtRunner
    if getattr(runner, "parse_cached", False):
        return
    _profile_check_without_path()

    class CachingRunner(runner):  # type: ignore[misc, valid-type]
        parse_cached = True

        def invoke(self, args: list[str], **kwargs: Any) -> Any:
            # an optimisation only: a cache that cannot be written (a test's unwritable HOME) changes nothing
            paths = None
            with contextlib.suppress(OSError):
                paths = seed(list(args))
            result = super().invoke(args, **kwargs)
            if paths is not None:
                with contextlib.suppress(OSError):
                    store(*paths)
            return result

    dbt_main.dbtRunner = CachingRunner  # type: ignore[misc]
