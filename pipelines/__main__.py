"""Ad-hoc runs for people who use dlt directly: ``python -m pipelines [--mode full] ...``.

Same as ``outreach sync``; settings come from dlt config ([sources.outreach] in .dlt/,
SOURCES__OUTREACH__*). Each workspace is a dlt pipeline named ``outreach_<workspace_id>``,
so ``dlt pipeline outreach_<workspace_id> info`` (or ``show``) works afterwards.
"""

from __future__ import annotations

import argparse
import logging
import sys

from pipelines.errors import OutreachError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipelines", description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["quick", "full"], default="quick")
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--api-key", action="append", default=None, help="repeat once per workspace")
    parser.add_argument("--duckdb", default=None, help="warehouse file (default data/outreach.duckdb)")
    parser.add_argument("--spool", default=None, help="webhook spool to load first (default data/spool/)")
    parser.add_argument("--pipelines-dir", default=None, help="dlt working dir (default: dlt's, ~/.dlt/pipelines)")
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from pipelines.sync import run_sync

    try:
        report = run_sync(
            mode=args.mode,
            api_keys=args.api_key,
            base_url=args.base_url,
            duckdb_path=args.duckdb,
            spool_dir=args.spool,
            pipelines_dir=args.pipelines_dir,
            progress=not args.no_progress,
        )
    except OutreachError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
