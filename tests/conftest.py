"""Shared fixtures: real sandboxes over loopback HTTP, one per test that needs its own state."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Once a test in this process has imported the flows, the sync's loggers carry Prefect's API handler
# (flows/logs.py). Outside a flow run they log to the console only, as in the flow-run processes the product
# starts (the same default, set there before Prefect loads its settings); without it every later test's log
# line in this process warns "attempted to send logs to the API without a flow run id".
os.environ.setdefault("PREFECT_LOGGING_TO_API_WHEN_MISSING_FLOW", "ignore")

#: The files that took longest in a measured run (2026-11-27, wall seconds summed over their tests, each file
#: over 40 s). The suite runs one file per worker (`--dist loadfile --no-loadscope-reorder`, Makefile) in
#: collection order, so these start first and the short files fill the gaps, instead of a long file starting
#: last and running alone at the end. Slowest first, except the four that mostly wait (on a rate limit, a
#: signal, a lock, a reader's subprocesses): they are spread out, since two of them at once on the 3 workers
#: leave one of the 2 cores idle (they did, for 90 s, when they were listed side by side).
SLOW_FIRST: tuple[str, ...] = (
    "test_sync_pacing_exact.py",  # 66 s, almost all of it waiting
    "test_models_build.py",
    "test_models_incremental_sandbox.py",
    "test_flows_workpool.py",
    "test_models_interrupt.py",  # 3 minutes of builds in one file, one worker
    "test_models_postgres.py",
    "test_soak.py",
    "test_demo.py",
    "test_demo_interrupt.py",
    "test_flows.py",
    "test_sync_signals.py",  # waits
    "test_report_browser.py",
    "test_models_engagement_sandbox.py",
    "test_alerts_sandbox.py",
    "test_bi_readers.py",  # waits
    "test_flows_serve.py",
    "test_models_drift.py",
    "test_alerts_postgres.py",
    "test_sync_lock.py",  # waits
    "test_models_incremental_undo.py",
    "test_sync_batches.py",
    "test_sync.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the slow files to the front, keeping pytest-randomly's order inside each group (a stable sort)."""
    rank = {name: index for index, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(scope="session", autouse=True)
def dbt_parse_cache() -> None:
    """dbt's parse of the project, shared by the session's new warehouses (devtools/dbt_parse_cache.py), and
    its behaviour flags' module found without reading source files (devtools/dbt_behavior_source.py)."""
    from devtools import dbt_behavior_source, dbt_parse_cache

    dbt_parse_cache.install()
    dbt_behavior_source.install()
    # and in the processes the tests start: tests/_site/sitecustomize.py installs it there, on this cache
    # whatever HOME a test gives them (a test of an uncreatable HOME must not see the cache create it)
    from devtools.readers import CACHE

    os.environ.setdefault("OUTREACH_CACHE_DIR", str(CACHE.parent))
    site = str(Path(__file__).parent / "_site")
    os.environ["PYTHONPATH"] = os.pathsep.join([site, *filter(None, [os.environ.get("PYTHONPATH")])])


@pytest.fixture(scope="session", autouse=True)
def dbt_threads() -> None:
    """dbt's threads per build, for this session and the processes it starts: one. The test workers already keep
    every core busy, and each more dbt thread only adds CPU (the GIL's hand-offs), not speed."""
    os.environ.setdefault("OUTREACH_DBT_THREADS", "1")


@pytest.fixture
def make_sandbox() -> Iterator[Callable[..., Any]]:
    """Start sandboxes (uvicorn on a free loopback port, in a thread); stop them all after the test.

    Usage: ``sb = make_sandbox(scale="tiny", rate_limit=0)``; then ``sb.base_url``,
    ``sb.url`` (root, for the control plane), ``sb.keys()``, ``sb.advance(seconds)``.
    """
    from sandbox.server import SandboxServer

    started: list[SandboxServer] = []

    def _make(**kwargs: Any) -> SandboxServer:
        server = SandboxServer(**kwargs)
        server.start()
        started.append(server)
        return server

    yield _make
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def shared_small_sandbox() -> Iterator[Any]:
    """One `small` sandbox with the rate limit off, for read-only tests. Do not advance its clock."""
    from sandbox.server import SandboxServer

    server = SandboxServer(scale="small", rate_limit=0)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """One real PostgreSQL server for the session (devtools.pgserver; started as the postgres user)."""
    from devtools.pgserver import PostgresServer

    server = PostgresServer().start()
    yield server
    server.stop()


@pytest.fixture
def pg_dsn(pg_server: Any, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the session's PostgreSQL server, named after the test; its DSN."""
    import re

    name = "t_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:50]
    return str(pg_server.create_database(name))


@pytest.fixture
def pg_credentials(pg_server: Any, pg_dsn: str) -> str:
    """`pg_dsn` as dlt's credentials (with the password dlt asks for, which the test server ignores)."""
    return str(pg_server.dlt_credentials(pg_dsn.rsplit("/", 1)[1]))


@pytest.fixture(params=["duckdb", "postgres"])
def empty_warehouse(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """An empty warehouse of each engine, as the settings resolve it: a new DuckDB file, or a fresh PostgreSQL
    database (DESTINATION__POSTGRES__CREDENTIALS set for the test)."""
    import duckdb

    from pipelines.warehouse.destination import warehouse_target

    if request.param == "postgres":
        monkeypatch.setenv("DESTINATION__POSTGRES__CREDENTIALS", request.getfixturevalue("pg_credentials"))
        return warehouse_target(destination="postgres")
    duckdb.connect(str(tmp_path / "w.duckdb")).close()
    return warehouse_target(duckdb_path=tmp_path / "w.duckdb")


@pytest.fixture(scope="module")
def prefect_harness() -> Iterator[str]:
    """One Prefect test server (temporary SQLite) per test file that needs one; yields its API URL.

    Per file, not per session: an idle server still costs CPU (its services poll its database), and a
    session's server idled from the first file that used it to the worker's last file.

    Prefect's own ``prefect_test_harness`` (started again on another port if another test took its port first,
    tests/prefect_harness.py): this process's settings point at it; subprocesses
    (the ``prefect`` CLI, workers) get the URL through ``PREFECT_API_URL``. Its server begins its SQLite
    transactions as ``outreach demo``'s does (tests/_site/sitecustomize.py): Prefect's own default made its
    client wait out 503s, 3 or 4 times per run of tests/flows/test_flows.py. Its database starts from the
    migrated template ``outreach demo``'s servers keep (the same file), so it does not migrate a new one.
    """
    from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ANALYTICS_ENABLED, temporary_settings

    from tests.prefect_harness import prefect_harness_started

    with temporary_settings(updates={PREFECT_SERVER_ANALYTICS_ENABLED: False}):
        with prefect_harness_started():
            yield str(PREFECT_API_URL.value())


@pytest.fixture(autouse=True)
def _no_handlers_on_closed_streams() -> Iterator[None]:
    """A logging handler made inside a CliRunner invocation (Prefect's console handler on the root logger
    when Prefect is first imported there; dlt's) keeps that invocation's stream, which closes when it ends:
    any later test whose code logs a warning would print "--- Logging error ---" into its own output. Drop
    such handlers after each test, so no test depends on which ran before it in the same process."""
    import logging

    yield
    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    for logger in loggers:
        for handler in list(logger.handlers):
            if getattr(getattr(handler, "stream", None), "closed", False):
                logger.removeHandler(handler)
