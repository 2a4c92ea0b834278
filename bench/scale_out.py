"""Scale-out: time, requests and memory of `outreach sync` as the number of workspaces grows.

    python -m bench.scale_out [--n 1 10 50 200] [--workers W] [--batch-size B] [--workdir DIR]

For each N, a sandbox with N `tiny` workspaces (out of process, rate limit off), then with the CLI
(`outreach sync`, keys from ``SOURCES__OUTREACH__API_KEYS`` as a JSON list, the documented way for many
keys): a full sync, then an idle quick sync (nothing changed). Each prints one JSON line: wall time of
the CLI process (interpreter start included), API requests (the sandbox's own counter), requests per
workspace, peak RSS of the CLI process (VmHWM, bench/peak.py) and seconds per workspace. The warehouse
is checked after each: N workspaces, N committed `sync_state` rows, N `ok` run records for the run.

The last line is the summary (``"summary": true``): per-workspace time of an idle quick sync at the
largest N against N=10, peak RSS at the largest N against N=10, requests per workspace, and a
projection of N=1,000 from a straight-line fit of the idle quick sync times (time = fixed + per
workspace x N) on this one machine.

`--baseline-tree DIR` measures a checkout of another version the same way, in the same run, against the
same sandbox (e.g. the one-pipeline-per-workspace engine before batching: ``git worktree add DIR <commit>``):
its lines carry ``"side": "baseline"`` and the summary gives ours/baseline ratios. Its warehouse is only
checked for its workspaces (it has no run records or state table).

`--pool-workers K` measures the PostgreSQL run on a Prefect work pool instead (bench/work_pool.py): a real
`prefect server start`, a `process` pool, `prefect deploy --all` from prefect.yaml, K workers
(`prefect worker start --pool outreach-pool --limit 2`), and per N a fresh PostgreSQL database
(devtools/pgserver.py). A full then an idle quick `sync-all` run each, handed out as `sync-batch/batch`
runs the workers share, models built once at the end: wall time from the run's creation to its end,
requests, the largest flow-run process's peak RSS (and the sum over all of them), seconds per workspace.
Its lines carry ``"side": "pool-postgres"``; the warehouse is checked the same way (N workspaces, N state
rows, N `ok` run records of that mode).

`python -m bench --scenario scale_out` runs it and stores the lines in results.json / RESULTS.md.
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

DEFAULT_NS = (1, 10, 50, 200)
PEAK_MARK = "SCALE_OUT_PEAK_RSS_MB="
PROJECT_N = 1000
SCHEDULE_S = 15 * 60

# The CLI itself (flows.cli's typer app), with its peak RSS printed at exit: VmHWM of this process only.
_CLI = (
    "import atexit, sys\n"
    "from bench.peak import peak_rss_mb\n"
    f"atexit.register(lambda: print('{PEAK_MARK}' + str(peak_rss_mb()), file=sys.stderr, flush=True))\n"
    "from flows.cli import app\n"
    "sys.argv = ['outreach', *sys.argv[1:]]\n"
    "app()\n"
)


def start_sandbox(n: int) -> Any:
    """A sandbox process with `n` tiny workspaces and no rate limit (the sandbox's ``--workspaces N``)."""
    from sandbox.server import SandboxProcess

    return SandboxProcess(scale="tiny", rate_limit=0, workspaces=n).start()


def workspace_keys(sandbox: Any, n: int) -> list[str]:
    """One rw admin key per workspace, the first `n` workspaces."""
    keys: dict[str, str] = {}
    for entry in sandbox.keys():
        if entry["level"] == "rw" and entry["role"] == "admin":
            keys.setdefault(entry["workspace_id"], entry["key"])
    found = list(keys.values())
    if len(found) < n:
        raise RuntimeError(f"the sandbox has {len(found)} workspaces, {n} were asked for")
    return found[:n]


def run_cli(args: Sequence[str], env: dict[str, str], cwd: Path, tree: Path | None = None) -> dict[str, Any]:
    """Run the CLI (of `tree` when given: that checkout's packages first on the path); wall seconds, exit
    code, peak RSS (MB) and the last stderr line."""
    if tree is not None:
        env = {**env, "PYTHONPATH": str(tree) + os.pathsep + str(Path(__file__).resolve().parents[1])}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CLI, *args], env=env, cwd=str(cwd), capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    peak = None
    errors = []
    for line in proc.stderr.splitlines():
        if line.startswith(PEAK_MARK):
            peak = float(line[len(PEAK_MARK) :])
        elif line.strip():
            errors.append(line.strip())
    return {"wall_s": round(wall, 2), "exit": proc.returncode, "peak_rss_mb": peak, "stderr": errors[-1:] or []}


def check_warehouse(db: Path, n: int, baseline: bool = False) -> dict[str, Any]:
    """N workspaces, N committed state rows, N ok records of the newest run (a baseline: N workspaces)."""
    con = duckdb.connect()
    try:
        con.execute(f"attach '{db}' as wh (read_only)")
        con.execute("use wh")
        workspaces = _one(con, "select count(distinct id) from outreach.workspaces")
        if baseline:
            return {"workspaces": workspaces, "ok": workspaces == n}
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
    return {"workspaces": workspaces, "states": states, "ok_records": ok, "ok": workspaces == states == ok == n}


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
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    env.update(
        SOURCES__OUTREACH__API_KEYS=json.dumps(keys),
        SOURCES__OUTREACH__BASE_URL=sandbox.base_url,
        SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0",
        SOURCES__OUTREACH__PIPELINES_DIR=str(home / "pipelines"),
        SOURCES__OUTREACH__SPOOL_DIR=str(home / "no-spool"),
    )
    if workers:
        env["SOURCES__OUTREACH__WORKERS"] = str(workers)
    if batch_size:
        env["SOURCES__OUTREACH__BATCH_SIZE"] = str(batch_size)
    out = []
    for mode in ("full", "quick"):
        sandbox.reset_metrics()
        run = run_cli(["sync", "--mode", mode, "--duckdb", str(db), "--no-progress"], env, home, tree)
        requests = int(sandbox.metrics()["requests"])
        record = {
            "side": "baseline" if tree is not None else "ours",
            "n": n,
            "mode": mode if mode == "full" else "idle_quick",
            "wall_s": run["wall_s"],
            "s_per_workspace": round(run["wall_s"] / n, 3),
            "requests": requests,
            "requests_per_workspace": round(requests / n, 2),
            "peak_rss_mb": run["peak_rss_mb"],
            "exit": run["exit"],
        }
        if run["exit"] != 0:
            record["error"] = run["stderr"]
        else:
            record["warehouse"] = check_warehouse(db, n, baseline=tree is not None)
        print(json.dumps(record), flush=True)
        out.append(record)
    return out


def measure_pool(n: int, workdir: Path, pool: Any, pg: Any, k: int) -> list[dict[str, Any]]:
    """Full then idle quick `sync-all` of `n` workspaces on the work pool's `k` workers into PostgreSQL."""
    from bench.work_pool import worker_settings

    sandbox = start_sandbox(n)
    home = workdir / f"pool-n{n}"
    home.mkdir(parents=True, exist_ok=True)
    dsn = pg.create_database(f"scale_out_n{n}")
    credentials = dsn.replace("postgresql://postgres@", "postgresql://postgres:unused@", 1)  # dlt wants a password
    out = []
    try:
        pool.start_workers(k, worker_settings(sandbox.base_url, workspace_keys(sandbox, n), credentials, home), home)
        for mode in ("full", "quick"):
            sandbox.reset_metrics()
            run = pool.sync(mode)
            requests = int(sandbox.metrics()["requests"])
            ok = run["state"] == "Completed"
            record = {
                "side": "pool-postgres",
                "workers": k,
                "n": n,
                "mode": mode if mode == "full" else "idle_quick",
                "wall_s": run["wall_s"],
                "s_per_workspace": round(run["wall_s"] / n, 3),
                "requests": requests,
                "requests_per_workspace": round(requests / n, 2),
                "peak_rss_mb": run["peak_rss_mb"],
                "peak_rss_total_mb": run["peak_rss_total_mb"],
                "batch_runs": run["batch_runs"],
                "exit": 0 if ok else 1,
            }
            if ok:
                record["warehouse"] = check_pg_warehouse(dsn, n, mode)
            else:
                record["error"] = run["message"]
            print(json.dumps(record), flush=True)
            out.append(record)
    finally:
        pool.stop_workers()
        sandbox.stop()
    return out


def check_pg_warehouse(dsn: str, n: int, mode: str) -> dict[str, Any]:
    """N workspaces, N state rows, N `ok` run records of `mode` (one sync of each mode per database)."""
    import psycopg2

    con = psycopg2.connect(dsn)
    try:
        with con.cursor() as cur:

            def one(sql: str, *params: Any) -> int:
                cur.execute(sql, params or None)
                row = cur.fetchone()
                return int(row[0]) if row else 0

            workspaces = one("select count(distinct id) from outreach.workspaces")
            states = one("select count(*) from outreach.sync_state")
            ok = one("select count(*) from outreach.sync_runs where outcome = 'ok' and mode = %s", mode)
            once = one("select count(distinct workspace_id) from outreach.sync_runs where mode = %s", mode)
            models = one("select count(*) from reporting.workspace_overview")
    finally:
        con.close()
    return {
        "workspaces": workspaces,
        "states": states,
        "ok_records": ok,
        "models_workspaces": models,
        "ok": workspaces == states == ok == once == models == n,
    }


def summarise_pool(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The work pool's figures: seconds per workspace by N, and the N=1,000 projection on its k workers."""
    pool = [r for r in records if r.get("side") == "pool-postgres" and r["exit"] == 0]
    if not pool:
        return {}
    idle = {r["n"]: r for r in pool if r["mode"] == "idle_quick"}
    full = {r["n"]: r for r in pool if r["mode"] == "full"}
    out: dict[str, Any] = {
        "pool_workers": pool[0]["workers"],
        "pool_idle_s_per_workspace": {n: idle[n]["s_per_workspace"] for n in sorted(idle)},
        "pool_full_s_per_workspace": {n: full[n]["s_per_workspace"] for n in sorted(full)},
        "pool_idle_requests_per_workspace": {n: idle[n]["requests_per_workspace"] for n in sorted(idle)},
        "pool_peak_rss_mb": {n: max(idle[n]["peak_rss_mb"], full.get(n, idle[n])["peak_rss_mb"]) for n in sorted(idle)},
        "pool_warehouse_ok": all(r.get("warehouse", {}).get("ok") for r in pool),
    }
    for name, series in (("idle", idle), ("full", full)):
        top = max(series)
        # linear in N from the largest N's time per workspace: its fixed cost is charged again per workspace,
        # so this bounds the fit from above (a loaded machine's noise can make the fit meaningless)
        out[f"pool_{name}_bound_s_at_1000"] = round(series[top]["s_per_workspace"] * PROJECT_N, 1)
        ns = [n for n in sorted(series) if n > 1] or sorted(series)
        if len(ns) >= 2:
            fixed, per_ws = _fit(ns, [series[n]["wall_s"] for n in ns])
            projected = fixed + per_ws * PROJECT_N
            out[f"pool_{name}_fit"] = {"fixed_s": round(fixed, 2), "per_workspace_s": round(per_ws, 4)}
            out[f"pool_projected_{name}_s_at_1000"] = round(projected, 1)
            out[f"pool_projected_{name}_fits_15_min_schedule"] = projected < SCHEDULE_S
    return out


def summarise(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Ratios against N=10 (or the smallest N above 1) and the N=1,000 projection."""
    ours = [r for r in records if r.get("side", "ours") == "ours"]
    if not ours:
        return {"summary": True, **summarise_pool(records)}
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
        idle_requests_per_workspace={n: idle[n]["requests_per_workspace"] for n in ns},
        full_s_per_workspace={n: full[n]["s_per_workspace"] for n in sorted(full)},
        peak_rss_mb={n: idle[n]["peak_rss_mb"] for n in ns},
        full_peak_rss_mb={n: full[n]["peak_rss_mb"] for n in sorted(full)},
        idle_s_per_workspace_top_vs_base=round(idle[top]["s_per_workspace"] / idle[base]["s_per_workspace"], 2),
        peak_rss_top_vs_base=_ratio(
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
                n: _ratio(idle[n]["wall_s"], base_idle[n]["wall_s"]) for n in sorted(base_idle) if n in idle
            },
            "full_wall_ours_vs_baseline": {
                n: _ratio(full[n]["wall_s"], base_full[n]["wall_s"]) for n in sorted(base_full) if n in full
            },
        }
    fit_ns = [n for n in ns if n > 1] or ns
    if len(fit_ns) >= 2:
        fixed, per_ws = _fit(fit_ns, [idle[n]["wall_s"] for n in fit_ns])
        projected = fixed + per_ws * PROJECT_N
        summary.update(
            idle_fit={"fixed_s": round(fixed, 2), "per_workspace_s": round(per_ws, 4)},
            projected_idle_quick_s_at_1000=round(projected, 1),
            projected_fits_15_min_schedule=projected < SCHEDULE_S,
        )
    return summary


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 2) if b else None


def _fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares y = a + b x."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return my - b * mx, b


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.scale_out", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=list(DEFAULT_NS), help="workspace counts")
    parser.add_argument("--workers", type=int, default=None, help="SOURCES__OUTREACH__WORKERS (default: its config)")
    parser.add_argument("--batch-size", type=int, default=None, help="SOURCES__OUTREACH__BATCH_SIZE")
    parser.add_argument("--workdir", type=Path, default=None, help="keep warehouses here (default: a temp dir)")
    parser.add_argument("--baseline-tree", type=Path, default=None, help="a checkout of another version, measured too")
    parser.add_argument("--pool-workers", type=int, default=0, help="the PostgreSQL run on a work pool of K workers")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="scale_out-"))
    records: list[dict[str, Any]] = []
    if args.pool_workers:
        return main_pool(args.n, workdir, args.pool_workers)
    for n in args.n:
        records += measure(
            n, workdir, workers=args.workers, batch_size=args.batch_size, baseline_tree=args.baseline_tree
        )
    summary = summarise(records)
    print(json.dumps(summary), flush=True)
    failed = [r for r in records if r["exit"] != 0 or not r.get("warehouse", {}).get("ok")]
    return 1 if failed else 0


def main_pool(ns: Sequence[int], workdir: Path, k: int) -> int:
    from bench.work_pool import work_pool
    from devtools.pgserver import PostgresServer

    records: list[dict[str, Any]] = []
    pg = PostgresServer().start()
    try:
        with work_pool(workdir) as pool:
            for n in ns:
                records += measure_pool(n, workdir, pool, pg, k)
    finally:
        pg.stop()
    print(json.dumps(summarise(records)), flush=True)
    failed = [r for r in records if r["exit"] != 0 or not r.get("warehouse", {}).get("ok")]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
