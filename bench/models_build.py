"""dbt's model build against the retired hand-written runner, at 1M and 10M synthetic recipients.

Per case: a synthetic warehouse (devtools.synthetic) is generated, then copied; one copy is built by the
runner (taken from git history, devtools.runner_parity.RUNNER_REV) and the other by dbt twice: a cold
run (dbt parses the project from scratch) and a warm one (partial parsing, what every scheduled run
does). Each build runs in its own child process, so `wall_s` counts Python's and dbt's start-up and
`peak_rss_mb` is that child's own peak (VmHWM, `bench.peak`). Builds run without publishing; the BI
publish is timed on its own. One JSON line per case; ratios are dbt over the runner measured in the same
run, and over the runner's last recorded figures (RECORDED).

With `--baseline REV` (e.g. `main`) a third copy is built by the dbt project of git revision REV (its
`models/` from git history, as the runner is taken), interleaved with this tree's builds: cold, then two
warm rounds each, baseline first; `warm_s` is the faster warm run of each; `ratio_warm_vs_baseline` is
this tree's over the baseline's, measured in the same run on the same data (what new marts cost).

    .venv/bin/python -m bench.models_build                  # both cases
    .venv/bin/python -m bench.models_build --cases 1m --baseline main
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CASES = {"1m": 1_000_000, "10m": 10_000_000}
#: the runner's last measured figures (build plus data tests, seconds; peak RSS MB), as last recorded
RECORDED = {"1m": {"seconds": 2.2}, "10m": {"seconds": 19.0, "peak_rss_mb": 4400.0}}
ROOT = Path(__file__).resolve().parent.parent


def process_age() -> float:
    """Seconds since this process started (its start-up included), on the kernel's clock since boot. The wall
    clock would not do: psutil's start time is wall-clock time, and an NTP step soon after boot once made
    a 23 s build read 206 s."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    started = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22 of proc(5), `starttime`, in clock ticks
    return float(Path("/proc/uptime").read_text().split()[0]) - started


def child_generate(path: str, recipients: int) -> None:
    from devtools.synthetic import make_raw_warehouse

    started = time.perf_counter()
    make_raw_warehouse(path, recipients=recipients)
    print(json.dumps({"generate_s": round(time.perf_counter() - started, 1)}))


def _child_runner(path: str) -> None:
    """Runs with the runner's tree first on sys.path (its `models` package)."""
    from models.runner import build  # type: ignore[import-not-found]  # the retired runner

    from bench.peak import peak_rss_mb

    report = build(path, publish=False)
    print(json.dumps({
        "wall_s": round(process_age(), 2),
        "build_s": round(report.seconds, 2),
        "peak_rss_mb": peak_rss_mb(),
        "passed": report.passed,
    }))  # fmt: skip


def _child_dbt(path: str) -> None:
    from bench.peak import peak_rss_mb
    from models.build import build
    from models.settings import dbt_state_dir, resolve_target

    imported = process_age()
    report = build(path, publish=False)
    wall = process_age()
    phases = _dbt_phases(dbt_state_dir(resolve_target(path)) / "logs" / "dbt.log")
    marts = {m.name: round(m.seconds, 2) for m in report.models if m.is_mart}
    hook = sum(r.seconds for r in report.results if r.resource_type == "operation")
    print(json.dumps({
        "wall_s": round(wall, 2),
        "startup_s": round(imported, 2),  # interpreter and imports before dbt is invoked
        "dbt_s": round(report.seconds, 2),  # the dbtRunner call: import, parse, models, tests, swap
        **phases,
        "mart_s": marts,
        "views_s": round(sum(m.seconds for m in report.models if m.kind == "view"), 2),
        "tests_s_summed": round(sum(t.seconds for t in report.tests), 2),
        "tests": len(report.tests),
        "swap_hook_s": round(hook, 2),
        "peak_rss_mb": peak_rss_mb(),
        "passed": report.passed,
    }))  # fmt: skip


def _dbt_phases(log: Path) -> dict[str, float]:
    """Seconds of the last run's phases, from dbt's own log: parse (start to "Found ..."), execute (models,
    tests and the swap hook: "Concurrency" to "Finished running")."""
    from datetime import datetime

    marks: dict[str, datetime] = {}
    for line in log.read_text().splitlines():
        stamp, _, text = line.partition(" [")
        try:
            at = datetime.strptime(stamp.strip(), "%H:%M:%S.%f")
        except ValueError:
            continue
        for key, needle in (("start", "Running with dbt"), ("parsed", ": Found "), ("execute", "Concurrency:"),
                            ("finished", "Finished running")):  # fmt: skip
            if needle in text or needle in line:
                marks[key] = at
                if key == "start":
                    marks = {"start": at}
    if len(marks) < 4:
        return {}
    return {
        "parse_s": round((marks["parsed"] - marks["start"]).total_seconds(), 2),
        "execute_s": round((marks["finished"] - marks["execute"]).total_seconds(), 2),
    }


def child_publish(path: str) -> None:
    from models.publish import publish_bi

    started = time.perf_counter()
    target, _rows = publish_bi(path)
    print(json.dumps({"publish_s": round(time.perf_counter() - started, 2),
                      "bi_size_mb": round(target.stat().st_size / 2**20, 1)}))  # fmt: skip


def run_child(
    args: list[str], env: dict[str, str], first: Path = ROOT, module: str = "bench.models_build"
) -> dict[str, Any]:
    """`module` in a child process, its last stdout line as JSON; `first` is its working directory, first on
    sys.path (the runner's tree puts the runner's `models` package before ours)."""
    out = subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, check=False,
        env={**env, "PYTHONPATH": f"{first}{os.pathsep}{ROOT}"}, cwd=str(first),
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_case(
    case: str, workdir: Path, env: dict[str, str], runner_tree: Path, baseline_tree: Path | None = None
) -> dict[str, Any]:
    line: dict[str, Any] = {"bench": "models_build", "case": case, "recipients": CASES[case], "cpus": os.cpu_count()}
    source = workdir / f"w_{case}.duckdb"
    line.update(run_child(["--child-generate", str(source), str(CASES[case])], env))
    line["warehouse_mb"] = round(source.stat().st_size / 2**20, 1)
    runner_copy = workdir / "runner" / source.name
    dbt_copy = workdir / "dbt" / source.name
    base_copy = workdir / "baseline" / source.name
    for copy in (runner_copy, dbt_copy, *((base_copy,) if baseline_tree else ())):
        copy.parent.mkdir(exist_ok=True)
        shutil.copy(source, copy)
    source.unlink()
    line["runner"] = run_child(["--child-runner", str(runner_copy)], env, runner_tree)
    shutil.rmtree(runner_copy.parent)
    if baseline_tree is not None:
        line["baseline_cold"] = run_child(["--child-dbt", str(base_copy)], env, baseline_tree)
    line["dbt_cold"] = run_child(["--child-dbt", str(dbt_copy)], env)
    if baseline_tree is not None:
        base_warm = [run_child(["--child-dbt", str(base_copy)], env, baseline_tree)]
        ours_warm = [run_child(["--child-dbt", str(dbt_copy)], env)]
        base_warm.append(run_child(["--child-dbt", str(base_copy)], env, baseline_tree))
        ours_warm.append(run_child(["--child-dbt", str(dbt_copy)], env))
        line["baseline_warm"] = min(base_warm, key=lambda r: float(r["wall_s"]))
        line["dbt_warm"] = min(ours_warm, key=lambda r: float(r["wall_s"]))
        line["warm_s"] = {"baseline": [r["wall_s"] for r in base_warm], "ours": [r["wall_s"] for r in ours_warm]}
        line["ratio_warm_vs_baseline"] = round(line["dbt_warm"]["wall_s"] / line["baseline_warm"]["wall_s"], 2)
        line["ratio_cold_vs_baseline"] = round(line["dbt_cold"]["wall_s"] / line["baseline_cold"]["wall_s"], 2)
        shutil.rmtree(base_copy.parent)
    else:
        line["dbt_warm"] = run_child(["--child-dbt", str(dbt_copy)], env)
    line.update(run_child(["--child-publish", str(dbt_copy)], env))
    runner, warm, cold = line["runner"], line["dbt_warm"], line["dbt_cold"]
    line["ratio_warm_vs_runner_build"] = round(warm["wall_s"] / runner["build_s"], 2)
    line["ratio_warm_vs_runner_wall"] = round(warm["wall_s"] / runner["wall_s"], 2)
    line["ratio_cold_vs_runner_build"] = round(cold["wall_s"] / runner["build_s"], 2)
    line["ratio_warm_vs_recorded"] = round(warm["wall_s"] / RECORDED[case]["seconds"], 2)
    line["peak_vs_runner"] = round(max(warm["peak_rss_mb"], cold["peak_rss_mb"]) / runner["peak_rss_mb"], 2)
    if "peak_rss_mb" in RECORDED[case]:
        peak = max(warm["peak_rss_mb"], cold["peak_rss_mb"])
        line["peak_vs_recorded"] = round(peak / RECORDED[case]["peak_rss_mb"], 2)
    shutil.rmtree(dbt_copy.parent)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["1m", "10m"])
    parser.add_argument("--workdir", type=Path, help="where the warehouses go (default: a temporary directory)")
    parser.add_argument("--baseline", metavar="REV", help="also build with the dbt project of this git revision")
    args = parser.parse_args()
    from contextlib import nullcontext

    from devtools.runner_parity import runner_tree

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="models_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    try:
        with runner_tree() as tree, runner_tree(args.baseline) if args.baseline else nullcontext() as base:
            for case in args.cases:
                line = run_case(case, workdir, env, tree, base)
                if args.baseline:
                    line["baseline_rev"] = args.baseline
                print(json.dumps(line), flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-generate":
        child_generate(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-runner":
        _child_runner(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-dbt":
        _child_dbt(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-publish":
        child_publish(sys.argv[2])
    else:
        main()
