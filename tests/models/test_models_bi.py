"""A BI tool holding the BI file open read-only never blocks a build, and keeps its snapshot.

The reader is a separate process (as a BI tool is): DuckDB caches open databases per
process, so a "new connection" in the same process would reuse the old file.
On Linux, os.replace over an open file is fine: the open handle keeps the old inode.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

from devtools.synthetic import make_raw_warehouse
from models.build import build
from models.settings import bi_path_for

READER = textwrap.dedent(
    """
    import sys, duckdb
    con = duckdb.connect(sys.argv[1], read_only=True)
    query = "select count(*), min(campaign_name) from reporting.campaign_performance"
    print(con.execute(query).fetchall()[0], flush=True)
    sys.stdin.readline()  # hold the file open until told to read again
    print(con.execute(query).fetchall()[0], flush=True)
    """
)

QUERY = "select count(*), min(campaign_name) from reporting.campaign_performance"


def _fresh_read(bi: Path) -> str:
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import duckdb; print(duckdb.connect({str(bi)!r}, read_only=True).execute({QUERY!r}).fetchall()[0])",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


def test_open_reader_keeps_snapshot_while_build_publishes(tmp_path: Path) -> None:
    warehouse = make_raw_warehouse(tmp_path / "w.duckdb", recipients=1500)
    build(warehouse)
    bi = bi_path_for(warehouse)
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(bi)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdout is not None and reader.stdin is not None
        first = reader.stdout.readline().strip()
        assert first == "(6, 'Campaign 1')"

        con = duckdb.connect(str(warehouse))
        con.execute("update outreach.campaigns set name = 'AAA renamed' where name = 'Campaign 1'")
        con.close()
        inode_before = bi.stat().st_ino
        report = build(warehouse)  # must not wait for or fail on the open reader
        assert report.bi_path == bi and bi.stat().st_ino != inode_before

        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == first, "the open handle keeps its snapshot"
        assert _fresh_read(bi) == "(6, 'AAA renamed')", "a new connection sees the new data"
        assert reader.wait(timeout=30) == 0
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert not list(tmp_path.glob(".w_bi.duckdb.*")), "no temporary file left behind"
