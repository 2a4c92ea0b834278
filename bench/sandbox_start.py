"""Measure how long `outreach sandbox --scale large` takes to become healthy, and its peak RSS.

Usage: .venv/bin/python -m bench.sandbox_start [--scale large] [--seed 7]
Prints the start time (process launch -> /_sandbox/health answers) and peak RSS of the sandbox process,
plus the same for `tiny` as a baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import threading
import time

import psutil

from sandbox.server import SandboxProcess


def measure(scale: str, seed: int) -> tuple[float, float]:
    """(seconds to healthy, peak RSS in MB) of a sandbox process at this scale."""
    peak = [0]
    proc = SandboxProcess(scale=scale, seed=seed, rate_limit=0, start_timeout=300)
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            if proc.pid:
                try:
                    peak[0] = max(peak[0], psutil.Process(proc.pid).memory_info().rss)
                except psutil.Error:
                    pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    start = time.perf_counter()
    proc.start()
    elapsed = time.perf_counter() - start
    time.sleep(0.5)
    done.set()
    watcher.join()
    proc.stop()
    return elapsed, peak[0] / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="large")
    parser.add_argument("--seed", type=int, default=7)
    a = parser.parse_args()
    base_t, base_m = measure("tiny", a.seed)
    t, m = measure(a.scale, a.seed)
    print(f"tiny (baseline): start {base_t:.1f} s, peak RSS {base_m:.0f} MB")
    print(f"{a.scale}: start {t:.1f} s (limit 60 s), peak RSS {m:.0f} MB (limit 4096 MB); "
          f"x{t / base_t:.1f} time and x{m / base_m:.1f} memory of tiny")


if __name__ == "__main__":
    main()
