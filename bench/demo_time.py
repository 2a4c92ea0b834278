"""How long `outreach demo` takes as a new user runs it, and the same sandbox synced by `outreach sync`.

Usage: .venv/bin/python -m bench.demo_time [--runs 2] [--scale small] [--tree DIR] [--no-cli] [--save LABEL]

Each run is `outreach demo --scale SCALE` in one directory, as a user runs `make demo` again in the same
clone (the demo replaces its own warehouse; dbt's saved parse beside it stays), with none of the user's Prefect or
outreach settings (so it starts its own temporary Prefect server), timed from launch to exit. The first run is the cold
one when nothing of the demo's is cached yet: run the bench with an empty cache, `XDG_CACHE_HOME=$(mktemp -d)`,
for a new user's first run (the Prefect server's migrated database is kept there); later runs are warm.
`--tree DIR` runs another checkout's code (e.g. `git archive HEAD~1 | tar -x -C /tmp/before`) with this
interpreter, for a before/after in one session.
Unless `--no-cli`, it then syncs a sandbox of the same scale and rate limit with `outreach sync --mode full`
and `--mode quick` after a simulated day, the reference the demo's flow runs are compared with.
`--save LABEL` also stores the record under LABEL (e.g. `before`, `after`) in bench/results.json and
bench/RESULTS.md, beside the other labels' runs. Every figure is printed with the date and the load average
(the machine may be shared), one JSON line last.
Each demo run also reports its CPU seconds (user + system of `outreach demo` and every process it started and
waited for: the sandbox, the Prefect server): the work it did, which a loaded machine
inflates far less than the wall time. Not wholly: the Prefect server's services and the demo's polls run
every second, so a run stretched by load also spends more CPU (100 s at load 26-37 against about 68 s at
load 18-22, 2026-11-25).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.peak import children_cpu_s
from flows.demo_services import DEMO_RATE_LIMIT  # the demo's figure, sandbox and client alike

OUTREACH = str(Path(sys.executable).with_name("outreach"))
DAY_S = 86_400
SYNC_LINE = re.compile(r"(full|quick) sync done in ([\d.]+) s\b.*?(\d+) requests")
STEP_LINE = re.compile(r"^\[(\d+)/\d+\] (.*?) \.\.\.$")
DONE_LINE = re.compile(r"^\s+done in ([\d.]+) s$")


def load_average() -> str:
    """The 1, 5 and 15 minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def user_env(tree: Path | None) -> dict[str, str]:
    """A new user's shell: none of the Prefect or outreach settings; `tree` first on the import path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SOURCES__", "DESTINATION__"))}
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def parse_demo(stdout: str) -> dict[str, Any]:
    """The syncs' seconds and requests, and each step's seconds, from the demo's output."""
    syncs = {
        m.group(1): {"seconds": float(m.group(2)), "requests": int(m.group(3))} for m in SYNC_LINE.finditer(stdout)
    }
    steps: list[dict[str, Any]] = []
    for line in stdout.splitlines():
        started = STEP_LINE.match(line)
        if started:
            steps.append({"step": started.group(2)})
        done = DONE_LINE.match(line)
        if done and steps:
            steps[-1]["seconds"] = float(done.group(1))
    return {"syncs": syncs, "steps": steps}


def run_demo(scale: str, tree: Path | None, label: str, cwd: str) -> dict[str, Any]:
    """One `outreach demo` in `cwd`: wall seconds, load average before and after, parsed figures."""
    before = load_average()
    cpu_before = sum(children_cpu_s())
    started = time.perf_counter()
    done = subprocess.run(
        [OUTREACH, "demo", "--scale", scale],
        cwd=cwd,
        env=user_env(tree),
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    seconds = time.perf_counter() - started
    cpu_s = sum(children_cpu_s()) - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"outreach demo failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    leaked = "leaked" in done.stdout + done.stderr
    figures = parse_demo(done.stdout)
    return {"run": label, "seconds": round(seconds, 1), "cpu_seconds": round(cpu_s, 1), "loadavg_before": before,
            "loadavg_after": load_average(), "leaked_warnings": leaked, **figures}  # fmt: skip


def run_cli(scale: str, tree: Path | None) -> dict[str, Any]:
    """`outreach sync` full, then quick after a simulated day, against a sandbox like the demo's."""
    from sandbox.server import SandboxProcess

    out: dict[str, Any] = {"loadavg_before": load_average()}
    with (
        tempfile.TemporaryDirectory(prefix="bench-demo-cli-") as cwd,
        SandboxProcess(scale=scale, rate_limit=DEMO_RATE_LIMIT) as sandbox,
    ):
        keys = sorted({k["workspace_id"]: k["key"] for k in sandbox.keys() if k["level"] == "read"}.items())
        env = {
            **user_env(tree),
            "SOURCES__OUTREACH__BASE_URL": sandbox.base_url,
            "SOURCES__OUTREACH__API_KEYS": ",".join(key for _, key in keys),
            "SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE": str(DEMO_RATE_LIMIT),
            "SOURCES__OUTREACH__PIPELINES_DIR": str(Path(cwd) / "dlt"),
        }
        for mode in ("full", "quick"):
            if mode == "quick":
                sandbox.advance(DAY_S)
            sandbox.reset_metrics()
            started = time.perf_counter()
            subprocess.run(
                [OUTREACH, "sync", "--mode", mode, "--no-progress"], cwd=cwd, env=env, check=True,
                capture_output=True, timeout=600,
            )  # fmt: skip
            out[mode] = {"seconds": round(time.perf_counter() - started, 1), "requests": sandbox.metrics()["requests"]}
    out["loadavg_after"] = load_average()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.demo_time", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="demo runs; the first is the cold one")
    parser.add_argument("--scale", default="small")
    parser.add_argument("--tree", type=Path, default=None, help="run this checkout's code instead")
    parser.add_argument("--no-cli", action="store_true", help="skip the `outreach sync` reference")
    parser.add_argument("--save", metavar="LABEL", help="store the record under LABEL in bench/RESULTS.md")
    args = parser.parse_args(argv)
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# outreach demo --scale {args.scale}, {date}, code: {args.tree or 'this checkout'}", flush=True)
    record: dict[str, Any] = {"bench": "demo_time", "date": date, "scale": args.scale, "tree": str(args.tree or "")}
    record["demo"] = []
    from flows.prefect_api import migrated_database_template  # the one cache the demo keeps between runs

    cached = migrated_database_template().is_file()
    with tempfile.TemporaryDirectory(prefix="bench-demo-") as cwd:
        for index in range(args.runs):
            label = f"warm #{index}" if index else ("first (Prefect database cached)" if cached else "first (cold)")
            got = run_demo(args.scale, args.tree, label, cwd)
            record["demo"].append(got)
            syncs = ", ".join(f"{m} sync {s['seconds']} s ({s['requests']} requests)" for m, s in got["syncs"].items())
            print(f"demo {label}: {got['seconds']} s wall, {got['cpu_seconds']} s CPU; {syncs}; "
                  f"load average {got['loadavg_before']} before, {got['loadavg_after']} after", flush=True)  # fmt: skip
            for item in got["steps"]:
                print(f"  {item['step']}: {item.get('seconds', '?')} s", flush=True)
    if not args.no_cli:
        cli = run_cli(args.scale, args.tree)
        record["cli"] = cli
        print(f"outreach sync, same sandbox: full {cli['full']['seconds']} s ({cli['full']['requests']} requests), "
              f"quick {cli['quick']['seconds']} s ({cli['quick']['requests']} requests), process start included; "
              f"load average {cli['loadavg_before']} before, {cli['loadavg_after']} after", flush=True)  # fmt: skip
    print(json.dumps(record))
    if args.save:
        save(record, args.save)
    return 0


def save(record: dict[str, Any], label: str) -> None:
    """Store one run of this bench under `label` (bench/results.json, then RESULTS.md is written again)."""
    from bench.results import save_record

    save_record(
        {"name": "demo_time", "scale": f"{record['scale']} {label}", "date": record["date"], "result": record},
        section="other",
    )


if __name__ == "__main__":
    sys.exit(main())
