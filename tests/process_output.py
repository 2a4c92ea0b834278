"""A process's merged output, collected in a thread as it comes, for tests that act on what it prints."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable


class ProcessOutput:
    """Collect a process's merged output in a thread; wait for a line."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._proc = proc
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return
            if self._proc.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"{text!r} not printed within {timeout:.0f} s:\n" + "\n".join(self.lines[-60:]))

    def wait_until(self, ready: Callable[[], bool], what: str, timeout: float) -> None:
        """Wait until `ready()`, while the process runs; `what` names it in the failure."""
        deadline = time.monotonic() + timeout
        while not ready():
            assert self._proc.poll() is None, f"the process ended before {what}:\n" + "\n".join(self.lines[-30:])
            assert time.monotonic() < deadline, f"no {what} within {timeout:.0f} s"
            time.sleep(0.05)

    def join(self) -> None:
        self._thread.join(timeout=30)


def run_on_a_terminal(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run a command with its stderr on a pseudo-terminal, as in a user's shell (what it draws there only when
    stderr is a terminal, such as a live progress display), its stdout piped. `stderr` holds what the terminal
    received, control sequences included."""
    import os
    import pty

    master, slave = pty.openpty()
    received: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                return
            if not chunk:
                return
            received.append(chunk)

    reader = threading.Thread(target=read, daemon=True)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=slave, text=True)
    finally:
        os.close(slave)  # the child holds its own copy
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
        proc.wait()
        reader.join(timeout=10)
        os.close(master)
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, b"".join(received).decode(errors="replace"))
