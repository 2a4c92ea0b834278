"""`python -m bench [--scenario NAME ...] [--scale SCALE]`: run benchmarks, print JSON lines, write RESULTS.md.

Without `--scenario` it runs everything (`make bench`): the five sync scenarios, the local-speed
comparison, and the other helpers' scripts. It prints an estimate first (from the last measured
run where there is one). Each scenario ends with one JSON line on stdout; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.external import SCRIPTS, run_external
from bench.results import BENCH_DIR, RESULTS_MD, load_results, save_record
from bench.scenarios import SCENARIOS, run_scenario

logger = logging.getLogger("bench")

LOCAL_SPEED = "local_speed"
ALL = [*SCENARIOS, LOCAL_SPEED, *SCRIPTS]
# Rough first-run guesses in seconds (sandbox starts, setup syncs, snapshots, both sides), by scale.
GUESS_S = {
    "tiny": {"full": 30, "incremental": 45, "idle": 45, "faults": 40, "paced": 60, "paced_incremental": 60},
    "small": {"full": 60, "incremental": 90, "idle": 90, "faults": 90, "paced": 400, "paced_incremental": 400},
    "medium": {"full": 300, "incremental": 500, "idle": 450, "faults": 400, "paced": 1800, "paced_incremental": 900},
    "large": {
        "full": 2400,
        "incremental": 3600,
        "idle": 3400,
        "faults": 3000,
        "paced": 12000,
        "paced_incremental": 6000,
    },
}
GUESS_OTHER_S = {
    LOCAL_SPEED: 400,
    "sync_pacing": 300,
    "sync_memory": 600,
    "models_build": 600,
    "models_incremental": 900,
    "receiver_throughput": 60,
    "sandbox_start": 60,
    "report_scale": 90,
    "scale_out": 300,
    "scale_out_1000": 1500,
    "storage_format": 300,
    "soak": 2400,
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    p.add_argument("--scenario", action="append", choices=ALL, help="repeatable; default: all")
    p.add_argument("--scale", default="medium", choices=["tiny", "small", "medium", "large"])
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--no-baseline", action="store_true", help="measure ours only (e.g. at large scale)")
    p.add_argument("--reply-body-cap", type=int, default=None, help="ours' per-run body cap (default: its config)")
    p.add_argument("--rows", type=int, default=1_000_000, help="local_speed: recipients for the fast paths")
    p.add_argument("--default-rows", type=int, default=100_000, help="local_speed: rows for dlt's default path")
    p.add_argument("--workdir", type=Path, default=None, help="keep warehouses and logs here (default: a temp dir)")
    p.add_argument("--out", type=Path, default=BENCH_DIR, help="where results.json and RESULTS.md go")
    p.add_argument("--estimate", action="store_true", help="print the time estimate and exit")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def _estimate(names: list[str], scale: str, out_dir: Path) -> float:
    """Seconds: the last measured wall time of each item where known, else a rough guess."""
    data = load_results(out_dir)
    total = 0.0
    for name in names:
        if name in SCENARIOS:
            rec = (data.get("scenarios") or {}).get(f"{name}/{scale}")
            total += float(rec["bench_wall_s"]) if rec and rec.get("bench_wall_s") else GUESS_S[scale][name]
        else:
            rec = (data.get("other") or {}).get(f"{name}/-") or (data.get("other") or {}).get(f"{name}/{scale}")
            total += float(rec["wall_s"]) if rec and rec.get("wall_s") else GUESS_OTHER_S.get(name, 300)
    return total


def _print_line(record: dict[str, Any]) -> None:
    print(json.dumps(record, sort_keys=False, default=str), flush=True)


def _human(rec: dict[str, Any]) -> str:
    def x(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}x"

    return (
        f"[{rec['scenario']}/{rec['scale']}] requests ours {rec['ours_requests']} "
        f"(+{rec['ours_body_requests']} bodies) "
        f"baseline {rec['baseline_requests']} bound {rec['bound_requests']} | baseline/ours "
        f"{x(rec['requests_ratio_baseline_to_ours'])}, ours/bound {x(rec['ours_to_bound_requests'])} | wall ours "
        f"{rec['ours_wall_s']} s baseline {rec['baseline_wall_s']} s bound {rec['bound_wall_s']} s | 429s ours "
        f"{rec['ours_429']} baseline {rec['baseline_429']} | peak MB ours {rec['ours_peak_mb']} baseline "
        f"{rec['baseline_peak_mb']} | truth ours {rec['truth_ok']} baseline {rec['baseline_truth_ok']}"
    )


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(name)s %(message)s",
    )
    logging.getLogger("bench").setLevel(logging.INFO)
    names: list[str] = args.scenario or ALL
    estimate = _estimate(names, args.scale, args.out)
    print(f"bench: {', '.join(names)} at scale {args.scale}; estimated {estimate / 60:.0f} min", file=sys.stderr)
    if args.estimate:
        return 0
    workroot = args.workdir or Path(tempfile.mkdtemp(prefix="outreach-bench-"))
    failures = 0
    try:
        for name in names:
            if name in SCENARIOS:
                started = time.perf_counter()
                result = run_scenario(
                    SCENARIOS[name],
                    scale=args.scale,
                    seed=args.seed,
                    workdir=workroot / f"{name}-{args.scale}",
                    with_baseline=not args.no_baseline,
                    reply_body_cap=args.reply_body_cap,
                )
                record = result.record()
                record["bench_wall_s"] = round(time.perf_counter() - started, 1)
                print(_human(record), file=sys.stderr)
                if result.ours.truth is not None and not result.ours.truth.ok:
                    print(result.ours.truth.summary(), file=sys.stderr)
                save_record(record, out_dir=args.out)
                _print_line(record)
                failures += int(not record["truth_ok"])
            elif name == LOCAL_SPEED:
                from bench.local_speed import run_local_speed

                record = run_local_speed(rows=args.rows, default_rows=args.default_rows, workdir=workroot / name)
                save_record(record, section="other", out_dir=args.out)
                _print_line(record)
            else:
                record = run_external(name)
                save_record(record, section="other", out_dir=args.out)
                _print_line(record)
                failures += int(not record["ok"])
    finally:
        if args.workdir is None:
            shutil.rmtree(workroot, ignore_errors=True)
    print(f"bench: results in {args.out / RESULTS_MD.name}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
