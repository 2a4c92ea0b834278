"""The full model build against the incremental one on PostgreSQL, after a quick sync that changed about 1% of rows.

What bench/models_incremental.py measures on DuckDB, on the warehouse a work pool shares: the synthetic raw
warehouse (devtools.synthetic, seed 7, 1M recipients by default) is copied into a fresh database of a throwaway
server (devtools.pg_copy, devtools.pgserver: fsync off, 128 MB of shared buffers, autovacuum on as by default);
a first build makes `reporting` and the incremental snapshot (not measured). Then twice a quick sync's load is
simulated as the DuckDB bench does (a new dlt load; 1% of recipients and 1% of replies re-written with its
`synced_at` and load id, 1% of webhook events with its load id: `touch`) and the warehouse is built: first with
`--full-refresh` (every mart from every row: the full build), then incrementally. Builds run in this process
(`models.build.build`, 4 dbt threads as `outreach models` runs them; no BI file on PostgreSQL): `wall_s` is the
build's, `cpu_s` this process's user and system seconds in it (dbt's threads), `server_cpu_s` the PostgreSQL
server's (its backends', from /proc). The 1-minute load average is read before and after each build.

    .venv/bin/python -m bench.models_incremental_pg                        # 1M recipients
    .venv/bin/python -m bench.models_incremental_pg --baseline HEAD~1      # and that revision's dbt project after
    .venv/bin/python -m bench.models_incremental_pg --recipients 100000 --no-save

With `--baseline REV`, the same is done again right after with the dbt project of git revision REV (its `models/`
from git history), on its own copy of the same raw database: a change's before and after in one run. One JSON
line per project (`tree`: the checkout's commit or REV); stored under `models_incremental_pg/<recipients>` in
bench/results.json, before the lines of earlier runs (RESULTS.md is written again), unless `--no-save`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from bench.models_build import ROOT
from bench.models_incremental import SHARE, TOUCHED, touch_load
from devtools.runner_parity import runner_tree

#: `outreach models`' default
THREADS = "4"


def touch(dsn: str, round_no: int) -> dict[str, Any]:
    """One quick sync's load, as bench/models_incremental.py `_child_touch` writes it on DuckDB."""
    import psycopg2

    load_id, stamp = touch_load(round_no)
    started = time.perf_counter()
    touched = {}
    with psycopg2.connect(dsn) as con, con.cursor() as cur:
        for table, key, stamped in TOUCHED:
            stamp_sql = ", synced_at = %(stamp)s" if stamped else ""
            cur.execute(
                f"update outreach.{table} set _dlt_load_id = %(load)s{stamp_sql} "
                f"where mod(abs(hashtext({key} || %(salt)s)::bigint), {round(1 / SHARE)}) = 0",
                {"load": load_id, "stamp": stamp, "salt": str(round_no)},
            )
            touched[table] = cur.rowcount
        cur.execute(
            "insert into outreach._dlt_loads values (%s, 'outreach', 0, %s::timestamptz, 'synthetic')",
            [load_id, stamp],
        )
    return {"touched": touched, "touch_s": round(time.perf_counter() - started, 2)}


def server_cpu_s(postmaster: int) -> float:
    """CPU seconds of the server so far: the postmaster's own and its exited backends' (reaped into its cutime),
    and its live processes'."""
    tick = os.sysconf("SC_CLK_TCK")

    def fields(pid: int) -> list[str]:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()

    while True:
        own = [int(v) for v in fields(postmaster)[11:15]]  # utime, stime, cutime, cstime
        total = sum(own)
        for child in Path(f"/proc/{postmaster}/task/{postmaster}/children").read_text().split():
            try:
                total += sum(int(v) for v in fields(int(child))[11:13])
            except FileNotFoundError:  # reaped meanwhile: its CPU joined the cutime read above, so read again
                continue
        # a backend reaped between the two reads was counted in neither (by a test, under load)
        if [int(v) for v in fields(postmaster)[13:15]] == own[2:]:
            return total / tick


def build_once(dsn_env: str, postmaster: int, project: Path, *, full_refresh: bool) -> dict[str, Any]:
    from models.build import build

    os.environ["DESTINATION__POSTGRES__CREDENTIALS"] = dsn_env
    load_before = os.getloadavg()[0]
    cpu_before = _own_cpu_s()
    server_before = server_cpu_s(postmaster)
    started = time.perf_counter()
    report = build(destination="postgres", project_dir=project, publish=False, full_refresh=full_refresh)
    wall = time.perf_counter() - started
    if not report.passed:
        raise SystemExit(f"the build failed: {report.summary()}")
    marts = {m.name: round(m.seconds, 2) for m in report.models if m.kind in ("table", "incremental")}
    return {
        "wall_s": round(wall, 2),
        "dbt_s": round(report.seconds, 2),
        "cpu_s": round(_own_cpu_s() - cpu_before, 2),
        "server_cpu_s": round(server_cpu_s(postmaster) - server_before, 2),
        "mart_s": marts,
        "tests_s_summed": round(sum(t.seconds for t in report.tests), 2),
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(recipients: int, workdir: Path, projects: dict[str, Path]) -> list[dict[str, Any]]:
    """One line per dbt project (`projects`: its label and models/ folder), each on its own copy of the database."""
    from devtools.pg_copy import copy_raw_tables
    from devtools.pgserver import PostgresServer
    from devtools.synthetic import make_raw_warehouse

    started = time.perf_counter()
    raw = make_raw_warehouse(workdir / "raw.duckdb", recipients=recipients)
    generate_s = round(time.perf_counter() - started, 1)
    lines: list[dict[str, Any]] = []
    server = PostgresServer().start()
    try:
        postmaster = server.pid
        started = time.perf_counter()
        copied = copy_raw_tables(raw, server.create_database("raw"))
        copy_s = round(time.perf_counter() - started, 1)
        for label, project in projects.items():
            line: dict[str, Any] = {
                "bench": "models_incremental_pg", "recipients": recipients, "tree": label, "cpus": os.cpu_count(),
                "changed_share": SHARE, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "threads": int(THREADS), "generate_s": generate_s, "copy_s": copy_s,
                "rows": {t: copied[t] for t in ("campaign_recipients", "replies", "events")},
            }  # fmt: skip
            database = f"build_{len(lines)}"
            server.psql(f"create database {database} template raw")
            dsn, dlt_dsn = server.dsn(database), server.dlt_credentials(database)
            _progress(f"{label}: {recipients:,} recipients in PostgreSQL: first build")
            line["first_build"] = build_once(dlt_dsn, postmaster, project, full_refresh=False)
            line["touch_full"] = touch(dsn, 1)
            _progress(f"{label}: full build")
            line["full"] = build_once(dlt_dsn, postmaster, project, full_refresh=True)
            line["touch_incremental"] = touch(dsn, 2)
            _progress(f"{label}: incremental build")
            line["incremental"] = build_once(dlt_dsn, postmaster, project, full_refresh=False)
            full, incremental = line["full"], line["incremental"]
            for key in ("wall_s", "cpu_s", "server_cpu_s"):
                line[f"ratio_{key.removesuffix('_s')}"] = round(incremental[key] / full[key], 3)
            print(json.dumps(line), flush=True)
            lines.append(line)
    finally:
        server.stop()
    return lines


def _progress(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipients", type=int, default=1_000_000)
    parser.add_argument("--baseline", metavar="REV", help="also build with this git revision's dbt project, after")
    parser.add_argument("--no-save", action="store_true", help="print the lines only")
    args = parser.parse_args()
    os.environ["OUTREACH_DBT_THREADS"] = THREADS
    for key in [k for k in os.environ if k.startswith("SOURCES__OUTREACH__")]:
        del os.environ[key]
    os.environ["SOURCES__OUTREACH__DESTINATION"] = "postgres"
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True, check=True).stdout.strip()  # fmt: skip
    with (
        tempfile.TemporaryDirectory(prefix="models_incremental_pg_") as workdir,
        runner_tree(args.baseline) if args.baseline else nullcontext() as base,
    ):
        projects = {commit: ROOT / "models", **({args.baseline: base / "models"} if base is not None else {})}
        lines = run(args.recipients, Path(workdir), projects)
    if not args.no_save:
        from bench.results import load_results, save_record

        key = f"models_incremental_pg/{args.recipients}"
        stored = load_results().get("other", {}).get(key, {}).get("result", [])  # earlier runs stay, after
        save_record({"name": "models_incremental_pg", "scale": str(args.recipients), "date": lines[0]["date"],
                     "command": " ".join(["python -m bench.models_incremental_pg", *sys.argv[1:]]),
                     "result": [*lines, *stored]}, section="other")  # fmt: skip


if __name__ == "__main__":
    main()
