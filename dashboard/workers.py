"""Worker processes for drawing a large page, which a terminal's Ctrl-C leaves to their caller.

A Ctrl-C goes to every process of the terminal's process group: each worker would print a traceback of its own
while the caller stops and says why in one line. So the workers ignore SIGINT, and the caller stops them.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import signal
import threading


def start_workers(count: int) -> multiprocessing.pool.Pool:
    """``count`` spawned worker processes (a fork would copy this process's threads mid-lock) that ignore SIGINT;
    leaving the pool's ``with`` block terminates them.

    From the main thread they start ignoring it (an ignored signal stays ignored in a new program, from its
    first instruction on); elsewhere, where no handler can be changed, from their initializer on."""
    context = multiprocessing.get_context("spawn")
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGINT) is None:
        return context.Pool(count, initializer=ignore_interrupts)
    # blocked while ignored: a Ctrl-C meanwhile is kept pending, and reaches this process's handler once restored
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return context.Pool(count)
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)


def ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
