"""The full model build against the incremental one after a quick sync that changed about 1% of the rows.

Per case (1M and 10M synthetic recipients, devtools.synthetic; and 1,000, whose builds are mostly
fixed cost): a first build creates `reporting` and the
incremental snapshot (not measured: it parses the project from scratch). Then, twice, a quick sync's load is
simulated (`touch`: a new dlt load, 1% of recipients and 1% of replies re-written with that sync's
`synced_at` and load id, 1% of webhook events with its load id) and the warehouse is built: first with
`--full-refresh` (every mart from every row: the full build), then incrementally (only the keys the change
touched). Both builds see the same size of change on the same warehouse, with dbt's partial parsing
(what every scheduled run does). Each of the two is followed by the BI file's publish (`publish_s`, a process of
its own): after the full build from nothing (no BI file yet), after the incremental one from the previous file.
Each build runs in its own child process: `wall_s` counts Python's and
dbt's start-up, `cpu_s` its user and system seconds (every thread's, start-up included), `peak_rss_mb` its peak (VmHWM,
`bench.peak`). The 1-minute load average is read before and after each build: the machine is shared. Each
touch also counts the keys it touched (`touched_keys`: campaigns, email domains, leads; [touched, all]), the
keys a rebuild keyed on them would recompute. One JSON line per case.

The re-written rows keep their values: the data tests tie recipients' statuses to the service's totals,
and an incremental build recomputes a touched key whatever changed in it.

    .venv/bin/python -m bench.models_incremental                 # every case
    .venv/bin/python -m bench.models_incremental --cases 1m
    .venv/bin/python -m bench.models_incremental --baseline HEAD~1

With `--baseline REV`, each case runs again right after with the dbt project of git revision REV (its `models/`
from git history, as bench/models_build.py takes it), on the same-seed warehouse: a change's before and after in
one run. Lines carry `tree`: `this` or REV. The run's lines go before the stored ones in bench/results.json, `this`
named by the checkout's commit, and RESULTS.md is written again (`--no-save`: print them only).
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
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from bench.models_build import ROOT, child_generate, child_publish, process_age, run_child
from bench.peak import children_cpu_s, peak_rss_mb
from devtools.runner_parity import runner_tree

#: "1k" is the floor: a build's start-up and dbt's cost per model and test, with almost no rows to read
CASES = {"1k": 1_000, "1m": 1_000_000, "10m": 10_000_000}
SHARE = 0.01
#: the target: the incremental build at most this share of the full one at 10M
TARGET_RATIO = 0.25


def _run_child(args: list[str], env: dict[str, str], tree: Path = ROOT) -> dict[str, Any]:
    return run_child(args, env, first=tree, module="bench.models_incremental")


def _build(path: Path, mode: str, env: dict[str, str], tree: Path) -> dict[str, Any]:
    """One build in its own process (`_child_build`) and its CPU seconds, start-up included, as its parent counts
    them (every thread's: dbt's and DuckDB's)."""
    before = sum(children_cpu_s())
    result = _run_child(["--child-build", str(path), mode], env, tree)
    result["cpu_s"] = round(sum(children_cpu_s()) - before, 2)
    return result


#: what a simulated quick sync re-writes: (raw table, its key, whether its rows carry the sync's synced_at)
TOUCHED = (("campaign_recipients", "id", True), ("replies", "id", True), ("events", "event_id", False))


def touch_load(round_no: int) -> tuple[str, str]:
    """The load id and synced_at of round `round_no`'s simulated quick sync."""
    return f"{1_800_000_000 + round_no}.5", f"2026-03-02 12:{10 + round_no:02d}:00+00"


def _child_touch(path: str, round_no: int) -> None:
    """One quick sync's load: a new load id and synced_at on 1% of recipients, replies and events."""
    import duckdb

    load_id, stamp = touch_load(round_no)
    started = time.perf_counter()
    con = duckdb.connect(path)
    try:
        con.execute("begin")
        touched = {}
        for table, key, stamped in TOUCHED:
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
        touch_s = round(time.perf_counter() - started, 2)
        keys = _touched_keys(con, load_id)
    finally:
        con.close()
    print(json.dumps({"touched": touched, "touched_keys": keys, "touch_s": touch_s}))


def _touched_keys(con: Any, load_id: str) -> dict[str, list[int]]:
    """[touched, all] of the keys the marts group recipients by: a keyed rebuild recomputes the touched ones.
    Domains and leads from the raw address, lower-cased (staging also trims spaces, which these have none of)."""
    kinds = {"campaigns": "campaign_id", "email_domains": "split_part(lower(email), '@', 2)",
             "leads": "(workspace_id, lower(email))"}  # fmt: skip
    counts = ", ".join(
        f"count(distinct {key}) filter (where _dlt_load_id = $load), count(distinct {key})" for key in kinds.values()
    )
    row = con.execute(
        f"select {counts} from outreach.campaign_recipients where deleted_at is null", {"load": load_id}
    ).fetchone()
    return {kind: [row[2 * i], row[2 * i + 1]] for i, kind in enumerate(kinds)}


def _child_build(path: str, full_refresh: str) -> None:
    from models.build import build

    load_before = os.getloadavg()[0]
    report = build(path, publish=False, full_refresh=full_refresh == "full")
    marts = {m.name: round(m.seconds, 2) for m in report.models if m.kind in ("table", "incremental")}
    print(json.dumps({
        "wall_s": round(process_age(), 2),
        "dbt_s": round(report.seconds, 2),
        "mart_s": marts,
        "tests_s_summed": round(sum(t.seconds for t in report.tests), 2),
        "peak_rss_mb": peak_rss_mb(),
        "passed": report.passed,
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }))  # fmt: skip


def _child_reset(path: str) -> None:
    """A warehouse generated by an interrupted run, as generated: no reporting schema, no snapshot."""
    import duckdb

    con = duckdb.connect(path)
    try:
        for schema in ("reporting", "reporting_inputs"):
            con.execute(f"drop schema if exists {schema} cascade")
    finally:
        con.close()
    print(json.dumps({"reused": True}))


def run_case(
    case: str, workdir: Path, env: dict[str, str], reuse: bool = False, tree: Path = ROOT, label: str = "this"
) -> dict[str, Any]:
    """One case with the `models` package of `tree`: this checkout's, or a baseline revision's (`label`)."""
    line: dict[str, Any] = {
        "bench": "models_incremental", "case": case, "recipients": CASES[case], "cpus": os.cpu_count(),
        "changed_share": SHARE, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "tree": label,
    }  # fmt: skip
    path = workdir / f"w_{case}.duckdb"
    if reuse and path.exists():  # a warehouse of the same case and seed from an interrupted run
        line.update(_run_child(["--child-reset", str(path)], env, tree))
        shutil.rmtree(workdir / f".{path.stem}_dbt", ignore_errors=True)
    else:
        line.update(_run_child(["--child-generate", str(path), str(CASES[case])], env, tree))
    line["warehouse_mb"] = round(path.stat().st_size / 2**20, 1)
    line["first_build"] = _build(path, "incremental", env, tree)
    line["touch_full"] = _run_child(["--child-touch", str(path), "1"], env, tree)
    line["full"] = _build(path, "full", env, tree)
    line["full"].update(_run_child(["--child-publish", str(path)], env, tree))  # the first: no BI file yet
    line["touch_incremental"] = _run_child(["--child-touch", str(path), "2"], env, tree)
    line["incremental"] = _build(path, "incremental", env, tree)
    line["incremental"].update(_run_child(["--child-publish", str(path)], env, tree))  # after the first
    full, incremental = line["full"], line["incremental"]
    line["ratio_wall"] = round(incremental["wall_s"] / full["wall_s"], 3)
    line["ratio_publish"] = round(incremental["publish_s"] / full["publish_s"], 3)
    line["ratio_cpu"] = round(incremental["cpu_s"] / full["cpu_s"], 3)
    line["ratio_peak"] = round(incremental["peak_rss_mb"] / full["peak_rss_mb"], 3)
    line["target_ratio"] = TARGET_RATIO
    line["load_avg_1m"] = [*full["load_avg_1m"], *incremental["load_avg_1m"]]
    for leftover in workdir.glob(f"{path.stem}*"):
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink()
    shutil.rmtree(workdir / f".{path.stem}_dbt", ignore_errors=True)
    return line


def save(lines: list[dict[str, Any]], command: str, out_dir: Path | None = None) -> None:
    """Put the run's lines before the stored ones (bench/results.json, `models_incremental/-`), each `this` named
    by the checkout's commit; RESULTS.md is written again. The stored analysis (`note`) is kept: it is written
    after reading a run."""
    from bench.results import BENCH_DIR, load_results, save_record

    out_dir = out_dir or BENCH_DIR
    stored = load_results(out_dir).get("other", {}).get("models_incremental/-", {})
    describe = ["git", "-C", str(ROOT), "describe", "--always", "--dirty"]
    commit = subprocess.run(describe, capture_output=True, text=True, check=True).stdout.strip()
    for line in lines:
        line["tree"] = commit if line["tree"] == "this" else line["tree"]
    date = lines[0]["date"]
    record = {
        **stored, "name": "models_incremental", "date": date,
        "command": "; ".join(filter(None, [f"{command} ({date})", stored.get("command")])),
        "result": [*lines, *stored.get("result", [])],
    }  # fmt: skip
    save_record(record, section="other", out_dir=out_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", choices=sorted(CASES), default=["1k", "1m", "10m"])
    parser.add_argument("--workdir", type=Path, help="where the warehouses go (default: a temporary directory)")
    parser.add_argument("--reuse", action="store_true", help="reuse a generated warehouse left in --workdir")
    parser.add_argument("--baseline", metavar="REV", help="also run each case with this git revision's dbt project")
    parser.add_argument("--no-save", action="store_true", help="print the lines only")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="models_incremental_"))
    workdir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    lines = []
    try:
        with runner_tree(args.baseline) if args.baseline else nullcontext() as base:
            for case in args.cases:
                lines.append(run_case(case, workdir, env, args.reuse))
                print(json.dumps(lines[-1]), flush=True)
                if base is not None:
                    lines.append(run_case(case, workdir, env, tree=base, label=args.baseline))
                    print(json.dumps(lines[-1]), flush=True)
    finally:
        if args.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    if not args.no_save:
        save(lines, " ".join(["python -m bench.models_incremental", *sys.argv[1:]]))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child-generate":
        child_generate(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-reset":
        _child_reset(sys.argv[2])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-touch":
        _child_touch(sys.argv[2], int(sys.argv[3]))
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-build":
        _child_build(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "--child-publish":
        child_publish(sys.argv[2])
    else:
        main()
