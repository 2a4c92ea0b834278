"""The BI file and the warehouse open in the DuckDB readers BI tools ship.

A synced sandbox warehouse and its published BI file are opened read-only by `duckdb` 1.1.3 and
1.4.1 (their own cached virtual environments), by the project's own duckdb, and by DuckDB's Node
binding. Each must list the same tables with the same row counts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devtools.readers import all_readers

OUTREACH = str(Path(sys.executable).with_name("outreach"))


def _outreach(*args: str) -> None:
    proc = subprocess.run([OUTREACH, *args], capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sandbox.server import SandboxServer

    warehouse = tmp_path_factory.mktemp("readers") / "outreach.duckdb"
    with SandboxServer(scale="tiny", rate_limit=0) as sandbox:
        keys = [k["key"] for k in sandbox.keys() if k["level"] == "read"]
        _outreach("sync", "--mode", "full", "--no-progress", "--base-url", sandbox.base_url,
                  *(a for key in keys for a in ("--api-key", key)), "--duckdb", str(warehouse))  # fmt: skip
    _outreach("models", "--duckdb", str(warehouse))
    return warehouse


@pytest.mark.parametrize("which", ["warehouse", "bi"])
def test_every_reader_sees_the_same_tables_and_rows(synced: Path, which: str) -> None:
    path = synced if which == "warehouse" else synced.with_name("outreach_bi.duckdb")
    readers = all_readers()
    censuses: dict[str, Any] = {reader.name: reader.census(path) for reader in readers}
    reference = censuses["python duckdb (project)"]
    expected = "outreach.campaigns" if which == "warehouse" else "reporting.campaign_performance"
    assert reference.get(expected, 0) > 0, sorted(reference)
    if which == "bi":
        assert {name.split(".")[0] for name in reference} == {"reporting"}
    for name, census in censuses.items():
        assert census == reference, f"{name} disagrees on {path.name}"
    assert {r.name for r in readers} >= {"python duckdb 1.1.3", "python duckdb 1.4.1", "node @duckdb/node-api"}
