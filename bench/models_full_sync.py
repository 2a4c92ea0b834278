"""`outreach models` after a sync that re-wrote a large share of the raw rows (a full sync re-writes all of them):
this checkout against `--baseline REV`, in one run.

A synthetic warehouse (devtools.synthetic) is generated once. Per share and per tree (this checkout's `models`,
then REV's from git history, each in child processes of its own): a copy of it is built once (the snapshot of a
last good build), then a sync's load is simulated (`synced_at` of that share of the recipients and replies
re-written, their values kept), then the build that is measured runs as `outreach models` runs it (no
`--full-refresh`): its wall time with start-up, whether it passed (the first line of its error when not), peak RSS
(VmHWM) and, where the tree says so, why it built from every row (models/change_share.py). The run is stored under
`models_full_sync/-` in bench/results.json (RESULTS.md, "Other benchmarks").

    .venv/bin/python -m bench.models_full_sync --baseline 9eab53d [--recipients 10000000] [--shares 0.25 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.models_build import ROOT, child_generate, process_age, run_child
from bench.peak import peak_rss_mb
from devtools.runner_parity import runner_tree

MODULE = "bench.models_full_sync"


def _child_touch(path: str, share: float) -> None:
    import duckdb

    con = duckdb.connect(path)
    try:
        for table in ("campaign_recipients", "replies"):
            con.execute(
                f"update outreach.{table} set synced_at = timestamptz '2026-03-03 01:00:00+00' "
                f"where hash(id || 'full') % 10000 < {round(share * 10000)}"
            )
    finally:
        con.close()
    print(json.dumps({"touched_share": share}))


def _child_build(path: str) -> None:
    from models.build import build
    from pipelines.core.errors import OutreachError
    from pipelines.core.root_cause import one_line

    load_before = os.getloadavg()[0]
    line: dict[str, Any] = {}
    try:
        report = build(path, publish=False)
        line.update(passed=report.passed, dbt_s=round(report.seconds, 2), every_row=getattr(report, "every_row", ""))
    except OutreachError as exc:
        line.update(passed=False, error=one_line(exc, 300))
    line.update(wall_s=round(process_age(), 2), peak_rss_mb=peak_rss_mb())
    line["load_avg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(line))


def run(baseline: str, recipients: int, shares: list[float], workdir: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    source = workdir / "generated.duckdb"
    line: dict[str, Any] = {
        "bench": "models_full_sync", "recipients": recipients, "baseline": baseline, "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": [],
    }  # fmt: skip
    line.update(run_child(["--child-generate", str(source), str(recipients)], env, module=MODULE))
    with runner_tree(baseline) as base:
        for share in shares:
            for label, tree in (("this", ROOT), (baseline, base)):
                case_dir = workdir / f"{label}_{share}"
                case_dir.mkdir()
                path = case_dir / "w.duckdb"
                shutil.copy(source, path)
                run_child(["--child-build", str(path)], env, tree, MODULE)  # the last good build's snapshot
                run_child(["--child-touch", str(path), str(share)], env, tree, MODULE)
                case = {"tree": label, "share": share, **run_child(["--child-build", str(path)], env, tree, MODULE)}
                line["cases"].append(case)
                print(json.dumps(case), flush=True)
                shutil.rmtree(case_dir)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    parser.add_argument("--recipients", type=int, default=10_000_000)
    parser.add_argument("--shares", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--workdir", type=Path, help="where the warehouses go (default: a temporary directory)")
    parser.add_argument("--no-save", action="store_true", help="print the line only")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="models_full_sync_", dir=args.workdir))
    try:
        line = run(args.baseline, args.recipients, args.shares, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(line))
    if not args.no_save:
        from bench.results import save_record

        save_record({"name": "models_full_sync", "date": line["date"], "result": line}, section="other")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child-generate"]:
        child_generate(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--child-touch"]:
        _child_touch(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1:2] == ["--child-build"]:
        _child_build(sys.argv[2])
    else:
        main()
