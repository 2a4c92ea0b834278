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
