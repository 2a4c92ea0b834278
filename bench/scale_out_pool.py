"""The work-pool side of bench/scale_out.py (``--pool-workers K``): N tiny workspaces synced by a real
Prefect work pool of K workers into PostgreSQL (bench/work_pool.py), a full then an idle quick ``sync-all``
run per N, each checked in the warehouse; the summary's ratios against N = 10 and the targets.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.scale_out_support import (
    PROJECT_N,
    SCHEDULE_S,
    fit,
    load_avg,
    progress,
    ratio,
    start_sandbox,
    targets,
    workspace_keys,
)


def measure_pool(n: int, workdir: Path, pool: Any, pg: Any, k: int) -> list[dict[str, Any]]:
    """Full then idle quick `sync-all` of `n` workspaces on the work pool's `k` workers into PostgreSQL."""
    from bench.work_pool import worker_settings

    sandbox = start_sandbox(n)
    home = workdir / f"pool-n{n}"
    home.mkdir(parents=True, exist_ok=True)
    dsn = pg.create_database(f"scale_out_n{n}")
    credentials = pg.dlt_credentials(f"scale_out_n{n}")
    out = []
    try:
        pool.start_workers(k, worker_settings(sandbox.base_url, workspace_keys(sandbox, n), credentials, home), home)
        for mode in ("full", "quick"):
            progress(f"N={n}: sync-all/{mode} on {k} workers")
            sandbox.reset_metrics()
            load_before = load_avg()
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
                "load_avg_1m": [load_before, load_avg()],
                "exit": 0 if ok else 1,
            }
            if ok:
                record["warehouse"] = check_pg_warehouse(dsn, n, mode)
            else:
                record["error"] = run["message"]
            print(json.dumps(record), flush=True)
            progress(f"N={n}: pool {record['mode']} {record['wall_s']} s, {requests} requests")
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
    ns = sorted(idle)
    base, top = (10 if 10 in idle else ns[0]), ns[-1]
    rss = out["pool_peak_rss_mb"]
    out.update(
        pool_base_n=base,
        pool_top_n=top,
        pool_idle_s_per_workspace_top_vs_base=ratio(idle[top]["s_per_workspace"], idle[base]["s_per_workspace"]),
        pool_peak_rss_top_vs_base=ratio(rss[top], rss[base]),
        pool_targets=targets(idle[top]["s_per_workspace"], ratio(rss[top], rss[base])) if top >= PROJECT_N else None,
    )
    for name, series in (("idle", idle), ("full", full)):
        top = max(series)
        # linear in N from the largest N's time per workspace: its fixed cost is charged again per workspace,
        # so this bounds the fit from above (a loaded machine's noise can make the fit meaningless)
        out[f"pool_{name}_bound_s_at_1000"] = round(series[top]["s_per_workspace"] * PROJECT_N, 1)
        ns = [n for n in sorted(series) if n > 1] or sorted(series)
        if len(ns) >= 2:
            fixed, per_ws = fit(ns, [series[n]["wall_s"] for n in ns])
            projected = fixed + per_ws * PROJECT_N
            out[f"pool_{name}_fit"] = {"fixed_s": round(fixed, 2), "per_workspace_s": round(per_ws, 4)}
            out[f"pool_projected_{name}_s_at_1000"] = round(projected, 1)
            out[f"pool_projected_{name}_fits_15_min_schedule"] = projected < SCHEDULE_S
    return out


def main_pool(ns: Sequence[int], workdir: Path, k: int) -> int:
    """Every N on one Prefect server and PostgreSQL server; the lines, then the summary; 1 when one failed."""
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
    print(json.dumps({"summary": True, **summarise_pool(records)}), flush=True)
    failed = [r for r in records if r["exit"] != 0 or not r.get("warehouse", {}).get("ok")]
    return 1 if failed else 0
