"""Ctrl-C during `outreach models`: exit 130 with one line saying what the build left, in every phase, whatever
became of the signal on its way up (dbt's runner catches it; DuckDB turns it into its own error mid-query)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from test_sync_support import query

from devtools.pg_copy import copy_raw_tables
from devtools.synthetic import make_raw_warehouse
from models.settings import bi_path_for, dbt_state_dir, resolve_target
from pipelines.warehouse.lock import hold
from tests.duckdb_sql import read_sql, run_sql

pytestmark = pytest.mark.timeout(300)

OUTREACH = Path(sys.executable).with_name("outreach")
DURING = (
    "error: models interrupted by SIGINT during the build: the BI file is unchanged, and so are the warehouse's "
    "reporting tables but the incremental ones dbt had renamed aside (`<name>__next`), which the next build puts "
    "back; run `outreach models` again"
)
BEFORE = (
    "error: models interrupted by SIGINT before the build finished: the published reporting tables and the BI file "
    "are unchanged; run `outreach models` again"
)
COPIES = (
    "error: models interrupted by SIGINT during the build: the published reporting tables are unchanged; the copies "
    "dbt was building beside them (`<name>__next`) stay until the next build replaces them; run `outreach models` "
    "again"
)
AFTER = (
    "error: models interrupted by SIGINT after the build passed: the reporting tables are the new ones, the BI file "
    "is still the previous build's; run `outreach models` again to publish it"
)


def _said(err: str) -> str:
    """What the command said on stderr, less its progress lines (one per 10 s off a terminal, if the build ran
    that long before the signal)."""
    return "\n".join(line for line in err.strip().splitlines() if not line.startswith("progress models: "))


def _rows(path: Path, table: str = "lead_engagement") -> list[tuple[Any, ...]]:
    return read_sql(path, f"select * from reporting.{table} order by all")


def _tables(path: Path) -> list[str]:
    return [r[0] for r in read_sql(path, "select table_name from duckdb_tables() where schema_name = 'reporting'")]


def _bounce_a_lead(path: Path) -> None:
    """A sync that found one recipient bounced: lead_engagement's and recipient_funnel's rows change."""
    run_sql(
        path,
        "update outreach.campaign_recipients set status = 'bounced', synced_at = '2030-01-01 00:00:01+00' "
        "where id = (select min(id) from outreach.campaign_recipients where status <> 'bounced')",
    )


def _models(path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(OUTREACH), "models", "--duckdb", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _signal_once_dbt_builds(proc: subprocess.Popen[str], log: Path, start: int) -> None:
    """SIGINT once dbt's log (from byte `start`) shows a model being built."""
    deadline = time.monotonic() + 120
    while not log.exists() or b"START sql" not in log.read_bytes()[start:]:
        assert proc.poll() is None and time.monotonic() < deadline, "the build ended before dbt started a model"
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)


@pytest.fixture(scope="module")
def built_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = make_raw_warehouse(tmp_path_factory.mktemp("built") / "w.duckdb", recipients=1000)
    done = _models(path)
    out, err = done.communicate(timeout=240)
    assert done.returncode == 0, err
    return path


@pytest.fixture
def published(built_once: Path, tmp_path: Path) -> Path:
    """A copy of one built warehouse, with its BI file and dbt state: one build for the module's tests."""
    shutil.copytree(built_once.parent, tmp_path / "published")
    return tmp_path / "published" / built_once.name


def test_ctrl_c_while_waiting_for_a_sync_exits_130_with_nothing_changed(tmp_path: Path) -> None:
    path = make_raw_warehouse(tmp_path / "w.duckdb", recipients=100)
    with hold(resolve_target(path), "sync"):  # a sync of this process holds the warehouse
        proc = _models(path)
        assert proc.stderr is not None
        waiting = proc.stderr.readline()
        assert waiting.startswith("waiting for the sync started at"), waiting
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (out, err)
    assert _said(err) == BEFORE, err
    assert not bi_path_for(path).exists()


def test_ctrl_c_while_dbt_builds_exits_130_and_says_what_it_left(published: Path) -> None:
    bi_file = bi_path_for(published)
    bi_before, funnel_before = bi_file.stat(), _rows(published, "recipient_funnel")
    _bounce_a_lead(published)
    log = dbt_state_dir(resolve_target(published)) / "logs" / "dbt.log"
    start = log.stat().st_size
    proc = _models(published)
    _signal_once_dbt_builds(proc, log, start)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, (out, err)
    assert _said(err) == DURING, err
    assert (bi_file.stat().st_ino, bi_file.stat().st_mtime_ns) == (bi_before.st_ino, bi_before.st_mtime_ns)
    assert _rows(published, "recipient_funnel") == funnel_before  # the bounce is not in it yet
    tables = _tables(published)
    assert "lead_engagement" not in tables and "lead_engagement__next" in tables, tables  # as the line says

    again = _models(published)
    out, err = again.communicate(timeout=240)
    assert again.returncode == 0, err
    assert "lead_engagement" in _tables(published)  # put back, then built with the bounce
    assert _rows(published, "recipient_funnel") != funnel_before
    assert _rows(bi_file, "recipient_funnel") == _rows(published, "recipient_funnel")  # and published it


def _stopped_before_publishing(published: Path, step: str) -> subprocess.CompletedProcess[str]:
    """`build` of `published` (with a bounce since its last build) in a process of its own, `step` (Python that
    defines `step()`) as its step between the swap and the BI file, in which a Ctrl-C comes: the build says so
    with the "after the build passed" line, the warehouse has the change, and the BI file is the old one."""
    bi_file = bi_path_for(published)
    bi_before, published_rows = bi_file.stat(), _rows(bi_file)
    _bounce_a_lead(published)
    script = textwrap.dedent(step) + textwrap.dedent(
        f"""
        from models.build import build

        try:
            build({str(published)!r}, before_publish=step)
        except KeyboardInterrupt as exc:
            print(type(exc).__name__, exc, sep=": ")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"BuildInterrupted: {AFTER.removeprefix('error: ')}", (done.stdout, done.stderr)
    assert _rows(published) != _rows(bi_file) == published_rows  # swapped in; not published
    assert (bi_file.stat().st_ino, bi_file.stat().st_mtime_ns) == (bi_before.st_ino, bi_before.st_mtime_ns)
    assert not [p.name for p in bi_file.parent.iterdir() if p.name.endswith(".tmp")]
    return done


def test_ctrl_c_that_duckdb_turns_into_its_error_after_the_swap_says_the_bi_file_is_the_old_one(
    published: Path,
) -> None:
    """The step between the swap and the BI file (the CLI's alert rules) runs a DuckDB query in the main thread when
    Ctrl-C comes: DuckDB interrupts it and raises RuntimeError('Query interrupted'), not KeyboardInterrupt."""
    _stopped_before_publishing(
        published,
        """
        import os, signal, threading, duckdb

        def step():
            threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
            # one thread: DuckDB checks for a signal between the tasks the calling thread runs, and range() is one
            # task, which a worker thread could run to its end while this one waits
            con = duckdb.connect(config={"threads": 1})
            con.execute("select count(*) from range(100000000000) t(x) where x % 7 = 3").fetchall()
        """,
    )


def test_ctrl_c_lost_on_its_way_up_still_stops_the_build_before_the_bi_file(published: Path) -> None:
    """Python only prints a KeyboardInterrupt raised in a `__del__` or a weakref callback, and goes on: the signal
    came in the main thread while it collected an object. The build notes the signal itself, and stops at its next
    stage instead of publishing as though nothing had come."""
    done = _stopped_before_publishing(
        published,
        """
        import os, signal, time

        class Collected:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # Python's handler runs here, and its KeyboardInterrupt is lost

        def step():
            Collected()
        """,
    )
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def test_ctrl_c_while_dbt_builds_on_postgres_leaves_every_published_table_as_it_was(
    pg_server: Any, tmp_path: Path
) -> None:
    """PostgreSQL builds copies beside the published tables and swaps them in one transaction at the end: a Ctrl-C
    while dbt builds leaves every reporting table as the last build published it, as the line says."""
    dsn = pg_server.create_database("models_pg_interrupt")
    copy_raw_tables(make_raw_warehouse(tmp_path / "w.duckdb", recipients=1000), dsn)
    env = {**os.environ, "DESTINATION__POSTGRES__CREDENTIALS": dsn.replace("postgres@", "postgres:pw@")}
    command = [str(OUTREACH), "models", "--destination", "postgres"]

    def models() -> subprocess.Popen[str]:  # dbt's state (and log) under tmp_path/data/.postgres_dbt
        return subprocess.Popen(
            command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def published() -> dict[str, list[tuple[Any, ...]]]:
        tables = query(dsn, "select table_name from information_schema.tables where table_schema = 'reporting' "
                       "and table_type = 'BASE TABLE'")  # fmt: skip
        return {t: sorted(query(dsn, f"select * from reporting.{t}"), key=repr) for (t,) in sorted(tables)}

    first = models()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    before = published()
    with psycopg2.connect(dsn) as con, con.cursor() as cur:  # the block commits
        cur.execute(
            "update outreach.campaign_recipients set status = 'bounced', synced_at = '2030-01-01 00:00:01+00' "
            "where id = (select min(id) from outreach.campaign_recipients where status <> 'bounced')"
        )
        assert cur.rowcount == 1
    log = tmp_path / "data" / ".postgres_dbt" / "logs" / "dbt.log"
    proc = models()
    _signal_once_dbt_builds(proc, log, log.stat().st_size)
    out, err = proc.communicate(timeout=60)

    assert proc.returncode == 130, (out, err)
    assert _said(err) == COPIES, err
    after = published()
    copies = sorted(set(after) - set(before))
    assert copies == ["lead_engagement__next", "lead_timeline__next"]  # as the line says
    assert {t: after[t] for t in before} == before  # every published table, every row

    again = models()
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    rebuilt = published()
    assert sorted(rebuilt) == sorted(before)  # the copies replaced, then swapped in
    assert rebuilt["recipient_funnel"] != before["recipient_funnel"]  # the bounce is in it now
