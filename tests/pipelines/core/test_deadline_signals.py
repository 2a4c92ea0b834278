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


def _run(code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (Python's own signal handlers), after the imports every script here uses."""
    prelude = "import os, signal, time\nfrom pipelines.core.deadline import interrupted, stop_on_signals\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True, timeout=60)


def test_raise_in_main_also_raises_keyboard_interrupt_in_the_main_thread() -> None:
    """For work that does not look at the flag (dbt, a wait for a server): it stops as on Python's own Ctrl-C."""
    done = _run(
        "with stop_on_signals(raise_in_main=True):\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(10)\n"
        "        print('slept on')\n"
        "    except KeyboardInterrupt:\n"
        "        print('interrupted', interrupted())\n"
        "print('after', interrupted(), signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["interrupted 2", "after 0 True"], done.stdout


def test_a_keyboard_interrupt_lost_in_a_weakref_callback_is_still_noted_and_prints_nothing() -> None:
    """Python can only print an exception raised in `__del__` or a weakref callback ("Exception ignored in"): the
    command goes on. The flag still says a signal came, and no traceback reaches the user."""
    done = _run(
        "class Collected:\n"
        "    def __del__(self):\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        time.sleep(0.5)\n"
        "with stop_on_signals(raise_in_main=True):\n"
        "    Collected()\n"
        "    print('went on', interrupted())\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "went on 2", done.stdout
    assert done.stderr == ""


def test_a_handler_another_installed_is_kept_and_its_signal_is_not_ours() -> None:
    """Prefect handles SIGTERM in a flow run's process; `nohup` ignores SIGINT: neither is taken over."""
    done = _run(
        "def theirs(number, frame):\n"
        "    print('theirs', number)\n"
        "signal.signal(signal.SIGTERM, theirs)\n"
        "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "with stop_on_signals(raise_in_main=True):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    time.sleep(0.5)\n"
        "    print('flag', interrupted())\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["theirs", str(int(signal.SIGTERM)), "flag", "0"], done.stdout


def test_a_nested_stop_on_signals_leaves_the_outer_one_in_charge() -> None:
    """A model build inside the demo: the inner block neither installs nor clears anything."""
    done = _run(
        "with stop_on_signals(raise_in_main=True):\n"
        "    outer = signal.getsignal(signal.SIGINT)\n"
        "    try:\n"
        "        with stop_on_signals(raise_in_main=True):\n"
        "            assert signal.getsignal(signal.SIGINT) is outer\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "            time.sleep(10)\n"
        "    except KeyboardInterrupt:\n"
        "        pass\n"
        "    print('outer still', interrupted(), signal.getsignal(signal.SIGINT) is outer)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "outer still 2 True", done.stdout


def test_signals_held_run_their_handler_once_the_block_ends() -> None:
    """A Ctrl-C inside `signals_held` (starting a process and taking hold of it) does not cut the block: its
    KeyboardInterrupt comes as the block ends; `stop_on_signals` notes it at once; the handlers are put back."""
    done = _run(
        "from contextlib import nullcontext\n"
        "from pipelines.core.deadline import signals_held\n"
        "for outer in (stop_on_signals(raise_in_main=True), nullcontext()):\n"
        "    with outer:\n"
        "        try:\n"
        "            with signals_held():\n"
        "                os.kill(os.getpid(), signal.SIGINT)\n"
        "                time.sleep(0.5)\n"
        "                print('block ended', interrupted())\n"
        "            print('no interrupt')\n"
        "        except KeyboardInterrupt:\n"
        "            print('interrupted after the block')\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:5] == [
        "block ended 2",
        "interrupted after the block",
        "block ended 0",
        "interrupted after the block",
        "True",
    ], done.stdout
