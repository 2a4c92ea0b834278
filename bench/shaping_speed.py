"""Recipients typed for the load per second: this checkout against `--baseline REV`, in the same run.

What is timed is `pipelines.source.recipients_arrow.recipients_table`, the sync's per-row work on the one big
table (every field typed, checked and coerced by the rules of pipelines/source/typing_rules.py, then one arrow
table per 10,000 rows, as the sync batches them, or per `--batch` rows), on bench/local_speed.py's API-shaped
recipient pages. The baseline's `pipelines` package comes from git history (devtools.runner_parity.runner_tree).
Each side runs in its own child process, the two alternating for `--rounds`; a child reports the best of 3
passes over its rows. The run is stored under `shaping_speed/-` in bench/results.json (RESULTS.md, "Other
benchmarks"), or `shaping_speed/batch_N` for another `--batch`.

    .venv/bin/python -m bench.shaping_speed --baseline 79b4858 [--rows 200000] [--rounds 3] [--batch 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime
from typing import Any

from bench.local_speed import BATCH, recipient_pages
from bench.models_build import ROOT, run_child
from devtools.runner_parity import runner_tree


def _child(rows: int, batch: int) -> None:
    from pipelines.source.recipients_arrow import recipients_table

    synced = datetime.now(UTC)
    records = [(campaign, i, r) for campaign, page in recipient_pages(rows) for i, r in enumerate(page)]
    batches = [records[start : start + batch] for start in range(0, len(records), batch)]
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        typed = sum(recipients_table(rows_of, "ws", synced).num_rows for rows_of in batches)
        best = min(best, time.perf_counter() - started)
    print(json.dumps({"rows": typed, "seconds": round(best, 3), "rows_per_s": round(typed / best)}))


def run(baseline: str, rows: int, rounds: int, batch: int = BATCH) -> dict[str, Any]:
    env = dict(os.environ)
    sides: dict[str, list[int]] = {"this": [], baseline: []}
    with runner_tree(baseline, "pipelines") as tree:
        for _ in range(rounds):
            for side, first in (("this", ROOT), (baseline, tree)):
                result = run_child(
                    ["--child", str(rows), "--batch", str(batch)], env, first=first, module="bench.shaping_speed"
                )
                if result["rows"] != rows:
                    raise SystemExit(f"{side} typed {result['rows']} of {rows} recipients")
                sides[side].append(result["rows_per_s"])
    this, base = statistics.median(sides["this"]), statistics.median(sides[baseline])
    return {
        "bench": "shaping_speed", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows,
        "batch": batch, "rounds": rounds, "baseline": baseline, "rows_per_s": sides, "median_this": this,
        "median_baseline": base, "ratio_this_to_baseline": round(this / base, 2),
        "load_avg_1m": round(os.getloadavg()[0], 2),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", metavar="REV", help="the git revision to compare with (required)")
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=BATCH, help="recipients per call (the sync's batch: 10,000)")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--no-save", action="store_true", help="print the line only")
    args = parser.parse_args()
    if args.child is not None:
        _child(args.child, args.batch)
        return
    if not args.baseline:
        parser.error("--baseline REV is required: the revision whose recipients_table to compare with")
    line = run(args.baseline, args.rows, args.rounds, args.batch)
    print(json.dumps(line))
    if not args.no_save:
        from bench.results import save_record

        scale = "-" if args.batch == BATCH else f"batch_{args.batch}"  # the sync's batch keeps the first key
        save_record({"name": "shaping_speed", "scale": scale, "date": line["date"], "result": line}, section="other")


if __name__ == "__main__":
    main()
