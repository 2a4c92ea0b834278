"""The alert incidents at an agency's count of findings: this checkout against `--baseline REV`, in one run.

What is timed is what every `outreach models` runs after its build once the rules have found their findings:
`alerts.store.reconcile` (the incidents opened, updated, resolved) and `alerts.outbox.deliver` (the notifications
owed; here with no target, so each counts as delivered). N findings (a reply waiting per lead is one each: 5,450 on
the 10M-recipient synthetic warehouse) are opened on an empty incident table, then seen again unchanged, then
resolved (their rule evaluated, finding nothing), then reopened. Each phase is one call of each, timed on DuckDB
(an empty warehouse file) and on PostgreSQL (an empty database on a server this bench starts, devtools.pgserver).
The baseline's `alerts` package comes from git history (devtools.runner_parity.runner_tree); each side runs in its
own child process, the two alternating for `--rounds`, and each phase keeps its median. What each phase returned
(transitions, notifications delivered, owed) must be the same on both sides. The run is stored under `alerts_scale/-` in
bench/results.json (RESULTS.md, "Other benchmarks").

    .venv/bin/python -m bench.alerts_scale --baseline ecbbd77 [--findings 5000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.models_build import ROOT, run_child
from devtools.runner_parity import runner_tree

PHASES = ("opened", "seen", "resolved", "reopened")
RULE = "positive_reply_waiting"


def _child(engine: str, where: str, findings: int) -> None:
    from alerts.db import connect
    from alerts.finding import Finding
    from alerts.outbox import deliver, targets
    from alerts.settings import resolve_alert_settings
    from alerts.store import reconcile
    from models.settings import resolve_target

    os.environ.pop("PREFECT_API_URL", None)  # no Prefect API: a notification with no target counts as delivered
    settings = resolve_alert_settings()
    if targets(settings):
        raise SystemExit("the bench needs no alert target: unset [alerts] targets")

    if engine == "postgres":
        os.environ["DESTINATION__POSTGRES__CREDENTIALS"] = where
        warehouse = resolve_target(None, "postgres")
    else:
        import duckdb

        duckdb.connect(where).close()
        warehouse = resolve_target(Path(where))
    found = [
        Finding(RULE, f"ws{i % 100}", "reply", f"c{i % 500}:lead{i}@example.com", f"lead{i}@example.com",
                float(30 + i % 90), 15.0, detail=f"a positive reply waits {30 + i % 90} minutes")
        for i in range(findings)
    ]  # fmt: skip
    now = datetime(2026, 3, 3, tzinfo=UTC)
    seconds: dict[str, float] = {}
    transitions: dict[str, list[int]] = {}
    with connect(warehouse) as db:
        for step, phase in enumerate(PHASES):
            started = time.perf_counter()
            changed = reconcile(db, [] if phase == "resolved" else found, [RULE], now + timedelta(minutes=step))
            delivered = deliver(db, settings)
            seconds[phase] = round(time.perf_counter() - started, 3)
            transitions[phase] = [len(changed), len(delivered.sent), delivered.owed]
    print(json.dumps({"seconds": seconds, "transitions": transitions}))


def run(baseline: str, findings: int, rounds: int) -> dict[str, Any]:
    from devtools.pgserver import PostgresServer

    env = dict(os.environ)
    sides = ("this", baseline)
    seconds: dict[str, dict[str, dict[str, list[float]]]] = {}
    transitions: dict[str, dict[str, Any]] = {}
    with runner_tree(baseline, "alerts") as tree, PostgresServer() as pg, tempfile.TemporaryDirectory() as tmp:
        for round_no in range(rounds):
            for side, first in zip(sides, (ROOT, tree), strict=True):
                for engine in ("duckdb", "postgres"):
                    name = f"r{round_no}_{'this' if side == 'this' else 'base'}"
                    where = str(Path(tmp) / f"{name}.duckdb") if engine == "duckdb" else pg.create_database(name)
                    out = run_child(["--child", engine, where, str(findings)], env, first=first,
                                    module="bench.alerts_scale")  # fmt: skip
                    per_phase = seconds.setdefault(engine, {}).setdefault(side, {})
                    for phase, value in out["seconds"].items():
                        per_phase.setdefault(phase, []).append(value)
                    transitions.setdefault(engine, {})[side] = out["transitions"]
    for engine, by_side in transitions.items():
        if by_side["this"] != by_side[baseline]:
            raise SystemExit(f"{engine}: the transitions or notifications differ: {by_side}")
    medians = {
        engine: {side: {phase: statistics.median(v) for phase, v in phases.items()} for side, phases in by_side.items()}
        for engine, by_side in seconds.items()
    }
    return {
        "bench": "alerts_scale", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "findings": findings,
        "rounds": rounds, "baseline": baseline, "seconds": seconds, "median_s": medians,
        "transitions": {engine: by_side["this"] for engine, by_side in transitions.items()},
        "ratio_this_to_baseline": {
            engine: {p: round(m["this"][p] / m[baseline][p], 3) for p in PHASES} for engine, m in medians.items()
        },
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="REV", help="the git revision to compare with (required)")
    parser.add_argument("--findings", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", nargs=3, metavar=("ENGINE", "WHERE", "N"), help=argparse.SUPPRESS)
    parser.add_argument("--no-save", action="store_true", help="print the line only")
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child[0], args.child[1], int(args.child[2]))
        return
    if not args.baseline:
        parser.error("--baseline REV is required: the revision whose alerts package to compare with")
    line = run(args.baseline, args.findings, args.rounds)
    print(json.dumps(line))
    if not args.no_save:
        from bench.results import save_record

        save_record({"name": "alerts_scale", "date": line["date"], "result": line}, section="other")


if __name__ == "__main__":
    main()
