"""Run one sync (ours or the baseline) in this process and print one JSON line with its figures.

Started by `bench.sides.run_side` as `python -m bench.child`, so each side's peak RSS is its own
(`bench.peak`: VmHWM of this process: interpreter, imports and the sync). The job arrives on stdin as JSON
(the API key included, so it never shows in the process list).
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from bench.peak import peak_rss_mb

RESULT_PREFIX = "BENCH_CHILD_RESULT "


def _plain(value: Any) -> Any:
    """Best-effort JSON form of a report (dataclasses, dicts, numbers)."""
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (int, float, str, bool)) or value is None:
        return value
    return str(value)


def _sum_rows(report: Any) -> dict[str, int]:
    """Rows loaded per table from our SyncReport (summed over workspaces), whatever its exact shape."""
    totals: dict[str, int] = {}

    def add(rows: Any) -> None:
        if isinstance(rows, dict):
            for table, n in rows.items():
                if isinstance(n, (int, float)):
                    totals[str(table)] = totals.get(str(table), 0) + int(n)

    for name in ("rows", "rows_per_table", "rows_by_table"):
        if hasattr(report, name):
            value = getattr(report, name)
            add(value() if callable(value) else value)
            if totals:
                return totals
    for ws in getattr(report, "workspaces", None) or []:
        for name in ("rows", "rows_per_table", "rows_by_table"):
            if hasattr(ws, name):
                add(getattr(ws, name))
                break
    return totals


def _describe(exc: BaseException) -> str:
    """One line: the exception and, for wrapped ones (dlt's PipelineStepFailed), its root cause."""
    root = exc
    while (root.__cause__ or root.__context__) is not None:
        root = root.__cause__ or root.__context__  # type: ignore[assignment]
    text = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"
    if root is not exc:
        text += f" | root cause {type(root).__name__}: {(str(root).strip().splitlines() or [''])[0]}"
    return text[:400]


def run_ours(job: dict[str, Any]) -> tuple[dict[str, int], Any]:
    from pipelines.sync.edge import run_sync

    kwargs: dict[str, Any] = {
        "mode": job["mode"],
        "api_keys": [job["api_key"]],
        "base_url": job["base_url"],
        "duckdb_path": Path(job["duckdb_path"]),
        "progress": False,
        "rate_limit_per_minute": job.get("rate_limit_per_minute"),
        "pipelines_dir": job["pipelines_dir"],
    }
    if job.get("reply_body_cap") is not None:
        kwargs["reply_body_cap"] = job["reply_body_cap"]
    report = run_sync(**kwargs)
    return _sum_rows(report), report


def run_baseline(job: dict[str, Any]) -> tuple[dict[str, int], Any]:
    from bench.baseline import run_baseline as _run

    rows = _run(
        base_url=job["base_url"],
        api_key=job["api_key"],
        duckdb_path=Path(job["duckdb_path"]),
        pipelines_dir=Path(job["pipelines_dir"]),
    )
    return rows, None


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    job = json.loads(sys.stdin.read())
    runner = run_ours if job["side"] == "ours" else run_baseline
    started = time.perf_counter()
    out: dict[str, Any] = {"ok": True, "error": None, "rows": {}, "report": None}
    try:
        rows, report = runner(job)
        out["rows"] = rows
        if report is not None:
            out["report"] = _plain(report)
    except BaseException as exc:  # noqa: BLE001 - the parent reports any failure as data
        out["ok"] = False
        out["error"] = _describe(exc)
        traceback.print_exc(file=sys.stderr)
    out["wall_s"] = round(time.perf_counter() - started, 3)
    out["peak_mb"] = peak_rss_mb()
    print(RESULT_PREFIX + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
