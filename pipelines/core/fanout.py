"""Run I/O tasks on a few threads and stream what they emit, with back-pressure; map a function on a few threads.

Used to overlap requests (recipient pages of several campaigns, stats, reply
bodies) so the rate budget is used even when the service is slow. Pacing stays
correct because every thread goes through the client's shared limiter.

Every thread runs in a copy of its starter's context (contextvars): what that context carries holds in the
threads too, such as the Prefect flow run whose log handler sends the `pipelines` loggers' lines to its API
(without it, each line from a thread is dropped with a warning in the worker's output).
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

Emit = Callable[[Any], None]
Task = Callable[[Emit], None]

_DONE = object()
_In = TypeVar("_In")
_Out = TypeVar("_Out")


class Stopped(Exception):
    """Raised inside a worker (by `emit`) when the consumer went away: let it propagate."""


def fan_out(tasks: Sequence[Task], *, workers: int, max_pending: int = 32) -> Iterator[Any]:
    """Run `tasks` on up to `workers` threads; yield every emitted item as it arrives.

    The first task error is re-raised in the consumer (remaining tasks are
    abandoned). If the consumer stops early, workers stop at their next emit.
    """
    if not tasks:
        return
    out: queue.Queue[Any] = queue.Queue(maxsize=max_pending)
    todo: queue.Queue[Task] = queue.Queue()
    for task in tasks:
        todo.put(task)
    stop = threading.Event()
    errors: list[BaseException] = []

    def emit(item: Any) -> None:
        while not stop.is_set():
            try:
                out.put(item, timeout=0.2)
                return
            except queue.Full:
                continue
        raise Stopped

    def worker() -> None:
        try:
            while not stop.is_set():
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
                task(emit)
        except Stopped:
            pass
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            errors.append(exc)
            stop.set()
        finally:
            while True:
                try:
                    out.put(_DONE, timeout=0.2)
                    break
                except queue.Full:
                    if stop.is_set():
                        try:
                            out.get_nowait()
                        except queue.Empty:
                            pass

    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(worker,), daemon=True, name=f"outreach-io-{i}")
        for i in range(min(workers, len(tasks)))
    ]
    for thread in threads:
        thread.start()
    finished = 0
    try:
        while finished < len(threads):
            item = out.get()
            if item is _DONE:
                finished += 1
                continue
            if errors:
                break
            yield item
        if errors:
            raise errors[0]
    finally:
        stop.set()
        while any(t.is_alive() for t in threads):
            try:
                out.get(timeout=0.05)
            except queue.Empty:
                pass
        for thread in threads:
            thread.join(timeout=1)


def map_in_threads(fn: Callable[[_In], _Out], items: Iterable[_In], *, workers: int, name: str) -> list[_Out]:
    """`fn` of every item on up to `workers` threads; the results in the items' order. The first error, in
    that order, is raised once every call has ended."""
    todo = list(items)
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(todo))), thread_name_prefix=name) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, item) for item in todo]
        return [future.result() for future in futures]
