"""One line, never a traceback: a read-only warehouse for `models` and `docs`; `status` off a terminal keeps its
whole table; a base URL ending in /api gets the right hint."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_sync_support import admin_keys, sandbox_sync_args
from typer.testing import CliRunner

from flows.cli import app
from pipelines.api.url_and_key import check_base_url
from pipelines.core.errors import BaseUrlError
from pipelines.sync.edge import run_sync


def test_a_library_record_with_a_traceback_prints_in_one_line() -> None:
    """dlt's warning that it could not save its run's trace (a full disk mid-load) printed two tracebacks, some 70
    lines, before the command's own line."""
    import io
    import logging

    assert CliRunner().invoke(app, ["status", "--help"]).exit_code == 0  # a command run sets the logging up
    dlt_log, printed = logging.getLogger("dlt"), io.StringIO()
    handler = logging.StreamHandler(printed)
    dlt_log.addHandler(handler)
    try:
        try:
            try:
                raise OSError(28, "No space left on device", "/data/.w_dlt/x")
            except OSError as full:
                raise RuntimeError("load failed") from full
        except RuntimeError:
            dlt_log.warning("Failed to create trace dump via %s", "pickle", exc_info=True)
    finally:
        dlt_log.removeHandler(handler)
    assert printed.getvalue() == (
        "Failed to create trace dump via pickle ([Errno 28] No space left on device: '/data/.w_dlt/x')\n"
    )


@pytest.mark.parametrize("command", [["status"], ["models", "--no-progress"], ["report"], ["alerts"], ["check"]])
def test_a_warehouse_name_too_long_for_the_file_system_is_said_with_its_fix(command: list[str], tmp_path: Path) -> None:
    """It was `error: OSError: [Errno 36] File name too long: '...'`, by every command."""
    warehouse = tmp_path / f"{'w' * 300}.duckdb"
    result = CliRunner().invoke(app, [*command, "--duckdb", str(warehouse)])
    assert result.exit_code == 1, result.output
    assert result.output.startswith(f"error: a name in the path is too long ({tmp_path}/www")
    assert result.output.endswith(": file systems take 255 bytes a name; choose a shorter path\n")
    assert list(tmp_path.iterdir()) == []


def test_a_base_url_ending_in_api_gets_the_hint_api_v1() -> None:
    with pytest.raises(BaseUrlError) as caught:
        check_base_url("http://127.0.0.1:9/api")
    assert "use e.g. http://127.0.0.1:9/api/v1" in str(caught.value) and "/api/api" not in str(caught.value)
    with pytest.raises(BaseUrlError) as caught:
        check_base_url("http://127.0.0.1:9/")
    assert "use e.g. http://127.0.0.1:9/api/v1" in str(caught.value)
    # another version is replaced: the hint was http://127.0.0.1:9/api/v2/api/v1
    with pytest.raises(BaseUrlError) as caught:
        check_base_url("http://127.0.0.1:9/api/v2/")
    assert str(caught.value).endswith("use e.g. http://127.0.0.1:9/api/v1"), caught.value


@pytest.mark.parametrize(
    ("command", "bound"),
    [
        (["sandbox", "--port", "99999"], "less than or equal to 65535"),
        (["hooks", "listen", "--port", "99999"], "less than or equal to 65535"),
        (["status", "--runs", "0"], "greater than or equal to 1"),
        (["sandbox", "--seed", "-1"], "greater than or equal to 0"),
        # it was a runtime error naming no choice ("pg is neither (see README, Alerts)"), as models offers them
        (["alerts", "--destination", "pg"], "'pg' is not one of 'duckdb',"),
        (["alerts", "guard", "--destination", "pg"], "'pg' is not one of 'duckdb',"),
    ],
)
def test_a_value_out_of_range_is_a_usage_error(command: list[str], bound: str) -> None:
    """A port used to reach the socket (`error: OverflowError: bind(): port must be 0-65535.`), and `status --runs
    0` showed every workspace's last run as `-`, as if it had none; `sandbox --seed -1` failed in
    NumPy's words (`error: ValueError: expected non-negative integer`)."""
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2 and bound in result.output, result.output


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from sandbox.server import SandboxServer

    tmp = tmp_path_factory.mktemp("one_line")
    sb = SandboxServer(scale="tiny", rate_limit=0)
    sb.start()
    try:
        run_sync(**sandbox_sync_args(sb, admin_keys(sb), tmp / "w.duckdb", tmp, mode="full"))
    finally:
        sb.stop()
    yield tmp / "w.duckdb"


def test_status_off_a_terminal_does_not_cut_its_table(warehouse: Path) -> None:
    result = CliRunner().invoke(app, ["status", "--duckdb", str(warehouse)])
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    assert "Bluebird Studio" in result.output and "Northwind Growth" in result.output


def _read_only_copy(warehouse: Path, where: Path) -> Any:
    where.mkdir(parents=True, exist_ok=True)
    mounted = shutil.which("mount") is not None and (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(where)], capture_output=True).returncode
        == 0
    )
    if not mounted:
        pytest.skip("mounting a read-only file system needs root and CAP_SYS_ADMIN")
    shutil.copy(warehouse, where / warehouse.name)
    subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
    return where / warehouse.name


@pytest.mark.parametrize("command", ["models", "docs"])
def test_models_and_docs_on_a_read_only_warehouse_fail_in_one_line(
    warehouse: Path, tmp_path: Path, command: str
) -> None:
    where = tmp_path / "ro"
    copy = _read_only_copy(warehouse, where)
    try:
        result = CliRunner().invoke(app, [command, "--duckdb", str(copy)])
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
    assert result.exit_code == 1, result.output
    out = result.output.strip()
    assert len(out.splitlines()) == 1 and out.startswith("error: read-only file system"), out
    assert "Traceback" not in out


def test_docs_into_a_file_fails_in_one_line_before_dbt_runs(warehouse: Path, tmp_path: Path) -> None:
    """It was `error: FileExistsError: [Errno 17] File exists: '...'`, after dbt's run."""
    in_the_way = tmp_path / "docs"
    in_the_way.write_text("a file")
    result = CliRunner().invoke(app, ["docs", "--duckdb", str(warehouse), "--out", str(in_the_way)])
    assert result.exit_code == 1 and result.output == (
        f"error: cannot write the docs site into {in_the_way}: a file is in the way ({in_the_way}): move it, or "
        "choose another path (pass --out with a writable directory)\n"
    )
    assert not (warehouse.parent / ".w_dbt" / "docs_target").exists()  # dbt never ran


def test_docs_never_replace_a_page_that_is_not_a_docs_site(warehouse: Path, tmp_path: Path) -> None:
    """`docs --out .` in a web project replaced its own index.html with dbt's site."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html><title>my site</title></html>")
    result = CliRunner().invoke(app, ["docs", "--duckdb", str(warehouse), "--out", str(site)])
    assert result.exit_code == 1 and result.output == (
        f"error: {site / 'index.html'} exists and is not a dbt docs site, which this would replace: pass --out "
        "with another directory\n"
    )
    assert (site / "index.html").read_text() == "<html><title>my site</title></html>"
    assert not (warehouse.parent / ".w_dbt" / "docs_target").exists()  # dbt never ran
