"""Scale-out: time, requests and memory of `outreach sync` as the number of workspaces grows.

    python -m bench.scale_out [--n 1,10,50,200] [--workers W] [--batch-size B] [--workdir DIR]
    python -m bench.scale_out --n 10,1000              # N = 1,000 measured, N = 10 the baseline of the ratios
    python -m bench.scale_out --n 10,1000 --pool-workers 2

For each N, a sandbox with N `tiny` workspaces (out of process, rate limit off), then with the CLI
(`outreach sync`, keys from ``SOURCES__OUTREACH__API_KEYS`` as a JSON list, the documented way for many
keys): a full sync, then an idle quick sync (nothing changed). Each prints one JSON line: wall time of
the CLI process (interpreter start included), API requests (the sandbox's own counter), requests per
workspace, peak RSS of the CLI process (VmHWM, bench/peak.py), seconds per workspace, and the machine's
1-minute load average before and after (it is shared). The warehouse is checked after each: N workspaces,
N committed `sync_state` rows, N `ok` run records for the run. Progress lines go to stderr.

The last line is the summary (``"summary": true``): per-workspace time of an idle quick sync at the
largest N against N=10, peak RSS at the largest N against N=10, requests per workspace, a straight-line
fit of the idle quick sync times (time = fixed + per workspace x N) and, when the largest N is below
1,000, the projection of N=1,000 from it; at N >= 1,000, the targets (idle quick at most 0.05 s per
workspace, peak RSS at most 1.5x that at N=10) against the measured figures.

`--baseline-tree DIR` measures a checkout of another version the same way, in the same run, against the
same sandbox (e.g. the one-pipeline-per-workspace engine before batching: ``git worktree add DIR <commit>``):
its lines carry ``"side": "baseline"`` and the summary gives ours/baseline ratios. Its warehouse is only
checked for its workspaces (it has no run records or state table).

`--pool-workers K` measures the PostgreSQL run on a Prefect work pool instead (bench/scale_out_pool.py,
bench/work_pool.py): a real
`prefect server start`, a `process` pool, `prefect deploy --all` from prefect.yaml, K workers
(`prefect worker start --pool outreach-pool --limit 2`), and per N a fresh PostgreSQL database
(devtools/pgserver.py). A full then an idle quick `sync-all` run each, handed out as `sync-batch/batch`
runs the workers share, models built once at the end: wall time from the run's creation to its end,
requests, the largest flow-run process's peak RSS (and the sum over all of them), seconds per workspace.
Its lines carry ``"side": "pool-postgres"``; the warehouse is checked the same way (N workspaces, N state
rows, N `ok` run records of that mode).

`python -m bench --scenario scale_out` runs it (N = 1, 10, 50, 200) and stores the lines in results.json /
RESULTS.md; `--scenario scale_out_1000` runs ``--n 10,1000`` (bench/scale_out_1000.py) and stores them apart.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from bench import with_checkout_on_path
from bench.peak import children_cpu_s, cli_with_peak, split_peak
from bench.scale_out_support import (
    PROJECT_N,
    SCHEDULE_S,
    fit,
    load_avg,
    progress,
    ratio,
    start_sandbox,
    sync_env,
    targets,
    workspace_keys,
)

DEFAULT_NS = (1, 10, 50, 200)
PEAK_MARK = "SCALE_OUT_PEAK_RSS_MB="

_CLI = cli_with_peak(PEAK_MARK)  # `outreach` in a child process, its peak RSS printed at exit


def parse_ns(text: str) -> list[int]:
    """``--n 10,1000`` (or ``--n 10 1000``): workspace counts, each at least 1."""
    try:
        ns = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"workspace counts are whole numbers, e.g. 10,1000; got {text!r}") from None
    if not ns or min(ns) < 1:
        raise argparse.ArgumentTypeError(f"workspace counts are at least 1; got {text!r}")
    return ns


def run_cli(args: Sequence[str], env: dict[str, str], cwd: Path, tree: Path | None = None) -> dict[str, Any]:
    """Run the CLI (of `tree` when given: that checkout's packages first on the path); wall seconds, exit
    code, peak RSS (MB) and the last stderr line."""
    env = with_checkout_on_path(env)  # the child imports bench.peak
    if tree is not None:
        env = {**env, "PYTHONPATH": str(tree) + os.pathsep + env["PYTHONPATH"]}
    started = time.perf_counter()
    # the CLI's own CPU time (the sandbox is a child too, but not waited for until the end)
    cpu_before = sum(children_cpu_s())
    proc = subprocess.run(
        [sys.executable, "-c", _CLI, *args], env=env, cwd=str(cwd), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    cpu = sum(children_cpu_s()) - cpu_before
    peak, errors = split_peak(proc.stderr, PEAK_MARK)
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "exit": proc.returncode,
        "peak_rss_mb": peak,
        "stderr": errors[-1:] or [],
    }


def check_warehouse(db: Path, n: int, baseline: bool = False) -> dict[str, Any]:
    """N workspaces, N committed state rows, N ok records of the newest run (a baseline: N workspaces); and
    the file's size and its tables (dlt's staging schemas among them, if a sync leaves them)."""
    files = [db, db.with_name(db.name + ".wal")]
    size = {"file_mb": round(sum(f.stat().st_size for f in files if f.exists()) / 2**20, 1)}
    con = duckdb.connect()
    try:
        con.execute(f"attach '{db}' as wh (read_only)")
        con.execute("use wh")
        size["tables"] = _one(con, "select count(*) from duckdb_tables() where database_name = 'wh'")
        workspaces = _one(con, "select count(distinct id) from outreach.workspaces")
        if baseline:
            return {"workspaces": workspaces, "ok": workspaces == n, **size}
        states = _one(
            con,
            "select count(*) from outreach.sync_state s join outreach._dlt_loads l "
            "on l.load_id = s._dlt_load_id and l.status = 0",
        )
        ok = _one(
            con,
            "select count(*) from outreach.sync_runs where outcome = 'ok' "
            "and run_id = (select max(run_id) from outreach.sync_runs)",
        )
    finally:
        con.close()
    ok_all = workspaces == states == ok == n
    return {"workspaces": workspaces, "states": states, "ok_records": ok, "ok": ok_all, **size}


def _one(con: Any, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def measure(
    n: int,
    workdir: Path,
    *,
    workers: int | None,
    batch_size: int | None,
    sandbox_for: Callable[[int], Any] | None = None,
    baseline_tree: Path | None = None,
) -> list[dict[str, Any]]:
    """Full then idle quick sync of `n` workspaces; one record each (and the baseline's, if asked)."""
    sandbox = (sandbox_for or start_sandbox)(n)
    try:
        out = _measure_side(sandbox, n, workdir / f"n{n}", workers=workers, batch_size=batch_size)
        if baseline_tree is not None:  # same sandbox: its data is what ours synced
            out += _measure_side(
                sandbox, n, workdir / f"n{n}-baseline", workers=None, batch_size=None, tree=baseline_tree
            )
        return out
    finally:
        sandbox.stop()


def _measure_side(
    sandbox: Any, n: int, home: Path, *, workers: int | None, batch_size: int | None, tree: Path | None = None
) -> list[dict[str, Any]]:
    keys = workspace_keys(sandbox, n)
    home.mkdir(parents=True, exist_ok=True)
    db = home / "outreach.duckdb"
    env = sync_env(keys, sandbox.base_url, home)
    if workers:
        env["SOURCES__OUTREACH__WORKERS"] = str(workers)
    if batch_size:
        env["SOURCES__OUTREACH__BATCH_SIZE"] = str(batch_size)
    out = []
    for mode in ("full", "quick"):
        progress(f"N={n}: outreach sync --mode {mode}" + (f" ({tree})" if tree is not None else ""))
        sandbox.reset_metrics()
        load_before = load_avg()
        run = run_cli(["sync", "--mode", mode, "--duckdb", str(db), "--no-progress"], env, home, tree)
        requests = int(sandbox.metrics()["requests"])
        record = {
            "side": "baseline" if tree is not None else "ours",
            "n": n,
            "mode": mode if mode == "full" else "idle_quick",
            "wall_s": run["wall_s"],
            "s_per_workspace": round(run["wall_s"] / n, 3),
            "cpu_s": run["cpu_s"],
            "cpu_s_per_workspace": round(run["cpu_s"] / n, 4),
            "requests": requests,
            "requests_per_workspace": round(requests / n, 2),
            "peak_rss_mb": run["peak_rss_mb"],
            "load_avg_1m": [load_before, load_avg()],
            "exit": run["exit"],
        }
        if run["exit"] != 0:
            record["error"] = run["stderr"]
        else:
            record["warehouse"] = check_warehouse(db, n, baseline=tree is not None)
        print(json.dumps(record), flush=True)
        progress(f"N={n}: {record['mode']} {record['wall_s']} s, {requests} requests, peak {record['peak_rss_mb']} MB")
        out.append(record)
    return out


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Ratios against N=10 (or the smallest N above 1) and the N=1,000 projection."""
    ours = [r for r in records if r.get("side", "ours") == "ours"]
    if not ours:
        return {"summary": True, "ok": False}
    idle = {r["n"]: r for r in ours if r["mode"] == "idle_quick" and r["exit"] == 0}
    full = {r["n"]: r for r in ours if r["mode"] == "full" and r["exit"] == 0}
    base_idle = {
        r["n"]: r for r in records if r.get("side") == "baseline" and r["mode"] == "idle_quick" and r["exit"] == 0
    }
    base_full = {r["n"]: r for r in records if r.get("side") == "baseline" and r["mode"] == "full" and r["exit"] == 0}
    ns = sorted(idle)
    summary: dict[str, Any] = {"summary": True}
    if not ns:
        return {**summary, "ok": False}
    base = 10 if 10 in idle else ns[0]
    top = ns[-1]
    summary.update(
        base_n=base,
        top_n=top,
        idle_s_per_workspace={n: idle[n]["s_per_workspace"] for n in ns},
        idle_cpu_s_per_workspace={n: idle[n].get("cpu_s_per_workspace") for n in ns},
        idle_requests_per_workspace={n: idle[n]["requests_per_workspace"] for n in ns},
        full_s_per_workspace={n: full[n]["s_per_workspace"] for n in sorted(full)},
        peak_rss_mb={n: idle[n]["peak_rss_mb"] for n in ns},
        full_peak_rss_mb={n: full[n]["peak_rss_mb"] for n in sorted(full)},
        idle_s_per_workspace_top_vs_base=round(idle[top]["s_per_workspace"] / idle[base]["s_per_workspace"], 2),
        peak_rss_top_vs_base=ratio(
            max(idle[top]["peak_rss_mb"] or 0, (full.get(top) or {}).get("peak_rss_mb") or 0),
            max(idle[base]["peak_rss_mb"] or 0, (full.get(base) or {}).get("peak_rss_mb") or 0),
        ),
        warehouse_ok=all(r.get("warehouse", {}).get("ok") for r in records if r["exit"] == 0),
    )
    if base_idle:
        summary["baseline"] = {
            "idle_s_per_workspace": {n: base_idle[n]["s_per_workspace"] for n in sorted(base_idle)},
            "full_s_per_workspace": {n: base_full[n]["s_per_workspace"] for n in sorted(base_full)},
            "peak_rss_mb": {
                n: max(base_idle[n]["peak_rss_mb"] or 0, (base_full.get(n) or {}).get("peak_rss_mb") or 0)
                for n in sorted(base_idle)
            },
            "idle_wall_ours_vs_baseline": {
                n: ratio(idle[n]["wall_s"], base_idle[n]["wall_s"]) for n in sorted(base_idle) if n in idle
            },
            "full_wall_ours_vs_baseline": {
                n: ratio(full[n]["wall_s"], base_full[n]["wall_s"]) for n in sorted(base_full) if n in full
            },
        }
    if top >= PROJECT_N:  # measured, not projected
        summary.update(
            targets=targets(idle[top]["s_per_workspace"], summary["peak_rss_top_vs_base"]),
            idle_quick_s_at_top=idle[top]["wall_s"],
            idle_fits_15_min_schedule=idle[top]["wall_s"] < SCHEDULE_S,
        )
    fit_ns = [n for n in ns if n > 1] or ns
    if len(fit_ns) >= 2:
        fixed, per_ws = fit(fit_ns, [idle[n]["wall_s"] for n in fit_ns])
        summary["idle_fit"] = {"fixed_s": round(fixed, 2), "per_workspace_s": round(per_ws, 4)}
        if top < PROJECT_N:
            projected = fixed + per_ws * PROJECT_N
            summary.update(
                projected_idle_quick_s_at_1000=round(projected, 1),
                projected_fits_15_min_schedule=projected < SCHEDULE_S,
            )
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--n",
        type=parse_ns,
        nargs="+",
        default=[list(DEFAULT_NS)],
        help="workspace counts, e.g. --n 10,1000 or --n 10 1000 (default: 1 10 50 200)",
    )
    parser.add_argument("--workers", type=int, default=None, help="SOURCES__OUTREACH__WORKERS (default: its config)")
    parser.add_argument("--batch-size", type=int, default=None, help="SOURCES__OUTREACH__BATCH_SIZE")
    parser.add_argument("--workdir", type=Path, default=None, help="keep warehouses here (default: a temp dir)")
    parser.add_argument("--baseline-tree", type=Path, default=None, help="a checkout of another version, measured too")
    parser.add_argument("--pool-workers", type=int, default=0, help="the PostgreSQL run on a work pool of K workers")
    args = parser.parse_args(argv)
    ns = sorted({n for group in args.n for n in group})
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="scale_out-"))
    records: list[dict[str, Any]] = []
    if args.pool_workers:
        from bench.scale_out_pool import main_pool

        return main_pool(ns, workdir, args.pool_workers)
    for n in ns:
        records += measure(
            n, workdir, workers=args.workers, batch_size=args.batch_size, baseline_tree=args.baseline_tree
        )
    summary = summarise(records)
    print(json.dumps(summary), flush=True)
    failed = [r for r in records if r["exit"] != 0 or not r.get("warehouse", {}).get("ok")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
