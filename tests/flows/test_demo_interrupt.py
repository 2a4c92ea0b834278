"""Ctrl-C during `outreach demo`, as a terminal sends it (SIGINT to the whole foreground process group): the demo
stops within seconds whatever step it is in, says in one line where, exits 130, and leaves no process it started;
and the servers it starts end with it however it ends (SIGKILL included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from demo_support import prefect_servers, temp_homes, user_env
from process_output import ProcessOutput

pytestmark = pytest.mark.timeout(300)

OUTREACH = str(Path(sys.executable).with_name("outreach"))
STOPPED = (
    "every process it started (sandbox, Prefect server) is stopped; run `outreach demo` again to start over (it "
    "replaces its own files)"
)


class Demo:
    """`outreach demo` in a session of its own, its output (stdout and stderr, in order) read as it comes."""

    def __init__(self, cwd: Path, tmp: Path) -> None:
        self.proc = subprocess.Popen(
            [OUTREACH, "demo"],
            cwd=cwd,
            env={**user_env(), "TMPDIR": str(tmp)},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        self.output = ProcessOutput(self.proc)

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        self.output.wait_until(ready, what, timeout=180)

    def children(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def ctrl_c(self) -> float:
        """SIGINT to the demo's process group, as a terminal's Ctrl-C; the seconds until the demo exited."""
        os.killpg(self.proc.pid, signal.SIGINT)
        sent = time.monotonic()
        self.proc.wait(timeout=120)
        self.output.join()
        return time.monotonic() - sent

    @property
    def lines(self) -> list[str]:
        return self.output.lines

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def _command_line(process: psutil.Process) -> str | None:
    """The process's command line, or None once it has exited: a child can exit between its listing and this read
    (the demo's short-lived helpers do, and a read of the gone process raised NoSuchProcess in a CI run)."""
    try:
        return None if process.status() == psutil.STATUS_ZOMBIE else " ".join(process.cmdline())
    except psutil.NoSuchProcess:
        return None


def _alive(processes: list[psutil.Process]) -> list[str]:
    return [line[:120] for line in map(_command_line, processes) if line is not None]


def test_ctrl_c_during_the_sync_stops_the_demo_in_seconds_with_one_line_and_no_process_left(tmp_path: Path) -> None:
    """The sync's workers stop at their next request (no retry of an interrupted sync), the sandbox serves until
    the demo stops it (it used to take the Ctrl-C too, print its traceback, and leave the flow's retries refused for
    a minute and a half)."""
    demo = Demo(tmp_path, tmp_path)
    demo.wait_until(lambda: any("Beginning subflow run 'sync-full" in line for line in demo.lines), "sync")
    started = demo.children()
    assert len(started) >= 2, _alive(started)  # the sandbox and the Prefect server
    seconds = demo.ctrl_c()

    assert demo.proc.returncode == 130, demo.text[-3000:]
    assert demo.lines[-1] == (
        "error: demo interrupted by SIGINT during [2/5] full sync of every workspace (Prefect flow sync-all): "
        + STOPPED
    ), demo.text[-3000:]
    assert seconds < 20, f"the demo took {seconds:.1f} s to stop"
    assert "Traceback" not in demo.text and "Retry" not in demo.text, demo.text[-3000:]
    assert _alive(started) == []
    assert not prefect_servers(tmp_path) and not temp_homes(tmp_path)


def test_ctrl_c_while_the_prefect_server_starts_leaves_no_server(tmp_path: Path) -> None:
    """The server was started, not yet answering: it used to be left running, with no one to stop it. The demo
    stops at once: it used to wait seconds for what it started beside the server (the sandbox's start, its data
    being built, and the imports ahead of the later steps), every time.

    A second try is allowed for the time alone: in a full run of the suite on 2 cores it once took 6.7 s, never
    in 27 runs under CPU load alone (likely the demo's wait for its killed processes while the other tests'
    builds keep the disks busy). A demo that waits for its sandbox or its imports again is slow in both tries."""
    times = []
    for attempt in range(2):
        cwd = tmp_path / f"try{attempt}"
        cwd.mkdir()
        times.append(_interrupt_while_the_server_starts(cwd))
        if times[-1] < 1.5:
            break
    assert min(times) < 1.5, f"the demo took {', '.join(f'{s:.1f}' for s in times)} s to stop"


def _interrupt_while_the_server_starts(tmp_path: Path) -> float:
    """Ctrl-C once the demo's Prefect server process exists; its seconds to stop, once all else is checked."""
    demo = Demo(tmp_path, tmp_path)

    def server_started() -> bool:
        return any("flows.prefect_server" in (_command_line(p) or "") for p in demo.children())

    demo.wait_until(server_started, "Prefect server process")
    started = demo.children()
    seconds = demo.ctrl_c()

    assert demo.proc.returncode == 130, demo.text[-3000:]
    assert demo.lines[-1] == (
        "error: demo interrupted by SIGINT during [1/5] sandbox and Prefect API, started side by side: " + STOPPED
    ), demo.text[-3000:]
    assert "Traceback" not in demo.text, demo.text[-3000:]
    assert _alive(started) == []
    assert not prefect_servers(tmp_path) and not temp_homes(tmp_path)
    return seconds


def test_the_servers_end_with_the_process_that_started_them_even_after_sigkill(tmp_path: Path) -> None:
    """An owner that cannot stop them (SIGKILL, a second Ctrl-C that exits at once, a crash): the sandbox and the
    temporary Prefect server see their parent gone and stop."""
    owner = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from flows.prefect_api import start_local_server
        from sandbox.server import SandboxProcess

        sandbox = SandboxProcess(scale="tiny", rate_limit=0).start()
        server = start_local_server(Path({str(tmp_path / "home")!r}), ui=False)
        print(sandbox.pid, server.process.pid, flush=True)
        time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    servers = [psutil.Process(int(pid)) for pid in proc.stdout.readline().split()]
    assert len(servers) == 2 and _alive(servers) != []
    proc.kill()
    proc.wait(timeout=10)
    deadline = time.monotonic() + 30
    while _alive(servers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _alive(servers) == []
