"""Model build time and peak memory on big warehouses; prints one JSON line per case.

Cases: a 1M-recipient warehouse (the `large` scale: synthetic, or an existing synced
warehouse with --warehouse PATH) and 10M synthetic recipients generated straight into
DuckDB. Generation and each build run in their own child process, so `peak_rss_mb` is the
build's own peak (VmHWM of the child, `bench.peak`). `vs_1m` is the 10M build time over the 1M build
time measured in the same run.

    .venv/bin/python bench/models_build.py                 # both cases
    .venv/bin/python bench/models_build.py --cases 1m --memory-limit 2GB
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

from bench.peak import peak_rss_mb

CASES = {"1m": 1_000_000, "10m": 10_000_000}


def _child_generate(path: str, recipients: int) -> None:
    from models.synthetic import make_raw_warehouse

    started = time.perf_counter()
    make_raw_warehouse(path, recipients=recipients, memory_limit=os.environ.get("OUTREACH_DUCKDB_MEMORY_LIMIT"))
    print(json.dumps({"generate_seconds": round(time.perf_counter() - started, 2)}))


def _child_build(path: str) -> None:
    from models.runner import build

    started = time.perf_counter()
    report = build(path)
    total = time.perf_counter() - started
    slowest = max((m for m in report.models if m.kind == "table"), key=lambda m: m.seconds)
    print(json.dumps({
        "build_seconds": round(report.seconds, 2),
        "publish_seconds": round(report.publish_seconds, 2),
        "total_seconds": round(total, 2),
        "peak_rss_mb": peak_rss_mb(),
        "data_tests_passed": report.passed,
        "slowest_model": f"{slowest.name} {slowest.seconds:.2f}s",
        "bi_size_mb": round(Path(report.bi_path or path).stat().st_size / 2**20, 1),
    }))


def _run_child(*args: str, env: dict[str, str]) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, env=env, check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["1m", "10m"])
    parser.add_argument("--warehouse", type=Path, help="use this synced warehouse for the 1m case (copied first)")
    parser.add_argument("--memory-limit", help="DuckDB memory_limit for generation and build, e.g. 4GB")
    parser.add_argument("--workdir", type=Path, help="where the warehouses go (default: a temporary directory)")
    parser.add_argument("--keep", action="store_true", help="keep the generated warehouses")
    args = parser.parse_args()

    env = dict(os.environ)
    root = Path(__file__).resolve().parent.parent
    env["PYTHONPATH"] = f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"
    if args.memory_limit:
        env["OUTREACH_DUCKDB_MEMORY_LIMIT"] = args.memory_limit
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="models_bench_"))
    workdir.mkdir(parents=True, exist_ok=True)
    baseline: float | None = None
    try:
        for case in args.cases:
            path = workdir / f"w_{case}.duckdb"
            line: dict[str, object] = {"bench": "models_build", "case": case, "recipients": CASES[case]}
            if case == "1m" and args.warehouse:
                shutil.copy(args.warehouse, path)
                line["source"] = str(args.warehouse)
            else:
                line["source"] = "synthetic"
                line.update(_run_child("--child-generate", str(path), str(CASES[case]), env=env))
            line["warehouse_size_mb"] = round(path.stat().st_size / 2**20, 1)
            line.update(_run_child("--child-build", str(path), env=env))
            line["memory_limit"] = args.memory_limit or "duckdb default (80% of RAM)"
            line["cpus"] = os.cpu_count()
            seconds = float(line["build_seconds"])  # type: ignore[arg-type]
            if case == "1m":
                baseline = seconds
            elif baseline:
                line["vs_1m"] = round(seconds / baseline, 2)
            print(json.dumps(line), flush=True)
            if not args.keep:
                for leftover in workdir.glob(f"w_{case}*"):
                    leftover.unlink()
    finally:
        if not args.keep and args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-generate":
        _child_generate(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-build":
        _child_build(sys.argv[2])
    else:
        main()
