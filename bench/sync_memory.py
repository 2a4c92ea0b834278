"""Peak resident memory of a full sync of a `large` sandbox (1M recipients, rate limit off).

The sandbox runs out of process (SandboxProcess) and the sync runs in its own child process
(`python -m pipelines --mode full`), so the figure is the sync's alone: ru_maxrss of the child
from os.wait4. Linux carries the high-water mark across exec, so that figure is at least this
script's RSS when it started the child (`floor_mb`, printed; far below the sync's peak).
Prints one JSON line: peak_rss_mb, seconds, recipients, rows_per_s, requests, ok.

    .venv/bin/python bench/sync_memory.py [--scale large] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from bench.peak import peak_rss_mb

LIMIT_MB = 1024


def run(scale: str, workdir: Path) -> dict[str, object]:
    from sandbox.server import SandboxProcess

    sb = SandboxProcess(scale=scale, rate_limit=0)
    t0 = time.monotonic()
    sb.start()
    sandbox_start_s = time.monotonic() - t0
    try:
        keys: dict[str, str] = {}
        for k in sb.keys():
            if k["level"] == "rw" and k["role"] == "admin":
                keys.setdefault(k["workspace_id"], k["key"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("SOURCES__OUTREACH__")}
        env.update(SOURCES__OUTREACH__RATE_LIMIT_PER_MINUTE="0", SOURCES__OUTREACH__REPLY_BODY_CAP="500")
        db = workdir / "w.duckdb"
        args = [
            sys.executable,
            "-m",
            "pipelines",
            "--mode",
            "full",
            "--base-url",
            sb.base_url,
            "--duckdb",
            str(db),
            "--pipelines-dir",
            str(workdir / "pipelines"),
            "--spool",
            str(workdir / "no-spool"),
            "--no-progress",
        ]
        for key in keys.values():
            args += ["--api-key", key]
        sb.reset_metrics()
        floor_mb = peak_rss_mb()
        started = time.monotonic()
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(workdir))
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - started
        out = proc.stdout.read().decode() if proc.stdout else ""
        err = proc.stderr.read().decode() if proc.stderr else ""
        requests = sb.metrics()["requests"]
    finally:
        sb.stop()
    code = os.waitstatus_to_exitcode(status)
    con = duckdb.connect(str(db), read_only=True)
    try:
        recipients = con.execute("select count(*), count(distinct id) from outreach.campaign_recipients").fetchall()[0]
    finally:
        con.close()
    peak_mb = usage.ru_maxrss / 1024  # KiB on Linux
    return {
        "scenario": "sync_memory",
        "scale": scale,
        "exit_code": code,
        "peak_rss_mb": round(peak_mb, 1),
        "limit_mb": LIMIT_MB,
        "floor_mb": floor_mb,
        "seconds": round(seconds, 1),
        "sandbox_start_s": round(sandbox_start_s, 1),
        "recipients": recipients[0],
        "recipients_distinct": recipients[1],
        "rows_per_s": round(recipients[0] / seconds, 1) if seconds else None,
        "requests": requests,
        "path": "recipients as pyarrow tables -> parquet -> duckdb (dlt arrow path)",
        "ok": code == 0 and peak_mb < LIMIT_MB and recipients[0] == recipients[1],
        "stderr_tail": err[-500:] if code else "",
        "summary": out.splitlines()[:2],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="large")
    parser.add_argument("--keep", default=None, help="keep the warehouse and dlt dirs here")
    args = parser.parse_args()
    if args.keep:
        workdir = Path(args.keep)
        workdir.mkdir(parents=True, exist_ok=True)
        result = run(args.scale, workdir)
    else:
        with tempfile.TemporaryDirectory(prefix="sync_memory_") as tmp:
            result = run(args.scale, Path(tmp))
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
