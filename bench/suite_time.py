"""`make test` on a fresh clone, timed as CI runs it: the figures the README's Development section gives.

    .venv/bin/python -m bench.suite_time                  # a fresh clone of HEAD, one run
    .venv/bin/python -m bench.suite_time --rev 38819ce --runs 2

Each run clones a commit of this repository into a temporary directory (committed files only, as CI's clean
clone), runs `.ci/run` there (`make test`: setup from the lock file, lint, then the suite) and measures its wall
time; the CPU minutes of it and of every process it waited for (user and system, as the shell's `time` counts
them); the suite's own time, outcome and random order (pytest's summary line and pytest-randomly's seed); and
how busy the 2 cores were (/proc/stat, every 5 s), with the 1-minute load average before and after. What a clone
need not make again is cached outside it (~/.cache/outreach-elt, uv's cache), as on a developer's machine.

One JSON line per run on stdout, progress on stderr. Every run is kept in bench/results.json (`suite_time/-`)
and shown in RESULTS.md. Exit 1 if a run failed or missed the 12-minute goal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.peak import children_cpu_s

ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 12 * 60
SAMPLE_S = 5.0
_SEED = re.compile(r"Using --randomly-seed=(\d+)")
_SUMMARY = re.compile(r"^=+ (?P<counts>.+) in (?P<seconds>[\d.]+)s(?: \([\d:]+\))? =+$")
_PROGRESS = re.compile(r"\[\s*\d+%\]$")


def parse_pytest(output: str) -> dict[str, Any]:
    """The seed, the suite's seconds and its counts ({"passed": 588, ...}) from pytest's output."""
    seed = _SEED.search(output)
    found: dict[str, Any] = {"seed": int(seed.group(1)) if seed else None, "pytest_s": None, "counts": {}}
    for line in output.splitlines():
        summary = _SUMMARY.match(line.strip())
        if summary:
            found["pytest_s"] = float(summary.group("seconds"))
            for part in summary.group("counts").split(", "):
                number, _, what = part.partition(" ")
                if number.isdigit():
                    found["counts"][what] = int(number)
    return found


class BusyCores:
    """The average number of busy cores (all of the machine's, 1 - idle - iowait) while it runs."""

    def __init__(self) -> None:
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def _read() -> tuple[int, int]:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:8]]
        return sum(fields), fields[3] + fields[4]

    def _run(self) -> None:
        total, idle = self._read()
        while not self._stop.wait(SAMPLE_S):
            now_total, now_idle = self._read()
            if now_total > total:
                self.samples.append((os.cpu_count() or 1) * (1 - (now_idle - idle) / (now_total - total)))
            total, idle = now_total, now_idle

    def __enter__(self) -> BusyCores:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def average(self) -> float | None:
        return round(sum(self.samples) / len(self.samples), 2) if self.samples else None


def run_once(rev: str, workdir: Path) -> dict[str, Any]:
    """One fresh clone of `rev` and its `.ci/run`; the log stays in `workdir` (its path is in the line)."""
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], check=True,
                         capture_output=True, text=True).stdout.strip()  # fmt: skip
    clone = workdir / f"clone-{sha}"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", sha], check=True)
    log_path = workdir / f"ci-{sha}-{time.strftime('%H%M%S')}.log"
    line: dict[str, Any] = {
        "bench": "suite_time", "rev": sha, "cpus": os.cpu_count(), "goal_s": GOAL_S, "log": str(log_path),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }  # fmt: skip
    load_before = os.getloadavg()[0]
    before = children_cpu_s()
    started = time.perf_counter()
    output: list[str] = []
    with BusyCores() as busy, open(log_path, "w") as log:
        # CI's environment, not this shell's: nothing of ours (a warehouse path, a destination) leaks into the run
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SOURCES__", "DESTINATION__", "OUTREACH_"))}
        # a session of its own: an interrupted bench stops the whole run (the servers its tests started too)
        child = subprocess.Popen(["bash", ".ci/run"], cwd=clone, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
        assert child.stdout is not None
        try:
            for text in child.stdout:
                log.write(text)
                output.append(text)
                if _PROGRESS.search(text.rstrip()):
                    elapsed = time.perf_counter() - started
                    print(f"  {elapsed:6.0f} s  {text.rstrip()[-6:]}", file=sys.stderr, flush=True)
            returncode = child.wait()
        except BaseException:
            os.killpg(child.pid, signal.SIGTERM)
            child.wait()
            raise
    after = children_cpu_s()
    found = parse_pytest("".join(output))
    line.update({
        "wall_s": round(time.perf_counter() - started, 1),
        "pytest_s": found["pytest_s"],
        "user_cpu_s": round(after[0] - before[0], 1),
        "system_cpu_s": round(after[1] - before[1], 1),
        "seed": found["seed"],
        "counts": found["counts"],
        "busy_cores": busy.average(),
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "passed": returncode == 0,
    })  # fmt: skip
    line["met"] = line["passed"] and line["wall_s"] <= GOAL_S
    shutil.rmtree(clone, ignore_errors=True)
    return line


def save(lines: list[dict[str, Any]]) -> None:
    """Append the runs to the stored ones (bench/results.json), then RESULTS.md is written again."""
    from bench.results import load_results, save_record

    stored = load_results().get("other", {}).get("suite_time/-", {}).get("result") or []
    record = {"name": "suite_time", "date": lines[-1]["date"], "result": [*stored, *lines]}
    save_record(record, section="other")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD: what CI would run)")
    parser.add_argument("--runs", type=int, default=1, help="runs one after the other (each its own random order)")
    parser.add_argument("--no-save", action="store_true", help="print the lines only")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="suite_time_"))
    workdir.chmod(0o755)  # as a clone anywhere else: some tests run code of the clone as another user
    lines = []
    for number in range(1, args.runs + 1):
        print(
            f"run {number} of {args.runs}: a fresh clone of {args.rev}, `.ci/run` (log in {workdir})", file=sys.stderr
        )
        line = run_once(args.rev, workdir)
        print(json.dumps(line), flush=True)
        print(f"run {number}: {'passed' if line['passed'] else 'FAILED'} in {line['wall_s']} s (goal {GOAL_S} s: "
              f"{'met' if line['met'] else 'missed'}), pytest {line['pytest_s']} s, seed {line['seed']}, "
              f"CPU {line['user_cpu_s'] / 60:.1f} + {line['system_cpu_s'] / 60:.1f} min, "
              f"{line['busy_cores']} cores busy",
              file=sys.stderr)  # fmt: skip
        lines.append(line)
    if not args.no_save:
        save(lines)
    return 0 if all(line["met"] for line in lines) else 1


if __name__ == "__main__":
    sys.exit(main())
