"""What the tests of `outreach demo` share: a new user's environment, and the processes and files a demo run can
leave behind."""

from __future__ import annotations

import os
from pathlib import Path

import psutil


def prefect_servers(tmp: Path) -> set[int]:
    """Pids of the Prefect API servers running now that an `outreach` command given TMPDIR=tmp started (their
    PREFECT_HOME is a temporary `outreach-prefect-*` there): not the session's own, nor another test's or user's."""
    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        servers = ("flows.prefect_server", "prefect server start", "prefect.server.api.server:create_app")
        if not any(server in cmdline for server in servers):  # ours (flows/prefect_api.py), or Prefect's own
            continue
        try:
            home = proc.environ().get("PREFECT_HOME", "")
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue
        if Path(home).parent == tmp and Path(home).name.startswith("outreach-prefect-"):
            pids.add(proc.info["pid"])
    return pids


def temp_homes(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("outreach-prefect-*")}


def user_env() -> dict[str, str]:
    """A new user's shell: no Prefect or outreach settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "SOURCES__", "DESTINATION__"))}
