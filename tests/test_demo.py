"""`outreach demo` as a new user runs it: a subprocess, no Prefect server configured."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import psutil

ROOT = Path(__file__).resolve().parents[1]


def _prefect_servers() -> set[int]:
    """Pids of Prefect API server subprocesses running now."""
    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if "prefect.server.api.server:create_app" in cmdline:
            pids.add(proc.info["pid"])
    return pids


def _temp_homes() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("outreach-prefect-*")}


def test_demo_exits_0_prints_the_summary_and_leaves_no_process(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    servers_before, homes_before = _prefect_servers(), _temp_homes()
    warehouse = tmp_path / "data" / "outreach.duckdb"
    done = subprocess.run(
        [str(Path(sys.executable).with_name("outreach")), "demo", "--scale", "tiny", "--duckdb", str(warehouse)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout.lower()
    for needle in ("campaigns", "sends", "reply rate", "top variant", "mailbox", "full sync done",
                   "quick sync done", "duckdb", "sources__outreach__api_key"):
        assert needle in out, f"{needle!r} missing from the demo output:\n{done.stdout[-3000:]}"
    bi = warehouse.with_name("outreach_bi.duckdb")
    with duckdb.connect(str(bi), read_only=True) as con:
        assert con.execute("select count(*) from reporting.campaign_performance").fetchone()[0] > 0
    assert _prefect_servers() <= servers_before, "the demo left its Prefect server running"
    assert _temp_homes() <= homes_before, "the demo left its temporary Prefect home behind"
