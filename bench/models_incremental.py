"""The full model build against the incremental one after a quick sync that changed about 1% of the rows.

Per case (1M and 10M synthetic recipients, devtools.synthetic): a first build creates `reporting` and the
incremental snapshot (not measured: it parses the project from scratch). Then, twice, a quick sync's load is
simulated (`touch`: a new dlt load, 1% of recipients and 1% of replies re-written with that sync's
`synced_at` and load id, 1% of webhook events with its load id) and the warehouse is built: first with
`--full-refresh` (every mart from every row: the full build), then incrementally (only the keys the change
touched). Both builds see the same size of change on the same warehouse, with dbt's partial parsing
(what every scheduled run does). Each build runs in its own child process: `wall_s` counts Python's and
dbt's start-up, `peak_rss_mb` is that child's peak (VmHWM, `bench.peak`). The 1-minute load average is
read before and after each build: the machine is shared. One JSON line per case.

The re-written rows keep their values: the data tests tie recipients' statuses to the service's totals,
and an incremental build recomputes a touched key whatever changed in it.

    .venv/bin/python -m bench.models_incremental                 # both cases
    .venv/bin/python -m bench.models_incremental --cases 1m
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
SHARE = 0.01
#: the issue's target: the incremental build at most this share of the full one at 10M
TARGET_RATIO = 0.25
ROOT = Path(__file__).resolve().parent.parent


def _process_age() -> float:
    import psutil

    return time.time() - float(psutil.Process().create_time())


def _child_generate(path: str, recipients: int) -> None:
    from devtools.synthetic import make_raw_warehouse

    started = time.perf_counter()
    make_raw_warehouse(path, recipients=recipients)
    print(json.dumps({"generate_s": round(time.perf_counter() - started, 1)}))


def _child_touch(path: str, round_no: int) -> None:
    """One quick sync's load: a new load id and synced_at on 1% of recipients, replies and events."""
    import duckdb

    load_id = f"{1_800_000_000 + round_no}.5"
    stamp = f"2026-03-02 12:{10 + round_no:02d}:00+00"
    started = time.perf_counter()
    con = duckdb.connect(path)
    try:
        con.execute("begin")
        touched = {}
        # (table, its key, whether its rows carry the sync's synced_at)
        for table, key, stamped in (("campaign_recipients", "id", True), ("replies", "id", True),
                                    ("events", "event_id", False)):  # fmt: skip
            stamp_sql = ", synced_at = $stamp" if stamped else ""
            con.execute(
                f"update outreach.{table} set _dlt_load_id = $load{stamp_sql} "
                f"where hash({key} || $salt) % {round(1 / SHARE)} = 0",
                {"load": load_id, "salt": str(round_no), **({"stamp": stamp} if stamped else {})},
            )
            count = con.execute(f"select count(*) from outreach.{table} where _dlt_load_id = ?", [load_id]).fetchall()
            touched[table] = count[0][0]
        con.execute(
            "insert into outreach._dlt_loads values (?, 'outreach', 0, ?::timestamptz, 'synthetic')", [load_id, stamp]
        )
        con.execute("commit")
    finally:
        con.close()
    print(json.dumps({"touched": touched, "touch_s": round(time.perf_counter() - started, 2)}))


def _child_build(path: str, full_refresh: str) -> None:
    from bench.peak import peak_rss_mb
    from models.build import build

    load_before = os.getloadavg()[0]
    report = build(path, publish=False, full_refresh=full_refresh == "full")
    marts = {m.name: round(m.seconds, 2) for m in report.models if m.kind in ("table", "incremental")}
    print(json.dumps({
        "wall_s": round(_process_age(), 2),
        "dbt_s": round(report.seconds, 2),
        "mart_s": marts,
        "tests_s_summed": round(sum(t.seconds for t in report.tests), 2),
        "peak_rss_mb": peak_rss_mb(),
        "passed": report.passed,
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }))  # fmt: skip


def _run_child(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.models_incremental", *args], capture_output=True, text=True, check=False,
        env={**env, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT),
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"child {' '.join(args)} failed:\n{out.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def run_case(case: str, workdir: Path, env: dict[str, str]) -> dict[str, Any]:
    line: dict[str, Any] = {
        "bench": "models_incremental", "case": case, "recipients": CASES[case], "cpus": os.cpu_count(),
        "changed_share": SHARE, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }  # fmt: skip
    path = workdir / f"w_{case}.duckdb"
    line.update(_run_child(["--child-generate", str(path), str(CASES[case])], env))
    line["warehouse_mb"] = round(path.stat().st_size / 2**20, 1)
    line["first_build"] = _run_child(["--child-build", str(path), "incremental"], env)
    line["touch_full"] = _run_child(["--child-touch", str(path), "1"], env)
    line["full"] = _run_child(["--child-build", str(path), "full"], env)
    line["touch_incremental"] = _run_child(["--child-touch", str(path), "2"], env)
    line["incremental"] = _run_child(["--child-build", str(path), "incremental"], env)
    full, incremental = line["full"], line["incremental"]
    line["ratio_wall"] = round(incremental["wall_s"] / full["wall_s"], 3)
    line["ratio_peak"] = round(incremental["peak_rss_mb"] / full["peak_rss_mb"], 3)
    line["target_ratio"] = TARGET_RATIO
    line["load_avg_1m"] = [*full["load_avg_1m"], *incremental["load_avg_1m"]]
    for leftover in workdir.glob(f"{path.stem}*"):
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    shutil.rmtree(workdir / f".{path.stem}_dbt", ignore_errors=True)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["1m", "10m"])
    parser.add_argument("--workdir", type=Path, help="where the warehouses go (default: a temporary directory)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="models_incremental_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    try:
        for case in args.cases:
            print(json.dumps(run_case(case, workdir, env)), flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-generate":
        _child_generate(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-touch":
        _child_touch(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-build":
        _child_build(sys.argv[2], sys.argv[3])
    else:
        main()
