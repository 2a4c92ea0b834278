"""A PostgreSQL build right after a load, with and without the planner statistics the build gathers.

    python -m bench.pg_statistics --baseline <revision before the statistics> [--n 200] [--rounds 3]

A sandbox of N `tiny` workspaces (rate limit off) is synced in full, by the CLI, into a fresh PostgreSQL
database (devtools/pgserver.py) whose server runs without autovacuum: the state a build finds when it
follows a load at once, before autovacuum's next pass has gathered any statistics. Then, `--rounds` times,
alternating, the models are built (`models.build.build`, in this process, 4 dbt threads) on a fresh copy of
that database (`create database ... template`) with this checkout's dbt project and with the baseline
revision's (its `models/` from git history, devtools.runner_parity.runner_tree): the same Python, only the
project differs. One JSON line per build (wall seconds of the whole build, seconds of `dbt build`, the
slowest model), then a summary: the medians and the ratio this checkout / baseline. Progress lines go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import ROOT, with_checkout_on_path
from bench.scale_out_support import progress, start_sandbox, sync_env, workspace_keys
from devtools.runner_parity import runner_tree

THREADS = "4"  # `outreach models`' default


def sync_into(credentials: str, sandbox: Any, n: int, home: Path) -> None:
    """A full sync of the sandbox's first `n` workspaces into PostgreSQL (dlt's `credentials`), by the command line."""
    env = {
        **sync_env(workspace_keys(sandbox, n), sandbox.base_url, home),
        "DESTINATION__POSTGRES__CREDENTIALS": credentials,
    }
    outreach = str(Path(sys.executable).parent / "outreach")
    subprocess.run(
        [outreach, "sync", "--mode", "full", "--destination", "postgres", "--no-progress"],
        env=with_checkout_on_path(env), cwd=home, check=True, capture_output=True,
    )  # fmt: skip


def build_once(credentials: str, project: Path) -> dict[str, Any]:
    from models.build import build

    os.environ["DESTINATION__POSTGRES__CREDENTIALS"] = credentials
    started = time.perf_counter()
    report = build(destination="postgres", project_dir=project, publish=False)
    wall = time.perf_counter() - started
    if not report.passed:
        raise RuntimeError(f"the build on {project} failed: {report.summary()}")
    slowest = max(report.models, key=lambda m: m.seconds)
    return {
        "wall_s": round(wall, 2),
        "dbt_build_s": round(report.seconds, 2),
        "slowest_model": slowest.name,
        "slowest_model_s": round(slowest.seconds, 2),
    }


def measure(n: int, rounds: int, projects: dict[str, Path]) -> list[dict[str, Any]]:
    """Sync `n` workspaces once, then build each of `projects` `rounds` times, alternating; one record per build."""
    from devtools.pgserver import PostgresServer

    records: list[dict[str, Any]] = []
    sandbox = start_sandbox(n)
    pg = PostgresServer().start()
    try:
        pg.psql("alter system set autovacuum = off")
        pg.psql("select pg_reload_conf()")
        pg.create_database("synced")
        with tempfile.TemporaryDirectory(prefix="pg_statistics_") as home:
            progress(f"N={n}: full sync into PostgreSQL")
            sync_into(pg.dlt_credentials("synced"), sandbox, n, Path(home))
        for round_ in range(rounds):
            for side, project in projects.items():
                name = f"build_{round_}_{side}"
                pg.psql(f"create database {name} template synced")
                record = {"side": side, "n": n, "round": round_, **build_once(pg.dlt_credentials(name), project)}
                print(json.dumps(record), flush=True)
                progress(f"{side}: build {record['wall_s']} s (dbt build {record['dbt_build_s']} s)")
                records.append(record)
    finally:
        pg.stop()
        sandbox.stop()
    return records


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pg_statistics", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", metavar="REV", required=True, help="a git revision without the statistics")
    parser.add_argument("--n", type=int, default=200, help="tiny workspaces synced (default 200)")
    parser.add_argument("--rounds", type=int, default=3, help="builds of each side, alternating (default 3)")
    args = parser.parse_args(argv)
    os.environ["OUTREACH_DBT_THREADS"] = THREADS
    with runner_tree(args.baseline) as base:
        projects = {"ours": ROOT / "models", "baseline": base / "models"}
        records = measure(args.n, args.rounds, projects)
    summary: dict[str, Any] = {"summary": True, "n": args.n, "rounds": args.rounds, "baseline": args.baseline}
    for key in ("wall_s", "dbt_build_s"):
        medians = {s: statistics.median(r[key] for r in records if r["side"] == s) for s in projects}
        summary[f"median_{key}"] = medians
        summary[f"{key}_ours_vs_baseline"] = round(medians["ours"] / medians["baseline"], 2)
    print(json.dumps(summary), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
