"""What writing the old storage format costs: v1.0.0, which DuckDB 1.1+ and BI tools read, vs v2.0.0.

    python -m bench.storage_format [--recipients 1000000] [--repeats 3] [--workdir DIR]

One synthetic raw warehouse (devtools/synthetic.py) with the models built on it. Then, interleaved
`--repeats` times per format, in one run:
- the warehouse: a new file `ATTACH ... (STORAGE_VERSION v)` filled by `COPY FROM DATABASE` and checkpointed
  (what a warehouse we create is written in);
- the BI file: `models.publish.publish_bi` with `SOURCES__OUTREACH__DUCKDB_STORAGE_VERSION=v`.
Prints one JSON line per format and a ratio line (v1.0.0 over v2.0.0, medians): time and size.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb

FORMATS = ("v1.0.0", "v2.0.0")


def _copy_warehouse(source: Path, target: Path, version: str) -> float:
    """Seconds to copy every table of `source` into a new file in `version` and checkpoint it."""
    target.unlink(missing_ok=True)
    con = duckdb.connect()
    try:
        started = time.perf_counter()
        con.execute(f"attach '{source}' as src (read_only)")
        con.execute(f"attach '{target}' as dst (storage_version '{version}')")
        con.execute("copy from database src to dst")
        con.execute("checkpoint dst")
        return time.perf_counter() - started
    finally:
        con.close()


def _publish(warehouse: Path, version: str) -> tuple[float, int]:
    """Seconds to publish the BI file in `version`, and its size in bytes."""
    from models.publish import publish_bi

    os.environ["SOURCES__OUTREACH__DUCKDB_STORAGE_VERSION"] = version
    started = time.perf_counter()
    path, _rows = publish_bi(warehouse)
    return time.perf_counter() - started, path.stat().st_size


def measure(recipients: int, repeats: int, workdir: Path) -> list[dict[str, Any]]:
    from devtools.synthetic import make_raw_warehouse
    from models.build import build

    warehouse = make_raw_warehouse(workdir / "outreach.duckdb", recipients=recipients)
    report = build(warehouse, publish=False)
    if not report.passed:
        raise SystemExit("the models did not build on the synthetic warehouse")
    samples: dict[str, dict[str, list[float]]] = {
        v: {"wh_s": [], "wh_mb": [], "bi_s": [], "bi_mb": []} for v in FORMATS
    }
    for _ in range(repeats):
        for version in FORMATS:
            copy = workdir / f"copy_{version}.duckdb"
            samples[version]["wh_s"].append(_copy_warehouse(warehouse, copy, version))
            samples[version]["wh_mb"].append(copy.stat().st_size / 2**20)
            seconds, size = _publish(warehouse, version)
            samples[version]["bi_s"].append(seconds)
            samples[version]["bi_mb"].append(size / 2**20)
    rows: list[dict[str, Any]] = [
        {"format": v, "recipients": recipients, **{k: round(statistics.median(xs), 3) for k, xs in s.items()}}
        for v, s in samples.items()
    ]
    old, new = rows
    ratios = {k: round(old[k] / new[k], 3) for k in ("wh_s", "wh_mb", "bi_s", "bi_mb")}
    return [*rows, {"ratio": "v1.0.0 / v2.0.0", **ratios}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--recipients", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for line in measure(args.recipients, args.repeats, args.workdir or Path(tmp)):
            print(json.dumps(line))


if __name__ == "__main__":
    main()
