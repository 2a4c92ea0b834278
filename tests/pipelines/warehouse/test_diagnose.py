"""pipelines.warehouse.diagnose: the warehouse preflight and root-cause explanations, against real files, real
locks held by a second process, a read-only mount, a full tmpfs, and the real dlt errors they cause."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from typer.testing import CliRunner

from pipelines.core.errors import ApiUnavailableError, WarehouseError, WarehousePathError
from pipelines.warehouse.diagnose import (
    explain,
    preflight_warehouse,
    root_cause,
    warehouse_problem,
)
from pipelines.warehouse.duckdb_file import lock_holder, storage_number
from pipelines.warehouse.storage_convert import storage_note

PYTHON = sys.executable
ROOT = Path(__file__).resolve().parents[3]


@contextlib.contextmanager
def tmpfs(path: Path, size: str, *, read_only: bool = False) -> Iterator[bool]:
    """Mount a tmpfs at `path` (needs root and CAP_SYS_ADMIN); yields whether it is mounted."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    mounted = (
        shutil.which("mount") is not None
        and subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True).returncode
        == 0
    )
    try:
        yield mounted
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(path)], check=True)


def preflight_error(path: Path, *, lasting: bool = True) -> str:
    """The WarehouseError's message; the check must take well under 2 s and be one line. `lasting`: a problem
    only the owner can mend (a WarehousePathError, which a flow does not retry), else one that ends (a lock)."""
    started = time.monotonic()
    with pytest.raises(WarehouseError) as info:
        preflight_warehouse(path)
    assert time.monotonic() - started < 2.0
    assert isinstance(info.value, WarehousePathError) is lasting, type(info.value)
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    return message


def dlt_failure(path: Path, pipelines_dir: Path, rows: int = 1) -> BaseException:
    """The exception a real dlt run into the warehouse at `path` raises (the product's destination)."""
    from pipelines.warehouse.destination import make_pipeline, warehouse_target

    warehouse = warehouse_target(duckdb_path=path, destination="duckdb")
    pipeline = make_pipeline("outreach_diag", warehouse, str(pipelines_dir))
    with pytest.raises(Exception) as info:
        pipeline.run([{"id": i, "text": "x" * 200} for i in range(rows)], table_name="t")
    return info.value


def hold_lock(path: Path, *, read_only: bool = False) -> subprocess.Popen[str]:
    """A second process that opens the DuckDB file and keeps it open until killed."""
    code = (
        "import duckdb, sys, time\n"
        f"c = duckdb.connect({str(path)!r}, read_only={read_only})\n"
        "print('open', flush=True)\n"
        "time.sleep(120)\n"
    )
    proc = subprocess.Popen([PYTHON, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    return proc


def make_warehouse(path: Path, **config: Any) -> None:
    con = duckdb.connect(str(path), config=config)
    con.execute("create schema s; create table s.t as select range as id from range(1000)")
    con.close()


# -- not a DuckDB file ---------------------------------------------------------------------------------
def test_corrupt_file_is_named_as_such_before_and_after_a_failed_load(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    path.write_bytes(b"this is a spreadsheet, not a database\n" * 500)
    message = preflight_error(path)
    assert "is not a valid DuckDB database file" in message and str(path) in message

    failure = dlt_failure(path, tmp_path / "pipelines")
    assert isinstance(root_cause(failure), duckdb.IOException)
    assert explain(failure, path) == message
    assert "another process" not in explain(failure, path)


def test_empty_and_truncated_files_are_not_valid(tmp_path: Path) -> None:
    empty = tmp_path / "empty.duckdb"
    empty.write_bytes(b"")
    assert "is not a valid DuckDB database file" in preflight_error(empty)
    good = tmp_path / "good.duckdb"
    make_warehouse(good)
    truncated = tmp_path / "truncated.duckdb"
    truncated.write_bytes(good.read_bytes()[:5000])
    assert "truncated to 5000 bytes" in preflight_error(truncated)
    assert warehouse_problem(good) is None


# -- the path ------------------------------------------------------------------------------------------
def test_path_under_a_regular_file_is_one_line_before_any_request(tmp_path: Path, make_sandbox: Any) -> None:
    regular = tmp_path / "notes.txt"
    regular.write_text("x")
    message = preflight_error(regular / "deeper" / "w.duckdb")
    assert f"{regular} is a file, not a directory" in message

    sb = make_sandbox(scale="tiny", rate_limit=0)
    key = sb.keys()[0]["key"]
    sb.reset_metrics()
    from flows.cli import app

    started = time.monotonic()
    result = CliRunner().invoke(
        app,
        ["sync", "--base-url", sb.base_url, "--api-key", key, "--duckdb", str(regular / "w.duckdb"), "--no-progress"],
    )
    assert time.monotonic() - started < 2.0
    assert result.exit_code == 1
    assert result.output.strip().count("\n") == 0 and "is a file, not a directory" in result.output
    assert sb.metrics()["requests"] == 0
    assert key not in result.output


def test_a_directory_in_place_of_the_file(tmp_path: Path) -> None:
    (tmp_path / "w.duckdb").mkdir()
    assert "is a directory, not a DuckDB file" in preflight_error(tmp_path / "w.duckdb")


def test_missing_directories_are_fine_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "w.duckdb"
    preflight_warehouse(path)
    assert not (tmp_path / "a").exists()


# -- read-only -----------------------------------------------------------------------------------------
def _check_as_nobody(path: Path) -> subprocess.CompletedProcess[str]:
    """`python -m pipelines.warehouse.diagnose check PATH` as an unprivileged user (root ignores permissions)."""
    command = [PYTHON, "-m", "pipelines.warehouse.diagnose", "check", str(path)]
    if os.geteuid() == 0:
        closed = [p for p in (ROOT, *ROOT.parents) if not p.stat().st_mode & stat.S_IXOTH]
        assert not closed, (
            f"{closed[0]} is closed to other users, so user nobody cannot import this checkout: "
            "clone it where others can read it"
        )
        command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *command]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture
def public_dir() -> Iterator[Path]:
    """A directory another user can reach (pytest's tmp_path sits under a root-only directory)."""
    import tempfile

    # /tmp itself, not tempfile's cached default: a test that ran first may have pointed that at its own tmp_path
    path = Path(tempfile.mkdtemp(prefix="outreach-diag-", dir="/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_read_only_mount(tmp_path: Path, public_dir: Path) -> None:
    target = tmp_path / "ro"
    with tmpfs(target, "1m", read_only=True) as mounted:
        if mounted:
            message = preflight_error(target / "outreach.duckdb")
            assert "is on a read-only file system" in message
            failure = dlt_failure(target / "outreach.duckdb", tmp_path / "pipelines")
            assert explain(failure, target / "outreach.duckdb") == message
            return
    # no mount allowed here: a directory made read-only for an unprivileged user instead
    target = public_dir / "ro"
    target.mkdir(mode=0o555)
    result = _check_as_nobody(target / "outreach.duckdb")
    assert result.returncode == 1 and "read-only for this user (permission denied)" in result.stdout


def test_read_only_directory_for_this_user(public_dir: Path) -> None:
    target = public_dir / "locked-down"
    target.mkdir()
    target.chmod(0o555)
    result = _check_as_nobody(target / "outreach.duckdb")
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.strip() == (
        f"warehouse {target / 'outreach.duckdb'}: {target} is read-only for this user (permission denied): give "
        "this user write access, or point --duckdb at a writable directory"
    )


# -- locked ------------------------------------------------------------------------------------------
def test_lock_held_by_a_second_process_is_named_with_its_pid(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    make_warehouse(path)
    writer = hold_lock(path)
    try:
        holder = lock_holder(path)
        assert holder is not None and holder.pid == writer.pid and holder.kind == "write"
        message = preflight_error(path, lasting=False)
        assert f"is locked by process {writer.pid}" in message and "a writer" in message
        failure = dlt_failure(path, tmp_path / "pipelines")
        assert isinstance(root_cause(failure), duckdb.IOException)
        assert explain(failure, path) == message
    finally:
        writer.kill()
        writer.wait()
    reader = hold_lock(path, read_only=True)
    try:
        assert f"is locked by process {reader.pid}" in preflight_error(path, lasting=False)
        assert "a read-only reader" in preflight_error(path, lasting=False)
    finally:
        reader.kill()
        reader.wait()
    assert lock_holder(path) is None
    preflight_warehouse(path)


def test_this_process_holding_the_file_is_not_a_lock_problem(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    make_warehouse(path)
    con = duckdb.connect(str(path))
    try:
        assert lock_holder(path) is None
        preflight_warehouse(path)
    finally:
        con.close()


# -- full disk -----------------------------------------------------------------------------------------
def test_full_disk_before_and_during_a_load(tmp_path: Path) -> None:
    tiny = tmp_path / "tiny"
    with tmpfs(tiny, "1m") as mounted:
        if not mounted:
            _full_disk_by_file_size_limit(tmp_path)
            return
        message = preflight_error(tiny / "outreach.duckdb")
        assert message.startswith("no space left on device for warehouse") and "MB free" in message

    disk = tmp_path / "disk"
    with tmpfs(disk, "40m") as mounted:
        assert mounted
        path = disk / "outreach.duckdb"
        preflight_warehouse(path)  # 40 MB free: enough to start
        free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
        (disk / "filler").write_bytes(b"\0" * (free - 64 * 1024))  # then something else fills the disk
        failure = dlt_failure(path, tmp_path / "pipelines", rows=20_000)
        assert _is_duckdb(root_cause(failure))
        line = explain(failure, path)
        assert line.startswith("no space left on device for warehouse") and "\n" not in line


def _is_duckdb(error: BaseException) -> bool:
    return isinstance(error, duckdb.Error)


def _full_disk_by_file_size_limit(tmp_path: Path) -> None:
    """Without a mount: a write over RLIMIT_FSIZE fails like a full disk would, with an errno."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from pipelines.warehouse.diagnose import explain\n"
        "try:\n"
        f"    open({str(tmp_path / 'big')!r}, 'wb').write(b'x' * 100000)\n"
        "except OSError as exc:\n"
        "    print(explain(exc))\n"
    )
    out = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    assert out.startswith("file too large") and "ulimit -f" in out


def test_file_size_limit_is_explained_by_errno(tmp_path: Path) -> None:
    _full_disk_by_file_size_limit(tmp_path)


# -- storage format --------------------------------------------------------------------------------
def test_a_2_0_format_warehouse_gets_a_note_with_a_command_that_converts_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "outreach.duckdb"
    make_warehouse(path)  # duckdb 2.0's default format
    assert storage_number(path) == 999
    with caplog.at_level("WARNING", logger="pipelines.warehouse.diagnose"):
        preflight_warehouse(path, "v1.0.0")  # a note, not an error
    notes = [
        r.getMessage() for r in caplog.records if r.name == "pipelines.warehouse.diagnose"
    ]  # other threads log too
    assert len(notes) == 1 and "\n" not in notes[0] and "storage format" in notes[0]
    command = notes[0].split("convert it to v1.0.0 with: ", 1)[1]
    assert command == f"{PYTHON} -m pipelines.warehouse.diagnose convert {path} --storage-version v1.0.0"

    result = subprocess.run(command.split(), capture_output=True, text=True, cwd=tmp_path)  # as printed, anywhere
    assert result.returncode == 0, result.stderr
    assert storage_number(path) == 64
    assert storage_note(path, "v1.0.0") is None
    assert storage_number(path.with_name("outreach.duckdb.999.bak")) == 999
    con = duckdb.connect(str(path), read_only=True)
    assert con.execute("select count(*), sum(id) from s.t").fetchone() == (1000, 499500)
    con.close()


def test_an_old_format_file_gets_no_note(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    make_warehouse(path, storage_compatibility_version="v1.0.0")
    assert storage_number(path) == 64 and storage_note(path, "v1.0.0") is None
    assert storage_note(path, "v1.2.0") is None


# -- root cause and errno explanations (units) -------------------------------------------------------
def test_root_cause_walks_exception_attribute_cause_and_context() -> None:
    from dlt.pipeline.exceptions import PipelineStepFailed

    disk_full = OSError(errno.ENOSPC, "No space left on device", "/data/w.duckdb.wal")
    try:
        try:
            raise disk_full
        except OSError as inner:
            raise RuntimeError("job failed") from inner
    except RuntimeError as middle:
        wrapped = middle
    step = PipelineStepFailed.__new__(PipelineStepFailed)
    Exception.__init__(step, "Pipeline execution failed at `step=load` with exception:")
    step.exception = wrapped
    assert root_cause(step) is disk_full
    assert explain(step) == (
        "no space left on device (/data/w.duckdb.wal): free space on that disk (or point the path elsewhere) and rerun"
    )
    try:
        try:
            raise ValueError("a")
        except ValueError:
            raise KeyError("b") from None
    except KeyError as suppressed:
        assert root_cause(suppressed) is suppressed


@pytest.mark.parametrize(
    ("code", "start"),
    [
        (errno.EROFS, "read-only file system (/x)"),
        (errno.EACCES, "permission denied (/x)"),
        (errno.ENOTDIR, "a part of the path (/x) is a file"),
        (errno.EDQUOT, "no space left on device (/x)"),
        (errno.ENAMETOOLONG, "a name in the path is too long (/x)"),
    ],
)
def test_errno_explanations(code: int, start: str) -> None:
    assert explain(RuntimeError("w")) == "RuntimeError: w"
    error = OSError(code, os.strerror(code), "/x")
    try:
        raise RuntimeError("while loading") from error
    except RuntimeError as outer:
        assert explain(outer).startswith(start)


def test_a_copy_onto_a_full_disk_names_the_disk_it_wrote_to() -> None:
    """dlt copies each load job from the temporary directory into its working directory: the line named the
    copy's source, on another disk than the full one."""
    copy = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/tmp/jobs.sql", None, "/data/.w_dlt/new_jobs/1")
    assert explain(copy).startswith("no space left on device (/data/.w_dlt/new_jobs/1): free space on that disk")
    missing = OSError(errno.ENOENT, os.strerror(errno.ENOENT), "/tmp/jobs.sql", None, "/data/.w_dlt/new_jobs/1")
    assert explain(missing).startswith("no such file or directory (/tmp/jobs.sql)")  # the source is what is missing


def test_our_own_errors_pass_through_unchanged() -> None:
    error = ApiUnavailableError("GET /x failed 8 times: retry later")
    assert explain(error) == "GET /x failed 8 times: retry later"
    try:
        raise RuntimeError("wrapper") from error
    except RuntimeError as outer:
        assert explain(outer) == "GET /x failed 8 times: retry later"


def test_preflight_is_fast_on_a_real_warehouse(tmp_path: Path) -> None:
    path = tmp_path / "outreach.duckdb"
    make_warehouse(path, storage_compatibility_version="v1.0.0")
    started = time.monotonic()
    for _ in range(20):
        preflight_warehouse(path)
    assert (time.monotonic() - started) / 20 < 0.1
