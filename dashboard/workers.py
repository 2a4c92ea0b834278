"""Worker processes that draw a large page's scopes: results in order, a dead worker reported, a Ctrl-C left to
their caller.

Plain ``multiprocessing`` processes and pipes rather than a pool: ``multiprocessing.Pool`` waits forever for the
result of a worker that died (killed for memory, say), and ``concurrent.futures`` cannot stop a running worker
before Python 3.14. Here the caller waits on each worker's pipe and on its process at once, and terminates every
worker when it stops early (an error, a Ctrl-C).

A terminal's Ctrl-C goes to every process of its process group: each worker would print a traceback of its own
while the caller says why it stopped in one line. So the workers ignore SIGINT.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Generic, TypeVar

from dashboard.errors import ReportError

T = TypeVar("T")
R = TypeVar("R")


class Workers(Generic[T, R]):
    """``work(item)`` for each item, in order (``results``), in ``count`` processes started at once: spawned (a
    fork would copy this process's threads mid-lock), item i in worker i % count. An exception of ``work`` is
    raised here as itself; a worker that dies raises ReportError. Leaving the ``with`` block terminates them."""

    def __init__(self, work: Callable[[T], R], items: Sequence[T], count: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._count, self._items = count, len(items)
        self._workers: list[tuple[BaseProcess, Connection]] = []
        try:
            with _sigint_ignored_by_new_processes():
                for k in range(count):
                    reader, writer = context.Pipe(duplex=False)
                    self._workers.append((context.Process(target=_serve, args=(work, items[k::count], writer)), reader))
                    self._workers[-1][0].start()
                    writer.close()
        except BaseException:
            self.close()
            raise

    def results(self) -> Iterator[R]:
        for i in range(self._items):
            yield _receive(*self._workers[i % self._count])

    def close(self) -> None:
        for process, _ in self._workers:
            if process.pid is not None:
                process.terminate()
        for process, reader in self._workers:
            if process.pid is not None:
                process.join()
            reader.close()

    def __enter__(self) -> Workers[T, R]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(work: Callable[[Any], Any], items: Sequence[Any], pipe: Connection) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # also where it could not be ignored from the start
    for item in items:
        try:
            pipe.send((True, work(item)))
        except Exception as exc:  # noqa: BLE001 - the caller raises it
            pipe.send((False, exc))
            return


def _receive(process: BaseProcess, pipe: Connection) -> Any:
    multiprocessing.connection.wait([pipe, process.sentinel])
    message: tuple[bool, Any] | None = None
    if pipe.poll():  # a result, or the end of the pipe
        with suppress(EOFError):
            message = pipe.recv()
    if message is None:
        process.join()
        raise ReportError(
            f"a worker process drawing the report exited with code {process.exitcode} before it finished; run it "
            "again (a negative code is the signal that stopped it: -9 is often the out-of-memory killer)"
        )
    ok, value = message
    if not ok:
        raise value if isinstance(value, BaseException) else ReportError(str(value))
    return value


@contextmanager
def _sigint_ignored_by_new_processes() -> Iterator[None]:
    """From the main thread, processes started in the block ignore SIGINT from their first instruction on (an
    ignored signal stays ignored in a new program); a Ctrl-C meanwhile is held (blocked while ignored, it stays
    pending) and reaches this process's handler at the end. Elsewhere no handler can be changed: nothing here."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        yield
        return
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
