"""Ad-hoc runs for people who use dlt directly: ``python -m pipelines [--mode full] ...``.

Same engine as ``outreach sync``; settings come from dlt config ([sources.outreach] in .dlt/,
SOURCES__OUTREACH__*), flags win. Workspaces are loaded in batches, each a dlt pipeline named after its
first workspace, ``outreach_<workspace_id>``, so ``dlt pipeline outreach_<workspace_id> info`` (or
``show``) works afterwards (the summary names each workspace's pipeline).
"""

from __future__ import annotations

import argparse
import logging
import sys

from pipelines.core.deadline import SyncInterrupted
from pipelines.core.errors import OutreachError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mode", choices=["quick", "full"], default="quick")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--api-key", action="append", default=None, help="repeat once per workspace")
    parser.add_argument("--duckdb", default=None, help="warehouse file (default data/outreach.duckdb)")
    parser.add_argument("--destination", default=None, help="duckdb (default) or postgres")
    parser.add_argument(
        "--spool", default=None, help="webhook spool to load first (default: the warehouse's, <stem>_spool/)"
    )
    parser.add_argument("--pipelines-dir", default=None, help="dlt working dir (default: the warehouse's own)")
    parser.add_argument("--workers", type=int, default=None, help="threads reading the API at once")
    parser.add_argument(
        "--batch-size", type=int, default=None, help="workspaces per dlt load (default 25 full, 100 quick)"
    )
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    from pipelines.sync.edge import run_sync

    try:  # resolves the settings once (after the fast checks of what was given), then `pipelines.sync.run.sync`
        report = run_sync(
            mode=args.mode,
            api_keys=args.api_key,
            base_url=args.base_url,
            duckdb_path=args.duckdb,
            destination=args.destination,
            spool_dir=args.spool,
            pipelines_dir=args.pipelines_dir,
            workers=args.workers,
            batch_size=args.batch_size,
            progress=not args.no_progress,
            notify=lambda line: print(line, file=sys.stderr, flush=True),
        )
    except SyncInterrupted as exc:
        if exc.report is not None:
            print(exc.report.summary())
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OutreachError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
