"""`outreach models` where an incremental build would rebuild every lead: after a sync that re-wrote a large share
of the raw rows (a full sync re-writes all of them), or with other vars than the last good build's (as after a new
version of the models). This checkout against `--baseline REV`, in one run.

A synthetic warehouse (devtools.synthetic) is generated once. Per case and per tree (this checkout's `models`,
then REV's from git history, each in child processes of its own): a copy of it is built once (the snapshot of a
last good build), then either a sync's load is simulated (`synced_at` of that share of the recipients and replies
re-written, their values kept) or the vars change (`--other-vars`: one reply class counted positive), then the
build that is measured runs as `outreach models` runs it (no `--full-refresh`): its wall time with start-up,
whether it passed (the first line of its error when not), peak RSS (VmHWM) and, where the tree says so, why it
built from every row (models/change_share.py). The run is stored under `models_full_sync/<its cases>` in
bench/results.json (RESULTS.md, "Other benchmarks").

    .venv/bin/python -m bench.models_full_sync --baseline 9eab53d [--recipients 10000000] [--shares 0.25 1]
        [--other-vars]
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
OTHER_VARS = {"extra_reply_classes": {"not_interested": "positive"}}


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


def _child_build(path: str, dbt_vars: str = "null") -> None:
    from models.build import build
    from pipelines.core.errors import OutreachError
    from pipelines.core.root_cause import one_line

    load_before = os.getloadavg()[0]
    line: dict[str, Any] = {}
    try:
        report = build(path, publish=False, dbt_vars=json.loads(dbt_vars))
        line.update(passed=report.passed, dbt_s=round(report.seconds, 2), every_row=getattr(report, "every_row", ""))
    except OutreachError as exc:
        line.update(passed=False, error=one_line(exc, 300))
    line.update(wall_s=round(process_age(), 2), peak_rss_mb=peak_rss_mb())
    line["load_avg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(line))


def run(baseline: str, recipients: int, cases: list[float | str], workdir: Path) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
    source = workdir / "generated.duckdb"
    line: dict[str, Any] = {
        "bench": "models_full_sync", "recipients": recipients, "baseline": baseline, "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": [],
    }  # fmt: skip
    line.update(run_child(["--child-generate", str(source), str(recipients)], env, module=MODULE))
    with runner_tree(baseline) as base:
        for change in cases:
            for label, tree in (("this", ROOT), (baseline, base)):
                case_dir = workdir / f"{label}_{change}"
                case_dir.mkdir()
                path = case_dir / "w.duckdb"
                shutil.copy(source, path)
                run_child(["--child-build", str(path)], env, tree, MODULE)  # the last good build's snapshot
                measured = ["--child-build", str(path)]
                if change == "other vars":
                    measured.append(json.dumps(OTHER_VARS))
                else:
                    run_child(["--child-touch", str(path), str(change)], env, tree, MODULE)
                case = {"tree": label, "change": change, **run_child(measured, env, tree, MODULE)}
                line["cases"].append(case)
                print(json.dumps(case), flush=True)
                shutil.rmtree(case_dir)
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="REV", required=True, help="the git revision to compare with")
    parser.add_argument("--recipients", type=int, default=10_000_000)
    parser.add_argument("--shares", type=float, nargs="*", default=[0.25, 1.0])
    parser.add_argument("--other-vars", action="store_true", help="also a build with other vars than the last")
    parser.add_argument("--workdir", type=Path, help="where the warehouses go (default: a temporary directory)")
    parser.add_argument("--no-save", action="store_true", help="print the line only")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="models_full_sync_", dir=args.workdir))
    try:
        cases = [*args.shares, *(["other vars"] if args.other_vars else [])]
        line = run(args.baseline, args.recipients, cases, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(line))
    if not args.no_save:
        from bench.results import save_record

        scale = ", ".join(str(case) for case in cases)  # a run of other cases is another record
        save_record({"name": "models_full_sync", "scale": scale, "date": line["date"], "result": line}, section="other")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child-generate"]:
        child_generate(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1:2] == ["--child-touch"]:
        _child_touch(sys.argv[2], float(sys.argv[3]))
    elif sys.argv[1:2] == ["--child-build"]:
        _child_build(*sys.argv[2:4])
    else:
        main()
