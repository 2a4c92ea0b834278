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
_watched = [0]  # the signals the watcher has seen: a second one exits at once
_again = ["the next sync resumes"]  # what a second signal says the next run does
_taken: set[int] = set()  # the signals whose handlers `stop_on_signals` took


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
    if number not in _taken:
        return  # another signal with a Python handler (another's, or one we left to it): not ours
    _watched[0] += 1
    if _watched[0] > 1:  # a second signal: the user insists; stop now
        sys.stderr.write(f"error: {signal.Signals(number).name} again: stopped at once; {_again[0]}\n")
        sys.stderr.flush()
        os._exit(EXIT_CODES[signal.Signals(number)])
    _note(number)


def _note(number: int) -> None:
    if not _interrupt.is_set():
        _signal_number[0] = number
        _interrupt.set()


def _watch(reader: socket.socket) -> None:
    """Set the flag for every signal number written to the wakeup socket, until its other end is closed."""
    while data := reader.recv(64):
        for number in data:
            _signalled(number)


def _leave_to_the_watcher(number: int, frame: FrameType | None) -> None:
    """The Python-level handler: the signal's number reached the watcher already (`stop_on_signals`)."""


def _raise_in_main(number: int, frame: FrameType | None) -> None:
    """The Python-level handler of `stop_on_signals(raise_in_main=True)`: the flag (in case another wakeup fd took
    the watcher's place), then a KeyboardInterrupt in the main thread, as Python's own SIGINT handler raises."""
    _note(number)
    raise KeyboardInterrupt


def _quiet_interrupts(hook: Any) -> Any:
    """`sys.unraisablehook` that drops a KeyboardInterrupt raised where Python can only print it (a weakref
    callback, a `__del__`): the flag has it already, and a user should see no traceback."""

    def unraisable(info: Any) -> None:
        if not isinstance(info.exc_value, KeyboardInterrupt):
            hook(info)

    return unraisable


@contextlib.contextmanager
def stop_on_signals(*, raise_in_main: bool = False, again: str = "the next sync resumes") -> Iterator[None]:
    """While a command runs in the main thread, SIGINT and SIGTERM ask it to stop instead of killing it.

    CPython runs a Python handler in the main thread only, once that thread runs Python code again, while the
    kernel may hand a process its signal in any thread; the main thread, waiting for a batch, then slept on
    until the batch had ended (4 minutes at 8 s a request). So the flag is not set by the handler: the
    interpreter's C handler writes the signal's number to a wakeup socket (`signal.set_wakeup_fd`) in whichever
    thread took it, and a watcher thread sets the flag at once. A second signal exits at once, saying so and
    `again` (what the next run does about what this one left).

    `raise_in_main`: the main thread also gets a KeyboardInterrupt, as from Python's own handler, for work that
    does not look at the flag (dbt, a wait for a server); the flag is still set, so the sync's workers in other
    threads stop at their next request, and a caller knows of the signal even when the KeyboardInterrupt was
    lost on its way up (DuckDB turns one into RuntimeError('Query interrupted'); one raised in a weakref callback
    is only printed, and is not printed here).

    Only a signal whose handler is Python's default is taken: one that is ignored (`nohup`) or handled by
    another (Prefect's SIGTERM in a flow run's process) keeps its handler. Elsewhere (a worker thread) and inside
    another `stop_on_signals`, nothing changes.
    """
    ours = (_leave_to_the_watcher, _raise_in_main)
    defaults = (signal.default_int_handler, signal.SIG_DFL)
    taken = {number for number in EXIT_CODES if signal.getsignal(number) in defaults}
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) in ours:
        taken = set()
    if not taken:
        yield
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)  # the C handler must never block on it
    watcher = threading.Thread(target=_watch, args=(reader,), daemon=True, name="outreach-signals")
    watcher.start()
    _again[0] = again
    _taken.update(taken)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    handler = _raise_in_main if raise_in_main else _leave_to_the_watcher
    previous = {number: signal.signal(number, handler) for number in taken}
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _quiet_interrupts(previous_hook)
    try:
        yield
    finally:
        sys.unraisablehook = previous_hook
        for number, old in previous.items():
            signal.signal(number, old)
        signal.set_wakeup_fd(previous_fd)
        writer.close()  # the watcher reads the end of the stream and returns
        watcher.join()
        reader.close()
        _interrupt.clear()
        _signal_number[0] = _watched[0] = 0
        _taken.clear()


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """In the main thread, run the Python handlers of SIGINT and SIGTERM (a KeyboardInterrupt) only once the block
    ends: for a step that must not be cut in two, such as starting a process and taking hold of it (one started and
    not yet held would be left running). `stop_on_signals` still notes the signal at once (its watcher reads the
    wakeup socket, which the interpreter writes whatever the Python handler). Elsewhere, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[tuple[int, FrameType | None]] = []
    numbers = [number for number in EXIT_CODES if signal.getsignal(number) is not None]  # None: not Python's to set
    previous = {number: signal.signal(number, lambda n, f: held.append((n, f))) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        for signum, frame in held:
            handler = previous[signal.Signals(signum)]
            if callable(handler):
                handler(signum, frame)
            elif handler == signal.SIG_DFL:
                signal.raise_signal(signum)
