"""SIGINT / SIGTERM during a sync (`stop_on_signals`): the flag is set at once whichever thread the kernel hands
the signal to, even while the main thread waits with no time-out; a second signal stops the process at once."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from pipelines.core.deadline import interrupted, stop_on_signals


def test_a_signal_taken_by_a_worker_thread_sets_the_flag_while_the_main_thread_waits() -> None:
    seen: list[tuple[int, float]] = []

    def worker() -> None:
        # the signal goes to this thread only, while the main thread sleeps in `result()`: CPython runs a Python
        # handler there only once the result has come
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)
        sent = time.monotonic()
        while not interrupted() and time.monotonic() - sent < 5:
            time.sleep(0.01)
        seen.append((interrupted(), time.monotonic() - sent))

    handler = signal.getsignal(signal.SIGTERM)
    with stop_on_signals(), ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(worker).result()
        after = interrupted()
    assert seen[0][0] == signal.SIGTERM, seen
    assert seen[0][1] < 1.0, f"the flag was set {seen[0][1]:.2f} s after the signal"
    assert after == signal.SIGTERM
    assert interrupted() == 0  # cleared when the sync ends
    assert signal.getsignal(signal.SIGTERM) is handler  # the handler before the sync is back
    assert signal.set_wakeup_fd(-1) == -1  # and no wakeup socket is left set


def test_a_second_signal_stops_the_process_at_once_with_the_signals_exit_status() -> None:
    code = (
        "import os, signal, time\n"
        "from pipelines.core.deadline import stop_on_signals\n"
        "with stop_on_signals():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(0.5)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(10)\n"
        "print('not stopped')\n"
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 143, (done.returncode, done.stderr)
    assert done.stderr.strip() == "error: SIGTERM again: stopped at once; the next sync resumes", done.stderr
    assert "not stopped" not in done.stdout
    assert time.monotonic() - started < 9
