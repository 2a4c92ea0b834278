"""Ctrl-C during `outreach demo`: how long the demo takes to stop, what it says, and what it leaves running.

Usage: .venv/bin/python -m bench.demo_interrupt [--delays 2 5 10 14 18 22 26 30] [--baseline REV] [--no-save]

For each delay, one `outreach demo` (scale small, a new user's environment, a directory of its own) gets SIGINT at
that many seconds after its start, sent to its whole process group as a terminal sends Ctrl-C. Per trial: the
step it was in (the last `[k/5]` line before the signal), the exit status, the seconds from the signal to the
exit (a demo still running 150 s after the signal is killed, and counts as 150), its last line, whether a
traceback was printed, and the processes it had started (seen before the signal) still running 1 s after it
exited (then killed). With `--baseline REV`, the same delays again with the product packages of git revision REV
(devtools.runner_parity.runner_tree), right after: a change's before and after in one run. One JSON line per
trial, then one per tree; stored in bench/results.json (`demo_interrupt/-`) unless `--no-save`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import psutil

from bench.demo_time import OUTREACH, STEP_LINE, load_average, user_env
from devtools.runner_parity import runner_tree

DELAYS = (2.0, 5.0, 10.0, 14.0, 18.0, 22.0, 26.0, 30.0)
GIVE_UP_S = 150.0
#: what the demo runs: its checkout of another revision needs them all
PACKAGES = ("flows", "pipelines", "models", "sandbox", "alerts", "dashboard", "receiver", "devtools")


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def trial(delay: float, tree: Path | None) -> dict[str, Any]:
    """One demo, SIGINT to its process group `delay` seconds after its start."""
    with tempfile.TemporaryDirectory(prefix="bench-demo-interrupt-") as cwd:
        env = {**user_env(tree), "TMPDIR": cwd}
        proc = subprocess.Popen([OUTREACH, "demo"], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
        started = time.monotonic()
        children: dict[int, psutil.Process] = {}
        while time.monotonic() - started < delay and proc.poll() is None:
            children.update({c.pid: c for c in psutil.Process(proc.pid).children(recursive=True)})
            time.sleep(0.05)
        finished_first = proc.poll() is not None
        os.killpg(proc.pid, signal.SIGINT)
        sent = time.monotonic()
        try:
            out, _ = proc.communicate(timeout=GIVE_UP_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
        seconds = min(time.monotonic() - sent, GIVE_UP_S)
        time.sleep(1)
        left = _alive(list(children.values()))
        for process in left:
            process.kill()
    lines = out.splitlines()
    steps = [m.group(1) for m in map(STEP_LINE.match, lines) if m]
    return {
        "delay_s": delay, "finished_before_the_signal": finished_first, "step": steps[-1] if steps else "",
        "exit": proc.returncode, "seconds_to_exit": round(seconds, 2), "last_line": lines[-1][:200] if lines else "",
        "tracebacks": out.count("Traceback (most recent call last)"),
        "left_running": [" ".join(p.cmdline())[:100] for p in left],
    }  # fmt: skip


def summary(trials: list[dict[str, Any]], label: str) -> dict[str, Any]:
    stopped = [t for t in trials if not t["finished_before_the_signal"]]
    seconds = [t["seconds_to_exit"] for t in stopped]
    return {
        "tree": label, "trials": len(stopped), "exit_130": sum(t["exit"] == 130 for t in stopped),
        "median_s": round(statistics.median(seconds), 2) if seconds else None, "max_s": max(seconds, default=None),
        "with_traceback": sum(t["tracebacks"] > 0 for t in stopped),
        "left_a_process": sum(bool(t["left_running"]) for t in stopped),
    }  # fmt: skip


def run(delays: list[float], tree: Path | None, label: str) -> dict[str, Any]:
    trials = []
    for delay in delays:
        trials.append({"tree": label, **trial(delay, tree)})
        print(json.dumps(trials[-1]), flush=True)
    line = {**summary(trials, label), "trials_detail": trials}
    print(json.dumps({k: v for k, v in line.items() if k != "trials_detail"}), flush=True)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delays", nargs="+", type=float, default=list(DELAYS))
    parser.add_argument("--baseline", metavar="REV", help="also run the delays with this git revision's packages")
    parser.add_argument("--no-save", action="store_true", help="print the lines only")
    args = parser.parse_args()
    date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    load_before = load_average()
    lines = [run(args.delays, None, "this")]
    with runner_tree(args.baseline, *PACKAGES) if args.baseline else nullcontext() as base:
        if base is not None:
            lines.append(run(args.delays, base, args.baseline))
    if not args.no_save:
        from bench.results import save_record

        commit = subprocess.run(["git", "describe", "--always", "--dirty"], capture_output=True, text=True).stdout
        for line in lines:
            line["tree"] = commit.strip() if line["tree"] == "this" else line["tree"]
        record = {"name": "demo_interrupt", "date": date, "load_avg_before": load_before,
                  "load_avg_after": load_average(), "result": lines}  # fmt: skip
        save_record(record, section="other")


if __name__ == "__main__":
    main()
