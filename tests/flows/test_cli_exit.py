"""A command ends when its work does: `outreach models` exits right after its last line, though a dbt build
leaves hundreds of thousands of objects for the interpreter's last garbage collections (flows/cli.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtools.synthetic import make_raw_warehouse

pytestmark = pytest.mark.timeout(300)

OUTREACH = Path(sys.executable).with_name("outreach")


def _lines_then_exit(command: list[str], cwd: Path) -> tuple[int, list[str], float]:
    """The exit status, the lines (stdout and stderr, unbuffered), and the seconds from the last line to the exit."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env
    ) as run:
        assert run.stdout is not None
        lines, last = [], time.monotonic()
        for line in run.stdout:  # the pipe closes when the process ends
            lines.append(line)
            last = time.monotonic()
        lag = time.monotonic() - last
        return run.wait(timeout=60), lines, lag


def test_models_exits_within_half_a_second_of_its_last_line(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000)
    status, lines, lag = _lines_then_exit([str(OUTREACH), "models", "--duckdb", str(path)], tmp_path)
    assert status == 0, "".join(lines[-20:])
    assert any(line.startswith("BI file: ") for line in lines), lines  # the whole build ran, the file published
    # without the freeze at exit, 1.1 s on an idle 2-core machine
    assert lag < 0.5, f"{lag:.2f} s from the last line to the exit"


#: a command that fails on a broken pipe, under the commands' own group (flows.errors.OneLineErrors)
_BROKEN_PIPE = """
import typer
from flows.errors import OneLineErrors
app = typer.Typer(cls=OneLineErrors)
@app.command()
def write() -> None:
    raise BrokenPipeError(32, "Broken pipe")
@app.command()
def other() -> None:
    pass
app()
"""


def test_a_reader_that_stops_early_ends_the_command_quietly_and_another_broken_pipe_is_explained() -> None:
    """`outreach sync --help | head -30` printed `error: BrokenPipeError: [Errno 32] Broken pipe`: the reader of
    the output leaving is how such a pipeline ends, as click treats it outside a command (exit 1, nothing said).
    A broken pipe of another stream (a socket) is still a failure, in one line. (Whether a real command's write
    fails after `head` left is a race: the command here fails on its own, with its output's reader gone or not.)"""
    for reader_gone in (True, False):
        read_end, write_end = os.pipe()
        if reader_gone:
            os.close(read_end)
        run = subprocess.run(
            [sys.executable, "-c", _BROKEN_PIPE, "write"], stdout=write_end, stderr=subprocess.PIPE, text=True,
            timeout=60, check=False,
        )  # fmt: skip
        os.close(write_end)
        if not reader_gone:
            os.close(read_end)
        said = "" if reader_gone else "error: BrokenPipeError: [Errno 32] Broken pipe\n"
        assert (run.returncode, run.stderr) == (1, said), (reader_gone, run.stderr)
