"""What is not a file given where a warehouse is asked for: a named pipe as `--duckdb` made every command block for
ever (reading the file's header opened the pipe and waited for a writer), and `/dev/null` was "not a valid DuckDB
database file: move it away". Now every command refuses both in one line, before any API request."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from warehouse_refusal import assert_every_command_refuses

from pipelines.warehouse.duckdb_file import is_duckdb_file, special_file_problem

#: refused before the first request: nothing listens there
API = ["--base-url", "http://127.0.0.1:9/api/v1", "--api-key", "sk_not_used"]


def test_every_command_refuses_a_named_pipe_at_once(tmp_path: Path) -> None:
    pipe = tmp_path / "w.duckdb"
    os.mkfifo(pipe)
    said = f"warehouse {pipe} is a named pipe, not a file: point --duckdb at the warehouse's DuckDB file"
    assert_every_command_refuses(pipe, said, API)
    assert stat.S_ISFIFO(pipe.stat().st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["w.duckdb"]


def test_a_device_is_named_as_one_and_never_opened() -> None:
    assert special_file_problem(Path("/dev/null")) == (
        "warehouse /dev/null is a device, not a file: point --duckdb at the warehouse's DuckDB file"
    )
    assert not is_duckdb_file(Path("/dev/null"))
    assert special_file_problem(Path("/no/such/file")) is None and special_file_problem(Path("/tmp")) is None
