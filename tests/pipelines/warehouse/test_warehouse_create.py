"""A new DuckDB warehouse appears whole: syncs that start together (the demo's two workspaces, a work pool's
workers) check the file while one of them creates it, and must never see a file without its header."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pipelines.warehouse import duckdb_file
from pipelines.warehouse.destination import Warehouse
from pipelines.warehouse.diagnose import warehouse_problem
from pipelines.warehouse.duckdb_file import storage_number
from pipelines.warehouse.warehouse_prep import prepare_warehouse

V1_0 = 64  # the storage number of v1.0.0, which DuckDB 1.x readers open


def _warehouse(path: Path) -> Warehouse:
    return Warehouse("duckdb", path, "v1.0.0", None)


def _preflight_until(done: threading.Event, path: Path, seen: list[str]) -> None:
    while not done.is_set():
        problem = warehouse_problem(path)
        if problem:
            seen.append(problem)


def test_a_preflight_beside_the_creation_never_sees_a_file_without_its_header(tmp_path: Path) -> None:
    """Before, 16 of 30 creations showed another thread's preflight a file DuckDB had not written yet (no
    signature, or truncated), and the demo's second workspace failed once and was retried."""
    seen: list[str] = []
    for attempt in range(30):
        warehouse = _warehouse(tmp_path / str(attempt) / "outreach.duckdb")
        done = threading.Event()
        checker = threading.Thread(target=_preflight_until, args=(done, warehouse.duckdb_path, seen))
        checker.start()
        try:
            prepare_warehouse(warehouse)
        finally:
            done.set()
            checker.join()
        assert storage_number(warehouse.duckdb_path) == V1_0
    assert seen == []
    assert sorted(p.name for p in tmp_path.glob("*/*")) == ["outreach.duckdb"] * 30  # nothing else left


def test_syncs_creating_one_warehouse_together_all_go_on_with_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    start, errors = threading.Barrier(4), []

    def create() -> None:
        start.wait()
        try:
            prepare_warehouse(_warehouse(path))
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert storage_number(path) == V1_0 and [p.name for p in tmp_path.iterdir()] == ["outreach.duckdb"]


@pytest.mark.parametrize("code", [errno.EPERM, errno.ENOTSUP, errno.ENOSYS])
def test_without_hard_links_the_file_is_created_in_place(
    code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FAT refuses link(2) with EPERM, some network shares and FUSE file systems with ENOTSUP or ENOSYS: the
    warehouse is then created where it goes."""

    def no_links(src: object, dst: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "link", no_links)
    path = tmp_path / "outreach.duckdb"
    prepare_warehouse(_warehouse(path))
    assert storage_number(path) == V1_0 and [p.name for p in tmp_path.iterdir()] == ["outreach.duckdb"]


#: a sync that stops for good between creating its temporary file and linking it in, as a SIGKILL would find it
_STOPS_BEFORE_THE_LINK = """
import os, sys, time
from pathlib import Path
from pipelines.warehouse.duckdb_file import create_duckdb_file
os.link = lambda src, dst: time.sleep(600)
create_duckdb_file(Path(sys.argv[1]), "v1.0.0")
"""


def _stopped_creation(path: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A real process stopped part-way through creating `path`, and its temporary file, aged past the limit."""
    child = subprocess.Popen([sys.executable, "-c", _STOPS_BEFORE_THE_LINK, str(path)])
    deadline = time.monotonic() + 60
    while not (made := list(path.parent.glob(f".{path.name}.{child.pid}.*.new"))):
        assert child.poll() is None and time.monotonic() < deadline, "the child never created its temporary file"
        time.sleep(0.05)
    old = time.time() - duckdb_file.ABANDONED_AFTER_S - 1
    os.utime(made[0], (old, old))
    return child, made[0]


def test_a_creation_killed_part_way_leaves_nothing_once_the_next_sync_creates_the_warehouse(tmp_path: Path) -> None:
    """Before, a sync killed between creating its temporary file and linking it in left a 12 KB `.new` file
    beside the warehouse for good."""
    path = tmp_path / "outreach.duckdb"
    child, made = _stopped_creation(path)
    child.kill()
    child.wait()
    assert made.exists()
    prepare_warehouse(_warehouse(path))
    assert storage_number(path) == V1_0 and [p.name for p in tmp_path.iterdir()] == ["outreach.duckdb"]


def test_the_temporary_file_of_a_creation_still_running_or_just_killed_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    child, made = _stopped_creation(path)
    try:
        prepare_warehouse(_warehouse(path))
        assert made.exists()  # its process still runs: it is that process's to link or remove
    finally:
        child.kill()
        child.wait()
    os.utime(made)  # gone, but just now: it may belong to a process of another PID namespace
    path.unlink()
    prepare_warehouse(_warehouse(path))
    assert made.exists()
