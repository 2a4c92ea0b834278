"""When a sync must stop: its overall deadline (`sync_timeout_s`) and SIGINT / SIGTERM.

Every wait of a sync (a request, the body of a response, a rate-limit pause, a `Retry-After`) asks the
run's `Deadline` first, so a stalled server or a long pause cannot hold a sync past its deadline, and a
signal stops it within a second or two. A signal only sets a flag: the workers raise `SyncInterrupted` at
their next request, their workspaces extract nothing more, and a load already running is let finish (a
load is the unit that commits), so the warehouse holds every committed batch and no half-loaded one.
The run is recorded as ``interrupted``; the next run resumes from the state that was committed.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

from pipelines.core.errors import OutreachError

EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}  # 128 + the signal's number, as shells report it
POLL_S = 0.25  # how often a wait looks at the interrupt flag

_interrupt = threading.Event()
_signal_number = [0]


class SyncInterrupted(OutreachError):
    """The sync was stopped by SIGINT or SIGTERM; `exit_code` is 130 or 143."""

    def __init__(self, message: str, exit_code: int = 130) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.report: Any = None  # the run's report (what loaded before the stop), when the run got that far


class SyncTimedOut(OutreachError):
    """The sync ran past `sync_timeout_s`."""


class Deadline:
    """The overall deadline of one run (None or 0 seconds: none), plus the process's interrupt flag."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds if seconds and seconds > 0 else None
        self._expires = time.monotonic() + self.seconds if self.seconds else None

    def remaining(self) -> float:
        """Seconds left (infinite without a deadline)."""
        return float("inf") if self._expires is None else self._expires - time.monotonic()

    def check(self) -> None:
        """Raise `SyncInterrupted` after a signal, `SyncTimedOut` past the deadline."""
        number = interrupted()
        if number:
            raise interruption(number)
        if self.remaining() <= 0:
            raise SyncTimedOut(
                f"the sync ran past its deadline of {self.seconds:.0f} s (sync_timeout_s): the batches loaded so "
                "far are kept and the next run resumes; raise [sources.outreach] sync_timeout_s if syncs of this "
                "size need longer"
            )

    def sleep(self, seconds: float) -> None:
        """Sleep `seconds`, waking at once on a signal; raise as `check` does, before or after."""
        self.check()
        end = time.monotonic() + max(0.0, seconds)
        while True:
            left = min(end - time.monotonic(), self.remaining())
            if left <= 0 or _interrupt.wait(min(POLL_S, left)):
                break
        self.check()


def interrupted() -> int:
    """The number of the signal that asked this process to stop, or 0."""
    return _signal_number[0] if _interrupt.is_set() else 0


def interruption(number: int) -> SyncInterrupted:
    name = signal.Signals(number).name
    return SyncInterrupted(
        f"sync interrupted by {name}: stopped at a load boundary; every batch loaded before it is kept, and the "
        "next sync resumes from there",
        EXIT_CODES.get(signal.Signals(number), 128 + number),
    )


def _signalled(number: int) -> None:
    if number not in EXIT_CODES:
        return  # another signal with a Python handler: not ours
    if _interrupt.is_set():  # a second signal: the user insists; stop now (a pending load resumes next run)
        sys.stderr.write(f"error: {signal.Signals(number).name} again: stopped at once; the next sync resumes\n")
        sys.stderr.flush()
        os._exit(EXIT_CODES[signal.Signals(number)])
    _signal_number[0] = number
    _interrupt.set()


def _watch(reader: socket.socket) -> None:
    """Set the flag for every signal number written to the wakeup socket, until its other end is closed."""
    while data := reader.recv(64):
        for number in data:
            _signalled(number)


def _leave_to_the_watcher(number: int, frame: FrameType | None) -> None:
    """The Python-level handler: the signal's number reached the watcher already (`stop_on_signals`)."""


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """While a sync runs in the main thread, SIGINT and SIGTERM ask it to stop instead of killing it.

    CPython runs a Python handler in the main thread only, once that thread runs Python code again, while the
    kernel may hand a process its signal in any thread; the main thread, waiting for a batch, then slept on
    until the batch had ended (4 minutes at 8 s a request). So the flag is not set by the handler: the
    interpreter's C handler writes the signal's number to a wakeup socket (`signal.set_wakeup_fd`) in whichever
    thread took it, and a watcher thread sets the flag at once.

    Elsewhere (a worker thread, a flow run) the handlers cannot be set, and the signals keep their effect.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)  # the C handler must never block on it
    watcher = threading.Thread(target=_watch, args=(reader,), daemon=True, name="outreach-signals")
    watcher.start()
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous = {number: signal.signal(number, _leave_to_the_watcher) for number in EXIT_CODES}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
        writer.close()  # the watcher reads the end of the stream and returns
        watcher.join()
        reader.close()
        _interrupt.clear()
        _signal_number[0] = 0
