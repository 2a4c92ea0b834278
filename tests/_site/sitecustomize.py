"""What the Python processes the tests start get (conftest.py puts this folder first on PYTHONPATH):

- The test suite's dbt parse cache (`outreach models`, the demo, Prefect's flow runs), not only in pytest's own.
  Nothing happens until a process imports dbt's runner (`dbt.cli.main`); then devtools/dbt_parse_cache.py
  wraps it and devtools/dbt_behavior_source.py replaces dbt-common's stack walk, as conftest.py does in the
  test process. Processes that never run dbt pay one look-up per import.
- The server of Prefect's test harness (conftest.py's `prefect_harness`; Prefect runs it as `uvicorn --factory
  prefect.server.api.server:create_app`) begins its SQLite transactions as the server `outreach demo` and
  `outreach serve` start does (flows/prefect_server.py): else a 503 makes Prefect's client wait 2 s or more.
  Its new database starts as a copy of the migrated template those servers keep, as theirs do.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

_WATCHED = "dbt.cli.main"
_REPO = str(Path(__file__).resolve().parents[2])


class _InstallAfterImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name != _WATCHED:
            return None
        sys.meta_path.remove(self)  # the next finders locate dbt's own module
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            if _REPO not in sys.path:
                sys.path.append(_REPO)  # last: the product's own imports never resolve here first
            from devtools import dbt_behavior_source, dbt_parse_cache

            dbt_parse_cache.install()
            dbt_behavior_source.install()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


sys.meta_path.insert(0, _InstallAfterImport())


def _database_from_the_migrated_template() -> None:
    """The harness's new SQLite database starts as a copy of the migrated one the product's servers keep
    (flows/prefect_api.py), when there is one: its server then skips every migration, a third of its start."""
    import os

    from flows.prefect_api import start_from_template

    url = os.environ.get("PREFECT_SERVER_DATABASE_CONNECTION_URL", "")
    scheme = "sqlite+aiosqlite:///"
    if url.startswith(scheme):
        start_from_template(Path(url[len(scheme) :]))


if "prefect.server.api.server:create_app" in sys.orig_argv:
    if _REPO not in sys.path:
        sys.path.append(_REPO)
    from flows.prefect_server import take_sqlite_write_lock_at_begin

    take_sqlite_write_lock_at_begin()
    _database_from_the_migrated_template()
