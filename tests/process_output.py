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
