"""Local speed without a rate limit: recipients/s through dlt's extract, normalize and load into DuckDB.

The same synthetic recipient pages (the API's row shape, 200 rows a page, deterministic) go through
several loader paths, each in its own process (so each peak RSS is its own), all with the guarantees
ours needs: `merge` on `id` into the same DuckDB destination.

- `dlt_default`: pages as lists of dicts, dlt's default path (JSON lines, then INSERT VALUES);
  this is what the baseline does.
- `dicts_parquet`: the same dicts, `loader_file_format="parquet"` (dlt converts in normalize).
- `arrow_page`: one typed pyarrow table per 200-row page (ours' shaping, no batching).
- `ours_arrow_10k`: ours' path (pipelines/source/batch_source.py): typed pyarrow tables of 10,000 rows built by
  `pipelines.source.recipients_arrow.recipients_table`, written to parquet in extract, loaded by DuckDB through ours'
  pipeline (`pipelines.warehouse.destination.make_pipeline`: its DuckDB destination and settings).

Memory flatness: ours' path also runs on `--default-rows` rows, to put its peak beside the 1M figure.
The extract time includes building the synthetic dicts (the same work for every path).
The default path is measured on fewer rows (`--default-rows`): on these machines it runs at a few
thousand rows/s and its memory grows with the load, so 1M rows would take many minutes and GBs.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.peak import peak_rss_mb

logger = logging.getLogger(__name__)

PATHS = ("dlt_default", "dicts_parquet", "arrow_page", "ours_arrow_10k")
PAGE = 200
BATCH = 10_000
CAMPAIGNS = 500
STATUSES = ("pending", "active", "sent", "replied", "bounced", "unsubscribed", "completed")
RESULT_PREFIX = "LOCAL_SPEED_RESULT "
EPOCH = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _iso(i: int, offset: int) -> str:
    return (EPOCH + timedelta(minutes=(i * 7 + offset) % 500_000)).strftime("%Y-%m-%dT%H:%M:%SZ")


def recipient_pages(rows: int) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(campaign_id, page of recipient dicts as the API returns them), deterministic."""
    per_campaign = max(PAGE, rows // CAMPAIGNS)
    for start in range(0, rows, PAGE):
        campaign = f"00000000-0000-4000-8000-{start // per_campaign:012d}"
        page = []
        for i in range(start, min(start + PAGE, rows)):
            status = STATUSES[i % len(STATUSES)]
            sent = status != "pending"
            page.append(
                {
                    "id": f"{i:08x}-0000-4000-9000-{i:012d}",
                    "email": f"person{i}@example{i % 977}.com",
                    "first_name": f"First{i % 1000}",
                    "last_name": f"Last{i % 1733}",
                    "company": f"Company {i % 5003}",
                    "status": status,
                    "current_step": i % 4,
                    "last_sent_at": _iso(i, 0) if sent else None,
                    "opened_at": _iso(i, 30) if sent and i % 3 == 0 else None,
                    "clicked_at": _iso(i, 40) if sent and i % 11 == 0 else None,
                    "replied_at": _iso(i, 50) if status == "replied" else None,
                    "bounced_at": _iso(i, 5) if status == "bounced" else None,
                }
            )
        yield campaign, page


def _resource(path: str, rows: int) -> Any:
    import dlt

    from pipelines.source.recipients_arrow import recipients_table

    synced = datetime.now(UTC)

    @dlt.resource(name="campaign_recipients", write_disposition="merge", primary_key="id")
    def recipients() -> Iterator[Any]:
        batch: list[tuple[str, int, Any]] = []
        for campaign, page in recipient_pages(rows):
            if path in ("dlt_default", "dicts_parquet"):
                yield [{**r, "campaign_id": campaign, "workspace_id": "ws"} for r in page]
            elif path == "arrow_page":
                yield recipients_table([(campaign, i, r) for i, r in enumerate(page)], "ws", synced)
            else:
                batch.extend((campaign, i, r) for i, r in enumerate(page))
                if len(batch) >= BATCH:
                    yield recipients_table(batch, "ws", synced)
                    batch = []
        if batch:
            yield recipients_table(batch, "ws", synced)

    return recipients()


def _child(path: str, rows: int, workdir: Path) -> dict[str, Any]:
    import dlt

    workdir.mkdir(parents=True, exist_ok=True)
    if path == "ours_arrow_10k":  # ours' own pipeline: its destination, memory limit and file rotation
        from pipelines.warehouse.destination import make_pipeline, warehouse_target

        warehouse = warehouse_target(duckdb_path=workdir / f"{path}.duckdb", destination="duckdb")
        pipeline = make_pipeline(f"speed_{path}", warehouse, str(workdir / "pipelines"))
    else:
        pipeline = dlt.pipeline(
            pipeline_name=f"speed_{path}",
            pipelines_dir=str(workdir / "pipelines"),
            destination=dlt.destinations.duckdb(str(workdir / f"{path}.duckdb")),
            dataset_name="outreach",
        )
    fmt = "parquet" if path == "dicts_parquet" else None
    t0 = time.perf_counter()
    pipeline.extract(_resource(path, rows), loader_file_format=fmt)
    t1 = time.perf_counter()
    pipeline.normalize()
    t2 = time.perf_counter()
    pipeline.load(workers=1) if path == "ours_arrow_10k" else pipeline.load()  # ours loads one job at a time
    t3 = time.perf_counter()
    with pipeline.sql_client() as client:
        loaded = client.execute_sql("select count(*), count(distinct id) from campaign_recipients")[0]
    total = t3 - t0
    return {
        "path": path,
        "rows": rows,
        "rows_loaded": int(loaded[0]),
        "distinct_ids": int(loaded[1]),
        "extract_s": round(t1 - t0, 2),
        "normalize_s": round(t2 - t1, 2),
        "load_s": round(t3 - t2, 2),
        "total_s": round(total, 2),
        "rows_per_s": round(rows / total),
        "peak_mb": peak_rss_mb(),
    }


def run_path(path: str, rows: int, workdir: Path) -> dict[str, Any]:
    """Run one path in a fresh process; return its figures (or the error)."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.local_speed", "--child", path, "--rows", str(rows), "--dir", str(workdir)],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return dict(json.loads(line[len(RESULT_PREFIX) :]))
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    return {"path": path, "rows": rows, "error": f"exit {proc.returncode}: {tail[:300]}"}


def run_local_speed(*, rows: int, default_rows: int, workdir: Path) -> dict[str, Any]:
    """All paths; the record names the fastest path that kept every row exactly once (merge on id)."""
    started = time.perf_counter()
    results = []
    for path in PATHS:
        n = min(rows, default_rows) if path == "dlt_default" else rows
        logger.info("local_speed: %s with %d rows", path, n)
        result = run_path(path, n, workdir / path)
        logger.info("local_speed: %s", result)
        results.append(result)
    small = min(rows, default_rows)
    if rows > small:  # memory flatness: ours' path on fewer rows, beside its figure on `rows`
        results.append(run_path("ours_arrow_10k", small, workdir / "ours_arrow_10k_small"))
    good = [r for r in results if "error" not in r and r["rows_loaded"] == r["rows"] == r["distinct_ids"]]
    fastest = max(good, key=lambda r: r["rows_per_s"], default=None)
    ours_peaks = {r["rows"]: r["peak_mb"] for r in results if r["path"] == "ours_arrow_10k" and "error" not in r}
    default = next((r for r in results if r["path"] == "dlt_default"), None)
    return {
        "name": "local_speed",
        "scale": "-",
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_s": round(time.perf_counter() - started, 1),
        "result": {
            "paths": results,
            "fastest": fastest["path"] if fastest else None,
            "ours_peak_mb_by_rows": ours_peaks,
            "speedup_vs_default": (
                round(fastest["rows_per_s"] / default["rows_per_s"], 1)
                if fastest and default and "error" not in default
                else None
            ),
        },
    }


def main() -> int:
    p = argparse.ArgumentParser(prog="python -m bench.local_speed")
    p.add_argument("--child", choices=PATHS, help="run one path in this process")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--default-rows", type=int, default=100_000)
    p.add_argument("--dir", type=Path, default=Path("/tmp/outreach-local-speed"))
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    if args.child:
        print(RESULT_PREFIX + json.dumps(_child(args.child, args.rows, args.dir)), flush=True)
    else:
        print(json.dumps(run_local_speed(rows=args.rows, default_rows=args.default_rows, workdir=args.dir)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
