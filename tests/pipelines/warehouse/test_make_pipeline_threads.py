"""Threads of one process making the same dlt pipeline at once: a flow's workspaces sync in threads, and each
keeps the warehouse open through the one events pipeline (`kept_open`), so on a warehouse's first run they make
it together. dlt wipes a new pipeline's folder, creates it and reads it back: unserialised, 17 of this test's 40
calls failed (FileExistsError, "Directory not empty", FileNotFoundError, an AttributeError), and 1 in 8 of the
demo's full syncs showed a FileExistsError that its task's retry hid. `make_pipeline` makes one at a time."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pipelines.core import constants
from pipelines.warehouse.destination import make_pipeline, warehouse_target

THREADS = 4
ROUNDS = 10


def _make_together(home: Path) -> list[str]:
    """THREADS threads make the events pipeline of a new warehouse in `home` at the same moment; their failures."""
    warehouse = warehouse_target(duckdb_path=home / "w.duckdb")
    together = threading.Barrier(THREADS)

    def make(_: int) -> str:
        together.wait()
        return str(make_pipeline(constants.EVENTS_PIPELINE_NAME, warehouse, home / "dlt").pipeline_name)

    with ThreadPoolExecutor(THREADS) as pool:
        futures = [pool.submit(make, n) for n in range(THREADS)]
    failures = []
    for future in futures:
        try:
            assert future.result() == constants.EVENTS_PIPELINE_NAME
        except Exception as exc:  # noqa: BLE001 - every failure counted, then shown
            failures.append(repr(exc)[:120])
    return failures


def test_threads_making_the_same_new_pipeline_at_once_all_get_it(tmp_path: Path) -> None:
    failures = [failure for n in range(ROUNDS) for failure in _make_together(tmp_path / str(n))]
    assert failures == [], f"{len(failures)} of {THREADS * ROUNDS} calls failed: {sorted(set(failures))}"
