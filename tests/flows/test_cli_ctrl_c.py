"""Ctrl-C in a command that does not say more itself (sync, models and demo do): one line naming the command and
exit 130, never typer's silent exit; a server served until stopped (the sandbox) stops on it without an error."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.process_output import ProcessOutput

pytestmark = pytest.mark.timeout(120)

OUTREACH = Path(sys.executable).with_name("outreach")


def _ctrl_c_as_in_a_terminal() -> None:
    """In the child: SIGINT's default disposition (a test run in the background inherits it ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], cwd: Path) -> tuple[subprocess.Popen[str], ProcessOutput]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DESTINATION__"))}
    proc = subprocess.Popen(
        [str(OUTREACH), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env={**env, "PYTHONUNBUFFERED": "1"},
        preexec_fn=_ctrl_c_as_in_a_terminal,
    )
    return proc, ProcessOutput(proc)


def _interrupt(proc: subprocess.Popen[str], output: ProcessOutput) -> int:
    proc.send_signal(signal.SIGINT)
    status = proc.wait(timeout=30)
    output.join()
    return status


def test_ctrl_c_while_check_waits_for_the_api_says_so_in_one_line(tmp_path: Path) -> None:
    # an API that takes the connection and never answers: `check` waits in its first request
    with socket.socket() as api:
        api.bind(("127.0.0.1", 0))
        api.listen(8)
        api.settimeout(60)
        base_url = f"http://127.0.0.1:{api.getsockname()[1]}/api/v1"
        args = ["check", "--base-url", base_url, "--api-key", "sk-silent", "--duckdb", str(tmp_path / "w.duckdb")]
        proc, output = _start(args, tmp_path)
        try:
            connection, _ = api.accept()  # the request is in flight
        except TimeoutError:
            proc.kill()
            raise AssertionError("check never called the API:\n" + "\n".join(output.lines)) from None
        with connection:
            status = _interrupt(proc, output)
    assert status == 130, output.lines
    assert output.lines[-1] == "error: outreach check interrupted by SIGINT before it finished; run it again"
    assert not any("Traceback" in line for line in output.lines), output.lines


def test_ctrl_c_stops_a_served_sandbox_without_an_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc, output = _start(["sandbox", "--scale", "tiny", "--port", str(port)], tmp_path)
    try:
        output.wait_for("listening on", timeout=60)
    finally:
        status = _interrupt(proc, output)
    assert status == 130, output.lines
    assert not any(line.startswith("error:") or "Traceback" in line for line in output.lines), output.lines
