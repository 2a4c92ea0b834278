"""On PostgreSQL the batches of one process load at once; their schema changes (dlt's CREATE and ALTER) must still
take turns, or two first loads into a new database collide on CREATE TABLE (seen at 1,000 workspaces on a work
pool). The warehouse lock alone is re-entrant across a process's threads, so it does not keep them apart."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import dlt
import pytest
from test_sync_support import query

from pipelines.sync.load import _update_schema
from pipelines.warehouse.destination import Warehouse, make_pipeline


def test_two_batches_of_one_process_change_the_schema_one_at_a_time(
    pg_dsn: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # dlt's PostgreSQL credentials require a password; the test server trusts loopback and ignores it
    monkeypatch.setenv(
        "DESTINATION__POSTGRES__CREDENTIALS", pg_dsn.replace("postgresql://postgres@", "postgresql://postgres:x@", 1)
    )
    warehouse = Warehouse("postgres")
    inside, most = 0, 0
    count = threading.Lock()

    def batch(name: str, column: str) -> Any:
        pipeline = make_pipeline(name, warehouse, tmp_path / "pipelines")
        pipeline.extract(dlt.resource([{"id": name, column: 1}], name="workspaces"))
        pipeline.normalize()
        sync_schema = pipeline.sync_schema

        def counted() -> Any:
            nonlocal inside, most
            with count:
                inside += 1
                most = max(most, inside)
            time.sleep(0.5)  # the other batch arrives meanwhile
            try:
                return sync_schema()
            finally:
                with count:
                    inside -= 1

        pipeline.sync_schema = counted
        return SimpleNamespace(warehouse=warehouse, pipeline=pipeline)

    batches = [batch("outreach_turns_a", "only_in_a"), batch("outreach_turns_b", "only_in_b")]
    failures: list[BaseException] = []

    def update(extracted: Any) -> None:
        try:
            _update_schema(cast(Any, extracted))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            failures.append(exc)

    threads = [threading.Thread(target=update, args=(b,)) for b in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    assert most == 1
    columns = query(
        pg_dsn,
        "select column_name from information_schema.columns where table_schema = 'outreach' "
        "and table_name = 'workspaces'",
    )
    assert {"id", "only_in_a", "only_in_b"} <= {c for (c,) in columns}
